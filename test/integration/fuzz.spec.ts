import { routedCluster, startCluster, type Cluster } from "../harness/cluster";
import { prng } from "../harness/fixture-site";
import { apiClient, signup, type Api } from "../harness/http";
import { scaled } from "../harness/wait";

/**
 * Bad input never gets a 500: every route the gateway serves (read from its alias table, so new routes are
 * covered without listing them here) receives malformed JSON and a bounded number of seeded random requests
 * built from its action's params schema (wrong types, out-of-range numbers, junk path ids, unknown keys), and
 * must answer below 500 with an error body whenever it refuses. Everything goes to the loopback gateway.
 */

interface RouteInfo {
  actionName: string;
  fullPath: string;
  methods: string;
  action?: { params?: Record<string, unknown> };
}

/** Requests per route and method; with ~100 routes this stays around 1,500 requests. */
const REQUESTS_PER_ROUTE = 12;
const SEED = 20261123;

/** JSON nested `levels` deep: past every limit the API documents (64 in a free-form field, 100 for a body). */
const nested = (levels: number): unknown => JSON.parse(`${"[".repeat(levels)}${"]".repeat(levels)}`);
const JUNK: unknown[] = [null, true, false, 0, -1, 1.5, 1e21, "", "x", "x".repeat(5000), "<script>", "../../etc/passwd", [], [1, "a"], {}, { $gt: "" }, nested(1000)];
const BY_TYPE: Record<string, unknown[]> = {
  number: [1, 2, 3, 0, -7, 2.5, "12", "abc", 1e15, Number.MAX_SAFE_INTEGER],
  string: ["", "a", "Name with spaces", "x".repeat(1200), 42, "ünïcødé ✓", "https://127.0.0.1:1/x", "UPPER", "a,b"],
  boolean: [true, false, "true", "yes", 1, 0],
  array: [[], [1, 2], ["a", "b"], [{}], [null], "not-an-array"],
  object: [{}, { a: 1 }, { nested: { deep: [1] } }, [], "x", { "a.b": { $c: [[1, 2]], "": null } }, { "\u0000": 1 }, { deep: nested(70) }],
  date: ["2026-01-01T00:00:00Z", "yesterday", 0],
  email: ["a@example.com", "not-an-email", ""],
  enum: ["asc", "desc", "name", "new", "archived", "pending", "completed", "PUBLIC", "PRIVATE", "nope"],
};
const PATH_VALUES = ["1", "2", "3", "0", "-1", "abc", "99999999999", "1.5", "%20", "x".repeat(300), "support-bot"];

function ruleType(rule: unknown): string {
  if (typeof rule === "string") return rule.split("|")[0]!;
  if (Array.isArray(rule)) return ruleType(rule[0]);
  if (rule && typeof rule === "object" && "type" in rule) return String((rule as { type: unknown }).type);
  return "any";
}

function pick<T>(rand: () => number, items: readonly T[]): T {
  return items[Math.floor(rand() * items.length)]!;
}

/** A value for one param: usually of its declared type (in and out of range), sometimes anything at all. */
function valueFor(rand: () => number, rule: unknown): unknown {
  const pool = BY_TYPE[ruleType(rule)];
  return pool && rand() < 0.75 ? pick(rand, pool) : pick(rand, JUNK);
}

function randomRequest(rand: () => number, route: RouteInfo, method: string) {
  const params = Object.entries(route.action?.params ?? {}).filter(([key]) => !key.startsWith("$"));
  const pathKeys = new Set([...route.fullPath.matchAll(/:(\w+)/g)].map((m) => m[1]!));
  const path = route.fullPath.replace(/:(\w+)/g, () => encodeURIComponent(pick(rand, PATH_VALUES)));
  const fields: Record<string, unknown> = {};
  for (const [key, rule] of params) if (!pathKeys.has(key) && rand() < 0.5) fields[key] = valueFor(rand, rule);
  if (rand() < 0.3) fields[`unknown_${Math.floor(rand() * 100)}`] = pick(rand, JUNK);
  if (method === "GET" || method === "DELETE") {
    const query = new URLSearchParams();
    for (const [key, value] of Object.entries(fields)) query.set(key, typeof value === "string" ? value : JSON.stringify(value));
    const qs = query.toString();
    return { path: qs ? `${path}?${qs}` : path };
  }
  // Mostly an object body; sometimes a JSON value that is not an object at all.
  return { path, body: rand() < 0.85 ? fields : pick(rand, JUNK) };
}

