import { loadMcpConfig } from "../../../services/mcp/config";

describe("loadMcpConfig", () => {
  const saved = { port: process.env.MCP_PORT, host: process.env.MCP_HOST };
  afterEach(() => {
    for (const [name, value] of [["MCP_PORT", saved.port], ["MCP_HOST", saved.host]] as const) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });

  it("listens on 0.0.0.0:3100 by default", () => {
    delete process.env.MCP_PORT;
    delete process.env.MCP_HOST;
    expect(loadMcpConfig()).toEqual({ port: 3100, host: "0.0.0.0" });
  });

  it("reads MCP_PORT and MCP_HOST and refuses a port that is not one", () => {
    process.env.MCP_PORT = "4200";
    process.env.MCP_HOST = "127.0.0.1";
    expect(loadMcpConfig()).toEqual({ port: 4200, host: "127.0.0.1" });
    for (const bad of ["http", "70000", "-1", "31.5"]) {
      process.env.MCP_PORT = bad;
      expect(() => loadMcpConfig()).toThrow(/MCP_PORT/);
    }
  });
});
