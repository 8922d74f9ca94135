import { addressPolicy, classifyAddress, isAddressAllowed } from "../../../lib/address-policy";
import { parseRetryAfter } from "../../../lib/safe-fetch";

describe("classifyAddress", () => {
  it.each([
    ["8.8.8.8", "public"],
    ["2606:4700:4700::1111", "public"],
    ["127.0.0.1", "loopback"],
    ["127.255.0.9", "loopback"],
    ["::1", "loopback"],
    ["[::1]", "loopback"],
    ["::ffff:127.0.0.1", "loopback"],
    ["::ffff:7f00:1", "loopback"],
    ["10.1.2.3", "private"],
    ["172.20.0.1", "private"],
    ["192.168.1.1", "private"],
    ["100.64.0.1", "private"],
    ["169.254.10.10", "private"],
    ["fe80::1%eth0", "private"],
    ["fd12:3456::1", "private"],
    ["::ffff:10.0.0.1", "private"],
    ["64:ff9b::a00:1", "private"],
    ["2002:c0a8:101::1", "private"],
    ["0.0.0.0", "forbidden"],
    ["::", "forbidden"],
    ["169.254.169.254", "forbidden"],
    ["::ffff:169.254.169.254", "forbidden"],
    ["fd00:ec2::254", "forbidden"],
    ["224.0.0.1", "forbidden"],
    ["255.255.255.255", "forbidden"],
    ["not-an-ip", "forbidden"],
  ])("%s is %s", (address, expected) => {
    expect(classifyAddress(address)).toBe(expected);
  });
});

describe("isAddressAllowed", () => {
  it("opens loopback only with ALLOW_LOOPBACK_TARGETS=true", () => {
    expect(isAddressAllowed("127.0.0.1", addressPolicy({}))).toBe(false);
    expect(isAddressAllowed("::1", addressPolicy({ ALLOW_LOOPBACK_TARGETS: "1" }))).toBe(false);
    expect(isAddressAllowed("127.0.0.1", addressPolicy({ ALLOW_LOOPBACK_TARGETS: "true" }))).toBe(true);
    expect(isAddressAllowed("::ffff:127.0.0.1", addressPolicy({ ALLOW_LOOPBACK_TARGETS: "true" }))).toBe(true);
  });

  it("opens private ranges only through ALLOWED_PRIVATE_CIDRS, never forbidden addresses", () => {
    const policy = addressPolicy({ ALLOWED_PRIVATE_CIDRS: "10.20.0.0/16, fd00:abcd::/32,192.168.5.7", ALLOW_LOOPBACK_TARGETS: "true" });
    expect(isAddressAllowed("10.20.3.4", policy)).toBe(true);
    expect(isAddressAllowed("::ffff:10.20.3.4", policy)).toBe(true);
    expect(isAddressAllowed("10.21.0.1", policy)).toBe(false);
    expect(isAddressAllowed("fd00:abcd::5", policy)).toBe(true);
    expect(isAddressAllowed("192.168.5.7", policy)).toBe(true);
    expect(isAddressAllowed("192.168.5.8", policy)).toBe(false);
    expect(isAddressAllowed("169.254.169.254", addressPolicy({ ALLOWED_PRIVATE_CIDRS: "169.254.0.0/16" }))).toBe(false);
    expect(isAddressAllowed("0.0.0.0", addressPolicy({ ALLOWED_PRIVATE_CIDRS: "0.0.0.0/0", ALLOW_LOOPBACK_TARGETS: "true" }))).toBe(false);
    expect(isAddressAllowed("8.8.8.8", addressPolicy({}))).toBe(true);
  });

  it("rejects a malformed allow-list instead of ignoring it", () => {
    expect(() => addressPolicy({ ALLOWED_PRIVATE_CIDRS: "10.0.0.0/33" })).toThrow(/ALLOWED_PRIVATE_CIDRS/);
  });
});

describe("parseRetryAfter", () => {
  it("reads delta-seconds and HTTP dates", () => {
    const now = Date.parse("2026-11-23T10:00:00Z");
    expect(parseRetryAfter("120", now)).toBe(120_000);
    expect(parseRetryAfter("Mon, 23 Nov 2026 10:00:05 GMT", now)).toBe(5_000);
    expect(parseRetryAfter("Mon, 23 Nov 2026 09:00:00 GMT", now)).toBe(0);
    expect(parseRetryAfter("soon", now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
  });
});
