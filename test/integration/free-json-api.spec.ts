import fc from "fast-check";
import { MAX_BODY_DEPTH, MAX_JSON_DEPTH } from "../../lib/free-json";
import { mergeConfiguration } from "../../services/agents/rules";
import { startCluster, type Cluster } from "../harness/cluster";
import { apiClient, signup, type Api } from "../harness/http";
import { scaled } from "../harness/wait";

/**
 * Any JSON a client may send through a free-form field comes back exactly: generated values (dotted, `$`,
 * empty and unicode keys, nested arrays, large and tiny floats, nulls, booleans, within the depth limit) go
 * through every free-form field of the REST API (create, read, update, read) and of team push and pull, over
 * NATS. What the contract refuses (a NUL in a key, nesting past the limit) is a 422 naming the field.
 */

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Runs per field; each run is a few requests, so the whole file stays well under a minute. */
const RUNS = 20;
const SEED = 20261124;

/** Keys MongoDB field names cannot hold, and ordinary ones. */
const key = fc
  .oneof(
    fc.constantFrom("", ".", "a.b", "api.base_url", "lone \ud800", "$", "$set", "$where", "$ref", "..", "a.", ".a", "x", "name", "constructor", "prototype", "toString", "hasOwnProperty"),
    fc.string({ maxLength: 8 }),
    fc.string({ unit: "grapheme", maxLength: 6 }),
    fc.tuple(fc.constantFrom("$", ".", "a."), fc.string({ maxLength: 6 })).map(([head, tail]) => head + tail),
  )
  .filter((k) => !k.includes("\0"));

/** Numbers JSON carries exactly, including the extremes of doubles. */
const number = fc.oneof(
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER, 2 ** 53 + 2, 1e21, 1.7976931348623157e308, 5e-324, -2.5e-308, 0.1),
);

const scalar = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  number,
  fc.string({ maxLength: 12 }),
  fc.string({ unit: "grapheme", maxLength: 8 }),
  fc.constantFrom("\ud800", "a\udfffb", "\u2028", "tab\tnew\nline"),
);

/** Nested values a few levels deep (the limit itself is covered by an example below). */
const { value } = fc.letrec<{ value: Json; array: Json[]; object: Record<string, Json> }>((tie) => ({
  value: fc.oneof({ depthSize: "small", maxDepth: 5 }, scalar, tie("array"), tie("object")),
  array: fc.array(tie("value"), { maxLength: 4 }),
  object: fc.dictionary(key, tie("value"), { maxKeys: 5 }),
}));
const object = fc.dictionary(key, value, { maxKeys: 6 });

/** What the server received: the value as the JSON text the client sent (e.g. -0 travels as 0). */
const wire = <T>(v: T): T => JSON.parse(JSON.stringify(v));

