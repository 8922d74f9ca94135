import mongoose from "mongoose";
import { startCluster, type Cluster } from "../harness/cluster";
import { apiClient, signup, type Api } from "../harness/http";
import { occupyNextIds, PLACEHOLDER_ACCOUNT } from "../harness/ids";
import { until } from "../harness/wait";

/** Deterministic PRNG so a failing random document can be reproduced from its seed. */
function prng(seed: number) {
  let s = seed >>> 0;
  return () => ((s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32);
}

function randomDocument(seed: number) {
  const rnd = prng(seed);
  const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)]!;
  const word = () => pick(["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa"]);
  const traits = Array.from({ length: 1 + Math.floor(rnd() * 3) }, (_, i) => ({
    name: `Trait ${seed}-${i}`,
    category: pick(["general", "communication", "expertise"]),
    description: `about ${word()}`,
    tags: [word()],
  }));
  const agents = Array.from({ length: 1 + Math.floor(rnd() * 4) }, (_, i) => ({
    name: `Agent ${seed}-${i} ${word()}`,
    description: `desc ${word()}`,
    system_prompt: `You are ${word()}`,
    model: pick(["gpt-4o", "claude-sonnet", "llama-3"]),
    temperature: Math.round(rnd() * 20) / 10,
    ...(rnd() > 0.5 ? { max_tokens: 100 + Math.floor(rnd() * 1000) } : {}),
    ...(rnd() > 0.5 ? { image_url: `https://img.example.com/${word()}.png` } : {}),
    ...(rnd() > 0.5 ? { publication: { access_level: pick(["public", "private"]) as string, chat_uri: `${word()}-${seed}-${i}` } } : {}),
    configuration: { chat_ui: { greeting: `hi ${word()}`, suggested_prompts: [{ title: word(), text: word(), icon: "star" }] } },
    events: rnd() > 0.5 ? [{ type: "github.push", description: "on push", enabled: true, config: { repositories: [word()] } }] : [],
    traits: traits.filter(() => rnd() > 0.4).map((t) => t.name),
    delegations: rnd() > 0.5 ? [{ to_agent: `Agent ${seed}-0`, condition: "when asked", description: "handoff" }] : [],
  }));
  const tools = Array.from({ length: Math.floor(rnd() * 3) }, (_, i) => ({
    name: `Tool ${seed}-${i}`,
    description: `tool ${word()}`,
    type: pick(["mcp", "external", "function"]),
    config: { command: word(), args: [word()], timeout: 30 },
  }));
  const knowledge = rnd() > 0.5 ? [{ name: `Docs ${seed}`, type: "website", source: "https://docs.example.com", processing: { chunk_size: 1000 } }] : [];
  return { name: `Team ${seed}`, description: `random team ${seed}`, agents, tools, knowledge, traits };
}

