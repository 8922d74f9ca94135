import { isSupportedTypesenseVersion } from "../../../lib/search/typesense/engine";

describe("supported Typesense versions", () => {
  it.each(["0.24.1", "v0.24.1", "0.25.0", "0.25.2", "26.0", "27.1", "29.0.rc1", "30.1", "nightly"])("accepts %s", (version) => {
    expect(isSupportedTypesenseVersion(version)).toBe(true);
  });

  it.each(["0.24.0", "0.23.1", "0.22.2", "0.9.0"])("refuses %s", (version) => {
    expect(isSupportedTypesenseVersion(version)).toBe(false);
  });
});