describe("free-form JSON through the REST API and team push/pull", () => {
  let cluster: Cluster;
  let api: Api;
  let token: string;
  let agentId: number;
  let serial = 0;
  const unique = (prefix: string) => `${prefix}-${++serial}`;

  beforeAll(async () => {
    cluster = await startCluster({
      database: "free_json_api",
      nodes: [["gateway"], ["users", "api-keys", "agents", "tools", "traits", "teams", "tasks", "entities"]],
    });
    api = apiClient(cluster.baseUrl);
    token = (await signup(api, "free-json")).token;
    agentId = (await call("POST", "/agents", { name: "Collector" })).body.id;
  }, scaled(60_000));
  afterAll(() => cluster?.stop());

  const call = (method: string, path: string, body?: unknown) => api(method, `/api/v1${path}`, { token, body });
  /** A write that must succeed; its response body. */
  const ok = async (method: string, path: string, body?: unknown) => {
    const res = await call(method, path, body);
    if (res.status >= 300) throw new Error(`${method} ${path} -> ${res.status} ${JSON.stringify(res.body).slice(0, 500)}`);
    return res.body;
  };
  const check = (property: fc.IAsyncProperty<any>) => fc.assert(property, { numRuns: RUNS, seed: SEED, endOnFailure: true });

  it("answers the issue's example: a dotted configuration key on a tool", async () => {
    const res = await call("POST", "/tools", { name: "t", identifier: "x", configuration: { "api.base_url": "https://x" } });
    expect(res.status).toBe(201);
    expect((await call("GET", `/tools/${res.body.id}`)).body.configuration).toEqual({ "api.base_url": "https://x" });
  });

  it("tool configuration", () =>
    check(
      fc.asyncProperty(object, object, async (first, second) => {
        const created = await ok("POST", "/tools", { name: "Tool", identifier: unique("tool"), configuration: first });
        expect(created.configuration).toEqual(wire(first));
        expect((await ok("GET", `/tools/${created.id}`)).configuration).toEqual(wire(first));
        await ok("PUT", `/tools/${created.id}`, { configuration: second });
        expect((await ok("GET", `/tools/${created.id}`)).configuration).toEqual(wire(second));
      }),
    ));

  it("agent configuration (deep-merged on update; null removes a key)", () => {
    const configuration = object.filter((c) => !("chat_ui" in c));
    return check(
      fc.asyncProperty(configuration, configuration, async (first, second) => {
        const created = await ok("POST", "/agents", { name: unique("Agent"), configuration: first });
        const expected = mergeConfiguration({}, wire(first));
        expect((await ok("GET", `/agents/${created.id}`)).configuration).toEqual(expected);
        await ok("PUT", `/agents/${created.id}`, { configuration: second });
        expect((await ok("GET", `/agents/${created.id}`)).configuration).toEqual(mergeConfiguration(expected, wire(second)));
      }),
    );
  });

  it("team configuration", () =>
    check(
      fc.asyncProperty(object, object, async (first, second) => {
        const created = await ok("POST", "/teams", { name: unique("Team"), configuration: first });
        expect((await ok("GET", `/teams/${created.id}`)).configuration).toEqual(wire(first));
        await ok("PUT", `/teams/${created.id}`, { configuration: second });
        expect((await ok("GET", `/teams/${created.id}`)).configuration).toEqual(wire(second));
      }),
    ));

  it("task input and result", () =>
    check(
      fc.asyncProperty(object, object, fc.option(object), async (input, nextInput, result) => {
        const created = await ok("POST", "/tasks", { title: "Task", input, result });
        expect(await ok("GET", `/tasks/${created.id}`)).toMatchObject({ input: wire(input), result: wire(result) });
        await ok("PUT", `/tasks/${created.id}`, { input: nextInput, result: input });
        expect(await ok("GET", `/tasks/${created.id}`)).toMatchObject({ input: wire(nextInput), result: wire(input) });
      }),
    ));

  it("scheduled task template input", () =>
    check(
      fc.asyncProperty(object, object, async (first, second) => {
        const created = await ok("POST", "/scheduled-tasks", { name: "Schedule", schedule: "0 9 * * 1", enabled: false, task_template: { title: "Run", input: first } });
        expect((await ok("GET", `/scheduled-tasks/${created.id}`)).task_template).toEqual({ title: "Run", input: wire(first) });
        await ok("PUT", `/scheduled-tasks/${created.id}`, { task_template: { title: "Run", input: second } });
        expect((await ok("GET", `/scheduled-tasks/${created.id}`)).task_template).toEqual({ title: "Run", input: wire(second) });
      }),
    ));

  it("collected data attributes and provenance", () => {
    const attributeName = key.filter((k) => k.length >= 1 && k.length <= 100);
    const attributes = fc.dictionary(attributeName, value, { maxKeys: 6 });
    const provenance = fc.dictionary(attributeName, fc.string({ maxLength: 20 }), { maxKeys: 3 });
    return check(
      fc.asyncProperty(attributes, attributes, provenance, async (first, second, quotes) => {
        const cited = Object.fromEntries(Object.entries(quotes).map(([k, quote]) => [k, { quote }]));
        const created = await ok("POST", "/entities", { agent_id: agentId, entity_type_name: "Lead", attributes: first, provenance: cited });
        const read = await ok("GET", `/entities/${created.id}`);
        expect(read.attributes).toEqual(wire(first));
        // A provenance citing nothing is none: null, as the interface shows a provenance-free record.
        const kept = Object.entries(quotes).map(([k, quote]) => [k, { message_id: null, quote }]);
        expect(read.provenance).toEqual(kept.length ? wire(Object.fromEntries(kept)) : null);
        await ok("PUT", `/entities/${created.id}`, { attributes: second });
        expect((await ok("GET", `/entities/${created.id}`)).attributes).toEqual(wire(second));
      }),
    );
  });

  it("team push then pull, and a second push updating every part: agent configuration, event config, tool config, knowledge processing", () => {
    const configuration = object.filter((c) => !("chat_ui" in c));
    const parts = fc.record({ configuration, eventConfig: object, toolConfig: object, processing: object });
    return check(
      fc.asyncProperty(parts, parts, async (first, second) => {
        const name = unique("Pushed team");
        const document = (p: typeof first) => ({
          name,
          agents: [{ name: `${name} agent`, model: "gpt-4o-mini", configuration: p.configuration, events: [{ type: "webhook", config: p.eventConfig }] }],
          tools: [{ name: `${name} tool`, type: "function", config: p.toolConfig }],
          knowledge: [{ name: "Docs", type: "url", source: "https://docs.example.com", processing: p.processing }],
        });
        const team = await ok("POST", "/teams/push", document(first));
        const pulled = await ok("GET", `/teams/${team.identifier}/pull`);
        const configured = mergeConfiguration({}, wire(first.configuration));
        expect(pulled.agents[0].configuration).toEqual(configured);
        expect(pulled.agents[0].events).toEqual([{ type: "webhook", config: wire(first.eventConfig) }]);
        expect(pulled.tools[0].config).toEqual(wire(first.toolConfig));
        expect(pulled.knowledge[0].processing).toEqual(wire(first.processing));
        // The second push updates the same records ($set through the unit of work); configuration deep-merges.
        await ok("POST", "/teams/push", document(second));
        const updated = await ok("GET", `/teams/${team.identifier}/pull`);
        expect(updated.agents[0].configuration).toEqual(mergeConfiguration(configured, wire(second.configuration)));
        expect(updated.agents[0].events).toEqual([{ type: "webhook", config: wire(second.eventConfig) }]);
        expect(updated.tools[0].config).toEqual(wire(second.toolConfig));
        expect(updated.knowledge[0].processing).toEqual(wire(second.processing));
      }),
    );
  });

  describe("what the contract refuses answers 422 naming the field", () => {
    const nest = (levels: number): Json => (levels === 0 ? 1 : { [`k.${levels}`]: nest(levels - 1) });
    const detail = (res: { body: { detail: { loc: unknown[]; msg: string; type: string }[] } }) => res.body.detail;

    it(`keeps a value nested exactly ${MAX_JSON_DEPTH} levels deep`, async () => {
      const deepest = nest(MAX_JSON_DEPTH);
      const created = await ok("POST", "/tools", { name: "Deep", identifier: unique("deep"), configuration: deepest });
      expect((await ok("GET", `/tools/${created.id}`)).configuration).toEqual(deepest);
    });

    it("refuses one level more, and a NUL in a key, with the field's loc", async () => {
      const tooDeep = await call("POST", "/tools", { name: "Deep", identifier: unique("deep"), configuration: nest(MAX_JSON_DEPTH + 1) });
      expect(tooDeep.status).toBe(422);
      expect(detail(tooDeep)).toEqual([
        { loc: ["body", "configuration"], msg: expect.stringMatching(/^Nested deeper than 64 levels of objects and arrays \(at \["k\.65"\]/), type: "jsonDepth" },
      ]);
      const nul = await call("POST", "/tasks", { title: "Task", input: { rows: [[{ "a\u0000b": 1 }]] } });
      expect(nul.status).toBe(422);
      expect(detail(nul)).toEqual([{ loc: ["body", "input"], msg: 'Keys must not contain the NUL character (\\u0000) (at rows[0][0]["a\\u0000b"])', type: "jsonKey" }]);
      const proto = await api("POST", "/api/v1/entities", { token, rawBody: `{"agent_id":${agentId},"entity_type_name":"Lead","attributes":{"a":{"__proto__":{"x":1}}}}` });
      expect(detail(proto)).toEqual([{ loc: ["body", "attributes"], msg: 'Keys must not be "__proto__" (at a.__proto__)', type: "jsonKey" }]);
      const pushed = await call("POST", "/teams/push", { name: "Nul", tools: [{ name: "t", type: "function", config: { "\u0000": 1 } }] });
      expect(pushed.status).toBe(400);
      expect(pushed.body.errors).toEqual([{ loc: ["body", "tools", 0, "config"], msg: expect.stringContaining("NUL"), type: "jsonKey" }]);
    });

    it("refuses a body nested 1,000 and 100,000 levels deep anywhere with 422, never 500", async () => {
      for (const levels of [1_000, 100_000]) {
        const rawBody = `{"name":"t","identifier":"deep-body","unknown":${"[".repeat(levels)}${"]".repeat(levels)}}`;
        const res = await api("POST", "/api/v1/tools", { token, rawBody });
        expect(res.status).toBe(422);
        expect(detail(res)).toEqual([{ loc: ["body", "unknown"], msg: expect.stringContaining(`Nested deeper than ${MAX_BODY_DEPTH} levels`), type: "jsonDepth" }]);
      }
      const agent = await call("POST", "/agents", { name: "Deep", configuration: nest(1_000) as Record<string, Json> });
      expect(agent.status).toBe(422);
    });
  });
});