describe("teams, access levels and configuration push/pull over NATS", () => {
  let cluster: Cluster;
  let api: Api;
  let token: string;
  let accountId: number;
  let other: string;
  /** team.* events as a subscriber on its own node receives them. */
  const announced: { event: string; data: { id: number; agent_ids?: number[] } }[] = [];
  const listener = {
    name: "team-listener",
    events: {
      "team.*"(ctx: { eventName: string; params: { data: { id: number; agent_ids?: number[] } } }) {
        announced.push({ event: ctx.eventName, data: ctx.params.data });
      },
    },
  };

  beforeAll(async () => {
    cluster = await startCluster({ database: "teams", extraServices: [listener] });
    api = apiClient(cluster.baseUrl);
    const owner = await signup(api, "teams");
    token = owner.token;
    accountId = owner.user.account_id;
    other = (await signup(api, "stranger")).token;
  });
  afterAll(() => cluster?.stop());

  /** `t` null sends no credentials. */
  const call = (method: string, path: string, body?: unknown, t: string | null = token, headers?: Record<string, string>) =>
    api(method, `/api/v1${path}`, { token: t ?? undefined, body, headers });

  describe("team CRUD and access levels", () => {
    it("creates a PRIVATE team by default with agents resolved; the password is never shown", async () => {
      const agent = (await call("POST", "/agents", { name: "Helper" })).body;
      const res = await call("POST", "/teams", { name: "Core Team", agent_ids: [agent.id] });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ name: "Core Team", identifier: "core-team", access_level: "PRIVATE", agent_ids: [agent.id] });
      expect(res.body.agents[0]).toMatchObject({ id: agent.id, name: "Helper", identifier: "helper", model: expect.any(String), temperature: 0.7, tools: [], traits: [], knowledge_sources: [] });
      expect(res.body).not.toHaveProperty("access_password");
      expect(res.body).not.toHaveProperty("access_password_hash");
    });

    it("answers 400 for a missing or short password on PASSWORD_PROTECTED, and 422 for unknown agents", async () => {
      expect((await call("POST", "/teams", { name: "Locked", access_level: "PASSWORD_PROTECTED" })).status).toBe(400);
      expect((await call("POST", "/teams", { name: "Locked", access_level: "PASSWORD_PROTECTED", access_password: "short" })).status).toBe(400);
      const unknown = await call("POST", "/teams", { name: "Ghosts", agent_ids: [987654] });
      expect(unknown.status).toBe(422);
      expect(unknown.body.detail[0].loc).toEqual(["body", "agent_ids", 0]);
    });

    it("PUBLIC teams need no auth; PASSWORD_PROTECTED need X-Access-Password (wrong: 403); PRIVATE need same-account credentials", async () => {
      const pub = (await call("POST", "/teams", { name: "Open Team", access_level: "PUBLIC" })).body;
      const locked = (await call("POST", "/teams", { name: "Locked Team", access_level: "PASSWORD_PROTECTED", access_password: "sesame-open" })).body;
      const priv = (await call("POST", "/teams", { name: "Secret Team" })).body;

      expect((await call("GET", `/teams/${pub.id}`, undefined, null)).status).toBe(200);
      expect((await call("GET", "/teams/open-team", undefined, null)).status).toBe(200);

      expect((await call("GET", `/teams/${locked.id}`, undefined, null)).status).toBe(401);
      expect((await call("GET", `/teams/${locked.id}`, undefined, null, { "x-access-password": "wrong-password" })).status).toBe(403);
      const unlocked = await call("GET", "/teams/locked-team", undefined, null, { "x-access-password": "sesame-open" });
      expect(unlocked.status).toBe(200);
      expect(unlocked.body.id).toBe(locked.id);

      expect((await call("GET", `/teams/${priv.id}`, undefined, null)).status).toBe(401);
      expect((await call("GET", `/teams/${priv.id}`, undefined, other)).status).toBe(403);
      expect((await call("GET", "/teams/secret-team", undefined, other)).status).toBe(404);
      expect((await call("GET", "/teams/secret-team")).status).toBe(200);
    });

    it("updates only provided fields, requires a password when switching to PASSWORD_PROTECTED, deletes with 204", async () => {
      const team = (await call("POST", "/teams", { name: "Mutable", description: "keep me", configuration: { a: 1 } })).body;
      const renamed = await call("PUT", `/teams/${team.id}`, { name: "Mutable Renamed" });
      expect(renamed.body).toMatchObject({ name: "Mutable Renamed", description: "keep me", configuration: { a: 1 }, identifier: "mutable" });
      expect((await call("PUT", "/teams/mutable", { access_level: "PASSWORD_PROTECTED" })).status).toBe(400);
      expect((await call("PUT", "/teams/mutable", { access_level: "PASSWORD_PROTECTED", access_password: "long-enough" })).status).toBe(200);
      expect((await call("PUT", `/teams/${team.id}`, { name: "x" }, other)).status).toBe(403);
      expect((await call("DELETE", "/teams/mutable")).status).toBe(204);
      expect((await call("GET", `/teams/${team.id}`)).status).toBe(404);
    });

    it("lists teams paginated and sorted", async () => {
      const res = await call("GET", "/teams?sort_by=name&sort_order=asc&limit=2");
      expect(res.status).toBe(200);
      expect(res.body.pagination).toMatchObject({ limit: 2, has_more: true });
      expect((await call("GET", "/teams?limit=0")).status).toBe(422);
      expect((await call("GET", "/teams", undefined, other)).body.data).toEqual([]);
    });

    it("a deleted agent leaves its teams, each change announced as team.updated", async () => {
      const agent = (await call("POST", "/agents", { name: "Leaver" })).body;
      const stayer = (await call("POST", "/agents", { name: "Stayer" })).body;
      const team = (await call("POST", "/teams", { name: "Left Behind", agent_ids: [agent.id, stayer.id] })).body;
      expect((await call("DELETE", `/agents/${agent.id}`)).status).toBe(204);
      const updated = await until(async () => announced.find((e) => e.event === "team.updated" && e.data.id === team.id), Boolean, 10_000);
      expect(updated!.data.agent_ids).toEqual([stayer.id]);
      const after = await call("GET", `/teams/${team.id}`);
      expect(after.body.agent_ids).toEqual([stayer.id]);
    });
  });

  describe("push", () => {
    const base = {
      name: "Support Squad",
      description: "Handles support",
      traits: [{ name: "Empathetic", category: "personality", description: "Cares", tags: ["soft"] }, { name: "Terse" }],
      tools: [{ name: "Ticket Lookup", type: "external", config: { command: "tickets", args: ["--json"], timeout: 10 } }],
      knowledge: [{ name: "Help Center", type: "website", source: "https://help.example.com", processing: { chunk_size: 800, overlap: 100 } }],
      agents: [
        {
          name: "Triage",
          system_prompt: "Route tickets.",
          model: "gpt-4o",
          traits: ["Empathetic"],
          image_url: "https://img.example.com/triage.png",
          publication: { access_level: "public", chat_uri: "triage" },
          configuration: { chat_ui: { empty_title: "Hi", greeting: "Hello", suggested_prompts: [{ title: "Status", text: "Where is my order?" }] } },
          events: [{ type: "email.received", description: "new mail", enabled: true, config: {} }],
          delegations: [{ to_agent: "Resolver", condition: "complex", description: "escalate" }],
        },
        { name: "Resolver", model: "gpt-4o-mini", traits: ["terse"] },
      ],
      overrides: { global: { max_tokens: 512 }, agent_specific: { Resolver: { system_prompt_suffix: "Always cite the ticket id.", temperature: 0.2 } } },
    };

    it("creates the team, agents, tools and traits in one go, applying overrides", async () => {
      const res = await call("POST", "/teams/push", base);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ name: "Support Squad", identifier: "support-squad", description: "Handles support" });
      const [triage, resolver] = res.body.agents;
      expect(triage).toMatchObject({ name: "Triage", instructions: "Route tickets.", max_tokens: 512, temperature: 0.7, image_url: "https://img.example.com/triage.png" });
      expect(triage.traits.map((t: { name: string }) => t.name)).toEqual(["Empathetic"]);
      expect(triage.tools.map((t: { name: string }) => t.name)).toEqual(["Ticket Lookup"]);
      expect(triage.publication).toMatchObject({ access_level: "public", chat_uri: "triage" });
      expect(resolver).toMatchObject({ instructions: "Always cite the ticket id.", temperature: 0.2, max_tokens: 512 });
      expect(resolver.traits.map((t: { identifier: string }) => t.identifier)).toEqual(["terse"]);
      const tools = await call("GET", "/tools");
      expect(tools.body.data.find((t: { name: string }) => t.name === "Ticket Lookup")).toMatchObject({ tool_type: "external", configuration: { command: "tickets" } });
    });

    it("POST /teams/config is the same operation; pushing again updates instead of duplicating", async () => {
      const before = (await call("GET", "/agents?limit=200")).body.pagination.total;
      const res = await call("POST", "/teams/config", base);
      expect(res.status).toBe(200);
      expect((await call("GET", "/agents?limit=200")).body.pagination.total).toBe(before);
    });

    it("applies the merge rules to an existing agent", async () => {
      const res = await call("POST", "/teams/push", {
        name: "Support Squad",
        agents: [
          {
            name: "Triage",
            model: "gpt-4o",
            image_url: "https://img.example.com/new.png",
            publication: { access_level: "public", domain: undefined, chat_uri: "triage-2" },
            configuration: { chat_ui: { greeting: null, empty_description: "Ask us" } },
          },
        ],
      });
      expect(res.status).toBe(200);
      const triage = res.body.agents[0];
      expect(triage.configuration.chat_ui).toEqual({ empty_title: "Hi", empty_description: "Ask us", suggested_prompts: [{ title: "Status", text: "Where is my order?" }] });
      expect(triage.image_url).toBe("https://img.example.com/new.png");
      expect(triage.publication).toMatchObject({ access_level: "public", chat_uri: "triage-2" });
      // Not provided: kept.
      expect(triage.events).toEqual(base.agents[0]!.events);
      expect(triage.delegations).toEqual(base.agents[0]!.delegations);
      expect(triage.instructions).toBe("Route tickets.");
      expect(triage.traits.map((t: { name: string }) => t.name)).toEqual(["Empathetic"]);
    });

    it("clears an agent's image, description, system prompt and max_tokens given as null, and keeps them when absent", async () => {
      const doc = { name: "Null Team", agents: [{ name: "Nully", model: "m", description: "d", system_prompt: "p", max_tokens: 100, image_url: "https://img.example.com/n.png" }] };
      expect((await call("POST", "/teams/push", doc)).status).toBe(200);
      const kept = await call("POST", "/teams/push", { name: "Null Team", agents: [{ name: "Nully", model: "m" }] });
      expect(kept.body.agents[0]).toMatchObject({ description: "d", instructions: "p", max_tokens: 100, image_url: "https://img.example.com/n.png" });
      const cleared = await call("POST", "/teams/push", { name: "Null Team", agents: [{ name: "Nully", model: "m", description: null, system_prompt: null, max_tokens: null, image_url: null }] });
      expect(cleared.status).toBe(200);
      expect(cleared.body.agents[0]).toMatchObject({ description: null, instructions: null, max_tokens: null, image_url: null });
      expect((await call("GET", "/teams/null-team/pull")).body.agents[0]).toEqual({ name: "Nully", model: "m", temperature: 0.7, configuration: {}, events: [], traits: [], delegations: [] });
    });

    it("applies filters: excluded components and trait filters leave agents out", async () => {
      const res = await call("POST", "/teams/push", {
        name: "Filtered Team",
        traits: [{ name: "Loud" }, { name: "Quiet" }],
        agents: [
          { name: "Shouter", model: "m", traits: ["Loud"] },
          { name: "Whisperer", model: "m", traits: ["Quiet"] },
          { name: "Skipped", model: "m" },
        ],
        tools: [{ name: "Unwanted Tool", type: "function" }],
        filters: { exclude_components: ["tools", "Skipped"], agent_filters: { exclude_traits: ["Loud"] } },
      });
      expect(res.status).toBe(200);
      expect(res.body.agents.map((a: { name: string }) => a.name)).toEqual(["Whisperer"]);
      expect(res.body.agents[0].tools).toEqual([]);
    });

    it("refuses an invalid document with 400 listing every problem, and writes nothing", async () => {
      const agentsBefore = (await call("GET", "/agents?limit=1")).body.pagination.total;
      const res = await call("POST", "/teams/push", {
        name: "Broken Team",
        tools: [{ name: "Bad Tool", type: "api" }],
        agents: [
          { name: "No Model" },
          { name: "Unknown Trait", model: "m", traits: ["nonexistent"] },
          { name: "Foreign Domain", model: "m", publication: { access_level: "public", domain: "not-mine.example.com" } },
          { name: "Chatty", model: "m", configuration: { chat_ui: { suggested_prompts: Array.from({ length: 9 }, () => ({ title: "t", text: "x" })) } } },
        ],
      });
      expect(res.status).toBe(400);
      const fields = res.body.errors.map((e: { loc: unknown[] }) => e.loc.slice(1).join("."));
      expect(fields).toEqual(
        expect.arrayContaining([
          "tools.0.type",
          "agents.0.model",
          "agents.1.traits.0",
          "agents.2.publication.domain",
          "agents.3.configuration.chat_ui.suggested_prompts",
        ]),
      );
      expect(res.body.errors.every((e: { loc: unknown[]; msg: string; type: string }) => e.loc[0] === "body" && e.msg && e.type)).toBe(true);
      expect((await call("GET", "/teams/broken-team")).status).toBe(404);
      expect((await call("GET", "/agents?limit=1")).body.pagination.total).toBe(agentsBefore);
    });

    it("numbers the identifiers of new components whose names give one, as REST creates do, instead of a clash", async () => {
      const res = await call("POST", "/teams/push", {
        name: "Clashing Team",
        traits: [{ name: "Über" }, { name: "uber" }, { name: "¶" }, { name: "§" }],
        tools: [{ name: "Ü", type: "function" }, { name: "u", type: "function" }],
        agents: [{ name: "Ä", model: "m" }, { name: "a!", model: "m" }],
      });
      expect(res.status).toBe(200);
      expect(res.body.agents.map((a: { identifier: string }) => a.identifier)).toEqual(["a", "a-2"]);
      const traits = (await call("GET", "/traits?limit=200")).body.data;
      expect(["Über", "uber", "¶", "§"].map((name) => traits.find((t: { name: string }) => t.name === name)?.identifier)).toEqual(["uber", "uber-2", "item", "item-2"]);
    });

    it("matches components by their exact name only: a name that merely gives another record's identifier is a new component", async () => {
      const first = await call("POST", "/teams/push", { name: "Lang Team", agents: [{ name: "C++ Expert", model: "m", system_prompt: "cpp" }], tools: [{ name: "C++ Tool", type: "function" }] });
      expect(first.status).toBe(200);
      const cpp = first.body.agents[0];
      const both = await call("POST", "/teams/push", {
        name: "Both Langs",
        agents: [{ name: "C++ Expert", model: "m" }, { name: "C# Expert", model: "m", system_prompt: "csharp" }, { name: "support squad", model: "m" }],
        tools: [{ name: "C++ Tool", type: "function" }, { name: "C# Tool", type: "function" }],
      });
      expect(both.status).toBe(200);
      expect(both.body.agents.map((a: { id: number; identifier: string }) => [a.id === cpp.id, a.identifier])).toEqual([[true, "c-expert"], [false, "c-expert-2"], [false, "support-squad"]]);
      // The other team's agent and the team of a similar name are untouched, and the pull pushes back as it is.
      expect((await call("GET", "/agents/c-expert")).body).toMatchObject({ name: "C++ Expert", instructions: "cpp" });
      const pulled = await call("GET", "/teams/both-langs/pull");
      expect(pulled.body.tools.map((t: { name: string }) => t.name)).toEqual(["C++ Tool", "C# Tool"]);
      expect((await call("POST", "/teams/push", pulled.body)).status).toBe(200);
      expect((await call("POST", "/teams/push", { name: "lang team" })).body.identifier).toBe("lang-team-2");
      expect((await call("GET", "/teams/lang-team")).body.name).toBe("Lang Team");
    });

    it("gives a name of only digits an identifier with a letter, which a path can name", async () => {
      const res = await call("POST", "/teams/push", { name: "2024", agents: [{ name: "42", model: "m" }] });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ identifier: "item-2024", agents: [{ identifier: "item-42" }] });
      expect((await call("GET", "/teams/item-2024/pull")).body.name).toBe("2024");
      expect((await call("GET", "/agents/item-42")).body.name).toBe("42");
    });

    it("refuses a push whose team name two teams of the account share (it updated one of them blindly)", async () => {
      const [solo, twin] = [(await call("POST", "/agents", { name: "Solo One" })).body, (await call("POST", "/agents", { name: "Twin One" })).body];
      const first = (await call("POST", "/teams", { name: "Same Name", agent_ids: [twin.id] })).body;
      const second = (await call("POST", "/teams", { name: "Same Name", agent_ids: [solo.id] })).body;
      const pulled = (await call("GET", `/teams/${second.identifier}/pull`)).body;
      const res = await call("POST", "/teams/push", pulled);
      expect(res.status).toBe(400);
      expect(res.body.errors[0]).toMatchObject({ loc: ["body", "name"], msg: expect.stringMatching(/At least two teams .* named "Same Name" \(same-name and same-name-2\)/) });
      expect((await call("GET", `/teams/${first.identifier}`)).body.agent_ids).toEqual([twin.id]);
    });

    it("answers the interface's 500 for a team whose agents share a name, which no document can express", async () => {
      const a = (await call("POST", "/agents", { name: "Echo" })).body;
      const b = (await call("POST", "/agents", { name: "Echo" })).body;
      const team = (await call("POST", "/teams", { name: "Echoes", agent_ids: [a.id, b.id] })).body;
      const res = await call("GET", `/teams/${team.identifier}/pull`);
      expect(res.status).toBe(500);
      expect(res.body.detail).toMatch(/Duplicate agent name "Echo"/);
    });

    it("filters agents by trait whether the trait is written by name or by identifier", async () => {
      const res = await call("POST", "/teams/push", {
        name: "Trait Filters",
        traits: [{ name: "Nice" }, { name: "Loud" }],
        agents: [{ name: "By Name", model: "m", traits: ["Nice"] }, { name: "By Identifier", model: "m", traits: ["nice"] }, { name: "Noisy", model: "m", traits: ["Loud"] }],
        filters: { agent_filters: { exclude_traits: ["loud"], include_traits: ["NICE"] } },
      });
      expect(res.status).toBe(200);
      expect(res.body.agents.map((a: { name: string }) => a.name)).toEqual(["By Name", "By Identifier"]);
    });

    it("clears a team's, a tool's and a trait's description given as null, and resets a trait's category and tags", async () => {
      const doc = { name: "Null Defs", description: "team", tools: [{ name: "Null Tool", type: "function", description: "tool", config: { a: 1 } }], traits: [{ name: "Null Trait", category: "personality", description: "trait", tags: ["x"] }] };
      expect((await call("POST", "/teams/push", doc)).status).toBe(200);
      const res = await call("POST", "/teams/push", { name: "Null Defs", description: null, tools: [{ name: "Null Tool", type: "function", description: null, config: null }], traits: [{ name: "Null Trait", category: null, description: null, tags: null }] });
      expect(res.status).toBe(200);
      expect(res.body.description).toBeNull();
      const pulled = (await call("GET", "/teams/null-defs/pull")).body;
      expect(pulled.tools).toEqual([{ name: "Null Tool", type: "function", config: {} }]);
      expect((await call("GET", "/traits?limit=200")).body.data.find((t: { name: string }) => t.name === "Null Trait")).toMatchObject({ category: "general", description: null, tags: [] });
    });

    it("keeps the fields a trait or tool definition leaves out, as an agent's", async () => {
      const doc = { name: "Definitions Team", traits: [{ name: "Kind", category: "personality", description: "nice", tags: ["a", "b"] }], tools: [{ name: "Lister", type: "external", description: "lists", config: { command: "ls" } }] };
      expect((await call("POST", "/teams/push", doc)).status).toBe(200);
      expect((await call("POST", "/teams/push", { name: "Definitions Team", traits: [{ name: "Kind" }], tools: [{ name: "Lister", type: "external" }] })).status).toBe(200);
      const pulled = (await call("GET", "/teams/definitions-team/pull")).body;
      expect(pulled.tools).toEqual(doc.tools);
      expect((await call("GET", "/traits?limit=200")).body.data.find((t: { name: string }) => t.name === "Kind")).toMatchObject({ category: "personality", description: "nice", tags: ["a", "b"] });
    });

    it("refuses duplicate knowledge names and overrides for agents the document does not have (400)", async () => {
      const res = await call("POST", "/teams/push", {
        name: "Overridden Team",
        agents: [{ name: "Resolver", model: "m" }],
        knowledge: [{ name: "Docs", type: "website", source: "https://a.example" }, { name: "Docs", type: "website", source: "https://b.example" }],
        overrides: { agent_specific: { Resolver: { temperature: 0.1 }, Resolvr: { temperature: 0.2 } } },
      });
      expect(res.status).toBe(400);
      expect(res.body.errors.map((e: { loc: unknown[]; msg: string }) => [e.loc.slice(1).join("."), e.msg])).toEqual([
        ["knowledge.1.name", 'Duplicate knowledge name "Docs"'],
        ["overrides.agent_specific.Resolvr", 'No agent named "Resolvr" in this document'],
      ]);
      expect((await call("GET", "/teams/overridden-team")).status).toBe(404);
    });

    it("pulls a team whose tool was given an upper-case type through REST (types are stored lower case)", async () => {
      const tool = await call("POST", "/tools", { name: "Upper MCP", identifier: "upper-mcp", tool_type: " MCP " });
      expect(tool.body.tool_type).toBe("mcp");
      expect((await call("POST", "/teams/push", { name: "Upper Team", tools: [{ name: "Upper MCP", type: "mcp" }] })).status).toBe(200);
      expect((await call("PATCH", `/tools/${tool.body.id}`, { tool_type: "External" })).body.tool_type).toBe("external");
      expect((await call("GET", "/teams/upper-team/pull")).body.tools).toEqual([{ name: "Upper MCP", type: "external", config: {} }]);
    });

    it("refuses with 400 an agent whose trait the filters leave out and the account does not have", async () => {
      const doc = { name: "Filtered Traits", traits: [{ name: "Left Out" }], agents: [{ name: "Keeper", model: "m", traits: ["Left Out"] }], filters: { include_components: ["agents"] } };
      const res = await call("POST", "/teams/push", doc);
      expect(res.status).toBe(400);
      expect(res.body.errors).toEqual([expect.objectContaining({ loc: ["body", "agents", 0, "traits", 0], msg: expect.stringMatching(/filters leave the definition out/) })]);
      expect((await call("GET", "/teams/filtered-traits")).status).toBe(404);
      // With the trait in the account already, the agent takes it.
      expect((await call("POST", "/traits", { name: "Left Out" })).status).toBe(201);
      expect((await call("POST", "/teams/push", doc)).status).toBe(200);
    });

    it("gives components named in other scripts identifiers of their own, so they do not clash", async () => {
      const res = await call("POST", "/teams/push", {
        name: "Команда поддержки",
        traits: [{ name: "Вежливый" }, { name: "Точный" }],
        agents: [{ name: "Агент один", model: "m", traits: ["Вежливый"] }, { name: "Агент два", model: "m" }, { name: "客服机器人", model: "m" }],
      });
      expect(res.status).toBe(200);
      const team = await call("GET", "/teams/komanda-podderzhki");
      expect(team.status).toBe(200);
      expect(team.body.agents.map((a: { identifier: string }) => a.identifier).sort()).toEqual(["agent-dva", "agent-odin", "ke-fu-ji-qi-ren"]);
      expect((await call("GET", "/agents/agent-odin")).body.traits.map((t: { identifier: string }) => t.identifier)).toEqual(["vezhlivyy"]);
    });

    it("accepts a domain registered for the account", async () => {
      const conn = await mongoose.createConnection(cluster.mongoUrl).asPromise();
      await conn.collection("domains").insertOne({ account_id: accountId, hostname: "chat.example.com" });
      await conn.close();
      const res = await call("POST", "/teams/push", { name: "Domain Team", agents: [{ name: "Domain Agent", model: "m", publication: { access_level: "public", domain: "chat.example.com" } }] });
      expect(res.status).toBe(200);
      expect(res.body.agents[0].publication.domain).toBe("chat.example.com");
    });

    it("a failure halfway leaves no half-created team: earlier writes are undone", async () => {
      const conn = await mongoose.createConnection(cluster.mongoUrl).asPromise();
      // Occupy the next team ids (in another account) so every attempt's final team insert fails.
      await occupyNextIds(conn, "teams", (i) => ({ identifier: `blocker-${i}`, name: "b", sort_name: "b" }));
      const res = await call("POST", "/teams/push", {
        name: "Doomed Team",
        traits: [{ name: "Doomed Trait" }],
        tools: [{ name: "Doomed Tool", type: "function" }],
        agents: [{ name: "Doomed Agent", model: "m", traits: ["Doomed Trait"] }],
      });
      // Every attempt collides, so after its retries the push answers 409 (nothing written: retry) instead of a 500.
      expect(res.status).toBe(409);
      for (const [collection, name] of [["agents", "Doomed Agent"], ["tools", "Doomed Tool"], ["traits", "Doomed Trait"], ["teams", "Doomed Team"]]) {
        expect(await conn.collection(collection!).countDocuments({ name })).toBe(0);
      }
      await conn.collection("teams").deleteMany({ account_id: PLACEHOLDER_ACCOUNT });
      await conn.close();
    });

    it("refuses master API keys with 403 and answers 401 without credentials", async () => {
      const res = await api("POST", "/api/v1/teams/push", { apiKey: process.env.MASTER_API_KEY, headers: { "x-account-id": String(accountId) }, body: base });
      expect(res.status).toBe(403);
      expect((await api("POST", "/api/v1/teams/push", { body: base })).status).toBe(401);
      const key = (await call("POST", "/account-api-keys", { name: "pusher" })).body.key;
      expect((await api("POST", "/api/v1/teams/push", { apiKey: key, body: base })).status).toBe(200);
    });

    it("concurrent pushes of one team create no duplicate agents", async () => {
      const doc = { name: "Race Team", traits: [{ name: "Racer" }], agents: [{ name: "Runner A", model: "m", traits: ["Racer"] }, { name: "Runner B", model: "m" }] };
      const results = await Promise.all(Array.from({ length: 5 }, () => call("POST", "/teams/push", doc)));
      expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
      const agents = (await call("GET", "/agents?limit=200")).body.data.filter((a: { name: string }) => a.name.startsWith("Runner"));
      expect(agents).toHaveLength(2);
      const teams = (await call("GET", "/teams?limit=200")).body.data.filter((t: { name: string }) => t.name === "Race Team");
      expect(teams).toHaveLength(1);
    });
  });

  describe("pull", () => {
    it("returns the configuration document under /config and /pull; push(pull) changes nothing", async () => {
      const pulled = await call("GET", "/teams/support-squad/config");
      expect(pulled.status).toBe(200);
      expect(pulled.body).toMatchObject({ name: "Support Squad", tools: [{ name: "Ticket Lookup", type: "external" }], knowledge: [{ name: "Help Center" }] });
      expect(pulled.body.agents.map((a: { name: string }) => a.name)).toEqual(["Triage", "Resolver"]);
      expect(pulled.body).not.toHaveProperty("overrides");
      expect((await call("GET", "/teams/support-squad/pull")).body).toEqual(pulled.body);
      const before = await call("GET", "/teams/support-squad");
      expect((await call("POST", "/teams/push", pulled.body)).status).toBe(200);
      const after = await call("GET", "/teams/support-squad");
      expect(after.body).toEqual(before.body);
      expect((await call("GET", "/teams/support-squad/config")).body).toEqual(pulled.body);
    });

    it("answers 500 with a detail for a team holding a tool a configuration cannot express, as the interface and the OpenAPI document say", async () => {
      const pushed = await call("POST", "/teams/push", { name: "Odd Tools", tools: [{ name: "Odd Tool", type: "function" }] });
      expect(pushed.status).toBe(200);
      const tool = (await call("GET", "/tools?limit=200")).body.data.find((t: { name: string }) => t.name === "Odd Tool");
      // Tools take any tool_type; a configuration's tool type is mcp, external or function.
      expect((await call("PATCH", `/tools/${tool.id}`, { tool_type: "api" })).status).toBe(200);
      for (const route of ["config", "pull"]) {
        const pulled = await call("GET", `/teams/${pushed.body.identifier}/${route}`);
        expect(pulled.status).toBe(500);
        expect(pulled.body.detail).toMatch(/cannot be expressed as a configuration: tools\[0\]\.type/);
      }
      const { paths } = (await call("GET", "/openapi.json")).body;
      for (const route of ["config", "pull"]) expect(paths[`/api/v1/teams/{identifier}/${route}`].get.responses["500"]).toMatchObject({ content: { "application/json": {} } });
    });

    it("is scoped to the caller's account", async () => {
      expect((await call("GET", "/teams/support-squad/config", undefined, other)).status).toBe(404);
      expect((await call("GET", "/teams/no-such-team/config")).status).toBe(404);
    });

    it("round-trips random valid documents: push, pull, push again, compare", async () => {
      for (let seed = 1; seed <= 12; seed++) {
        const doc = randomDocument(seed);
        const first = await call("POST", "/teams/push", doc);
        expect(first.status).toBe(200);
        const pulled = (await call("GET", `/teams/${first.body.identifier}/config`)).body;
        const again = await call("POST", "/teams/push", pulled);
        expect(again.status).toBe(200);
        expect(again.body).toEqual(first.body);
        expect((await call("GET", `/teams/${first.body.identifier}/config`)).body).toEqual(pulled);
        // The pulled document says what was pushed.
        expect(pulled.agents.map((a: { name: string }) => a.name)).toEqual(doc.agents.map((a) => a.name));
        expect(pulled.agents.map((a: { model: string }) => a.model)).toEqual(doc.agents.map((a) => a.model));
      }
    });
  });
});