describe("fuzzing every route: bad input is a 4xx with an error body, never a 500", () => {
  let cluster: Cluster;
  let api: Api;
  let token: string;
  let routes: RouteInfo[];

  beforeAll(async () => {
    cluster = await startCluster(routedCluster("fuzz", "search", "knowledge", "webhooks"));
    api = apiClient(cluster.baseUrl);
    // Users 1 to 3 belong to other accounts: junk path ids then never delete the fuzzing user itself (its
    // token would end with it), and reach another account's records.
    for (let i = 0; i < 3; i++) await signup(api, "neighbour");
    token = (await signup(api, "fuzz")).token;
    // A few real records, so small ids in paths reach existing rows as well as missing ones.
    const agent = await api("POST", "/api/v1/agents", { token, body: { name: "Support Bot" } });
    await api("POST", "/api/v1/tools", { token, body: { name: "Tool", identifier: "tool" } });
    await api("POST", "/api/v1/traits", { token, body: { name: "Trait" } });
    await api("POST", "/api/v1/teams", { token, body: { name: "Team" } });
    await api("POST", "/api/v1/tasks", { token, body: { title: "Task" } });
    await api("POST", "/api/v1/entities", { token, body: { agent_id: agent.body.id, entity_type_name: "Lead", attributes: { a: 1 } } });
    await api("POST", "/api/v1/webhook-subscriptions", { token, body: { url: "http://127.0.0.1:9/hook" } });
    // Routes that call an action (the /mcp route is a raw handler, covered by the MCP tests).
    // The gateway's own alias table (its listing action is not served) and each routed action's params.
    const gatewayBroker = cluster.brokers[0]!;
    const gateway = gatewayBroker.getLocalService("gateway") as unknown as { aliases: { method: string; fullPath: string; action?: string }[] };
    const actions = new Map(gatewayBroker.registry.getActionList({}).map((a) => [a.name, a.action as RouteInfo["action"]]));
    routes = gateway.aliases
      .filter((alias) => alias.action)
      .map((alias) => ({ actionName: alias.action!, fullPath: alias.fullPath, methods: alias.method, action: actions.get(alias.action!) }));
  }, scaled(60_000));
  afterAll(async () => {
    await cluster?.stop();
  });

  it("covers the routes of every service", () => {
    const services = new Set(routes.map((r) => r.actionName.split(".")[0]));
    for (const name of ["users", "api-keys", "agents", "tools", "traits", "teams", "entities", "tasks", "knowledge", "webhooks"]) {
      expect(services).toContain(name);
    }
  });

  it("answers random and malformed requests below 500, with a detail body on every refusal", async () => {
    const rand = prng(SEED);
    const failures: string[] = [];
    const statuses = new Map<number, number>();
    const check = (label: string, res: { status: number; body: unknown }) => {
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      if (res.status >= 500) failures.push(`${label} -> ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
      else if (res.status >= 400 && !(res.body && typeof res.body === "object" && "detail" in res.body)) {
        failures.push(`${label} -> ${res.status} without detail: ${JSON.stringify(res.body).slice(0, 200)}`);
      }
    };
    for (const route of routes) {
      const methods = route.methods === "*" ? ["GET"] : route.methods.split(",");
      for (const method of methods) {
        if (method === "POST" || method === "PUT" || method === "PATCH") {
          const path = route.fullPath.replace(/:(\w+)/g, "1");
          check(`${method} ${path} malformed JSON`, await api(method, path, { token, rawBody: '{"name": "x",' }));
        }
        for (let i = 0; i < REQUESTS_PER_ROUTE; i++) {
          const req = randomRequest(rand, route, method);
          check(`${method} ${req.path.slice(0, 120)} ${JSON.stringify(req.body ?? null).slice(0, 120)}`, await api(method, req.path, { token, body: req.body }));
        }
      }
    }
    expect(failures).toEqual([]);
    // The requests reached handlers (successes and refusals of every kind), not just the validator.
    const sent = [...statuses.values()].reduce((a, b) => a + b, 0);
    expect(sent).toBeGreaterThan(routes.length * REQUESTS_PER_ROUTE * 0.9);
    for (const status of [200, 404, 422]) expect(statuses.get(status)).toBeGreaterThan(0);
    console.log(`[fuzz] ${routes.length} routes, ${sent} requests: ${[...statuses].sort((a, b) => a[0] - b[0]).map(([k, v]) => `${k}x${v}`).join(" ")}`);
  }, scaled(180_000));
});
