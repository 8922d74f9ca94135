import { startCluster, type Cluster } from "../harness/cluster";
import { apiClient, signup, type Api } from "../harness/http";

describe("agents, tools and traits over NATS", () => {
  let cluster: Cluster;
  let api: Api;
  let token: string;
  let other: string;

  beforeAll(async () => {
    cluster = await startCluster({ database: "agents" });
    api = apiClient(cluster.baseUrl);
    token = (await signup(api, "agents")).token;
    other = (await signup(api, "intruder")).token;
  });
  afterAll(() => cluster?.stop());

  const post = (path: string, body: unknown, t = token) => api("POST", `/api/v1${path}`, { token: t, body });
  const get = (path: string, t = token) => api("GET", `/api/v1${path}`, { token: t });
  const put = (path: string, body: unknown, t = token) => api("PUT", `/api/v1${path}`, { token: t, body });
  const del = (path: string, t = token) => api("DELETE", `/api/v1${path}`, { token: t });

  describe("tools", () => {
    it("creates, reads, partially updates and deletes a tool; account_id is set automatically", async () => {
      const created = await post("/tools", { name: "Web search", identifier: "web_search", tool_type: "api", configuration: { url: "https://x" }, account_id: 999 });
      expect(created.status).toBe(201);
      expect(created.body).toMatchObject({ id: expect.any(Number), name: "Web search", identifier: "web_search", tool_type: "api", configuration: { url: "https://x" }, created_at: expect.any(String) });
      expect(created.body.account_id).not.toBe(999);
      const updated = await put(`/tools/${created.body.id}`, { description: "Searches the web" });
      expect(updated.body).toMatchObject({ name: "Web search", description: "Searches the web", tool_type: "api" });
      expect((await del(`/tools/${created.body.id}`)).status).toBe(204);
      expect((await get(`/tools/${created.body.id}`)).status).toBe(404);
    });

    it("requires name and identifier (422) and refuses a duplicate identifier in the account (409)", async () => {
      const missing = await post("/tools", { description: "x" });
      expect(missing.status).toBe(422);
      expect(missing.body.detail.map((d: { loc: string[] }) => d.loc[1]).sort()).toEqual(["identifier", "name"]);
      await post("/tools", { name: "A", identifier: "dup-tool" });
      expect((await post("/tools", { name: "B", identifier: "dup-tool" })).status).toBe(409);
      // Unique per account, not globally.
      expect((await post("/tools", { name: "B", identifier: "dup-tool" }, other)).status).toBe(201);
    });

    it("lists tools paginated with bounds", async () => {
      await post("/tools", { name: "Second", identifier: "second" });
      const page = await get("/tools?limit=1");
      expect(page.status).toBe(200);
      expect(page.body.pagination).toMatchObject({ skip: 0, limit: 1, has_more: true });
      expect(page.body.data).toHaveLength(1);
      expect((await get("/tools?limit=201")).status).toBe(422);
    });

    it("answers 403 for another account's tool", async () => {
      const { body } = await post("/tools", { name: "Mine", identifier: "mine" });
      expect((await get(`/tools/${body.id}`, other)).status).toBe(403);
      expect((await put(`/tools/${body.id}`, { name: "x" }, other)).status).toBe(403);
      expect((await del(`/tools/${body.id}`, other)).status).toBe(403);
    });
  });

  describe("traits", () => {
    it("creates traits with generated identifiers, sorts and paginates them, reports categories", async () => {
      const a = await post("/traits", { name: "Friendly tone", category: "communication", tags: ["Tone", "tone", "warm"] });
      expect(a.status).toBe(201);
      expect(a.body).toMatchObject({ identifier: "friendly-tone", category: "communication", tags: ["tone", "warm"] });
      await post("/traits", { name: "Able" });
      const byName = await get("/traits?sort_by=name&sort_order=asc");
      expect(byName.body.data.map((t: { name: string }) => t.name)).toEqual(["Able", "Friendly tone"]);
      expect((await get("/traits?sort_by=color")).status).toBe(422);
      const categories = await get("/traits/categories");
      expect(categories.status).toBe(200);
      expect(categories.body).toEqual(expect.arrayContaining([{ name: "communication", description: expect.any(String), trait_count: 1 }]));
    });

    it("reads, updates and deletes a trait by id; another account's trait is 403 and never listed", async () => {
      const trait = (await post("/traits", { name: "Private trait", tags: ["x"] })).body;
      expect((await put(`/traits/${trait.id}`, { description: "changed" })).body).toMatchObject({ name: "Private trait", description: "changed" });
      expect((await get(`/traits/${trait.id}`, other)).status).toBe(403);
      expect((await put(`/traits/${trait.id}`, { name: "x" }, other)).status).toBe(403);
      expect((await del(`/traits/${trait.id}`, other)).status).toBe(403);
      expect((await get("/traits", other)).body.data.map((t: { id: number }) => t.id)).not.toContain(trait.id);
      const otherCategories = (await get("/traits/categories", other)).body;
      expect(otherCategories.every((c: { trait_count: number; name: string }) => c.name !== "communication" || c.trait_count === 0)).toBe(true);
      // Associations resolve only inside the caller's account.
      expect((await post("/agents", { name: "Borrower", traits: [trait.id] }, other)).status).toBe(422);
      expect((await del(`/traits/${trait.id}`)).status).toBe(204);
      expect((await get(`/traits/${trait.id}`)).status).toBe(404);
    });
  });

  describe("agents", () => {
    it("generates unique identifiers from the name and reads by id or identifier", async () => {
      const one = await post("/agents", { name: "Support Bot", model: "gpt-4o" });
      const two = await post("/agents", { name: "Support Bot", model: "gpt-4o" });
      expect(one.status).toBe(201);
      expect(one.body.identifier).toBe("support-bot");
      expect(two.body.identifier).toBe("support-bot-2");
      expect((await get(`/agents/${one.body.id}`)).body.identifier).toBe("support-bot");
      expect((await get("/agents/support-bot-2")).body.id).toBe(two.body.id);
      expect((await get("/agents/no-such-agent")).status).toBe(404);
      // Digits past 2^53 name no agent (as a double they would round to 9007199254740992).
      expect((await get("/agents/9007199254740993")).body).toEqual({ detail: "Agent 9007199254740993 not found" });
    });

    it("never gives an agent the identifier of the directory route, which GET /agents/directory takes", async () => {
      const named = await post("/agents", { name: "Directory" });
      expect(named.body.identifier).toBe("directory-2");
      expect((await get("/agents/directory-2")).body.id).toBe(named.body.id);
      const given = await post("/agents", { name: "Dir", identifier: "directory" });
      expect(given.status).toBe(422);
      expect(given.body.detail[0]).toMatchObject({ loc: ["body", "identifier"], msg: expect.stringMatching(/names the route \/agents\/directory/) });
      expect((await put(`/agents/${named.body.id}`, { identifier: "directory" })).status).toBe(422);
      // The router matches the route in any case: "Directory" is the directory too.
      expect((await post("/agents", { name: "Dir", identifier: "Directory" })).status).toBe(422);
      const pushed = await post("/teams/push", { name: "Directory Team", agents: [{ name: "directory", model: "m" }] });
      expect(pushed.body.agents[0].identifier).toBe("directory-3");
    });

    it("deep-merges configuration.chat_ui on update; null removes a field; image_url is replaced", async () => {
      const { body } = await post("/agents", {
        name: "Merger",
        image_url: "https://img/a.png",
        configuration: { chat_ui: { empty_title: "Hi", greeting: "Hello", suggested_prompts: [{ title: "t", text: "x" }] }, theme: "dark" },
      });
      const res = await put(`/agents/${body.id}`, { image_url: "https://img/b.png", configuration: { chat_ui: { greeting: null, empty_description: "Ask" } } });
      expect(res.status).toBe(200);
      expect(res.body.image_url).toBe("https://img/b.png");
      expect(res.body.configuration).toEqual({
        chat_ui: { empty_title: "Hi", empty_description: "Ask", suggested_prompts: [{ title: "t", text: "x" }] },
        theme: "dark",
      });
      const untouched = await put(`/agents/${body.id}`, { description: "no configuration given" });
      expect(untouched.body.configuration).toEqual(res.body.configuration);
      // A configuration merged into what is stored already changes nothing: updated_at stays.
      const again = await put(`/agents/${body.id}`, { configuration: { theme: "dark", chat_ui: { empty_title: "Hi" } } });
      expect(again.body.updated_at).toBe(untouched.body.updated_at);
    });

    it("refuses more than 8 suggested prompts and prompts without title/text (422)", async () => {
      const prompts = Array.from({ length: 9 }, (_, i) => ({ title: `t${i}`, text: "x" }));
      const tooMany = await post("/agents", { name: "Prompts", configuration: { chat_ui: { suggested_prompts: prompts } } });
      expect(tooMany.status).toBe(422);
      expect(tooMany.body.detail[0].loc).toEqual(["body", "configuration", "chat_ui", "suggested_prompts"]);
      const noText = await post("/agents", { name: "Prompts", configuration: { chat_ui: { suggested_prompts: [{ title: "t" }] } } });
      expect(noText.status).toBe(422);
    });

    it("associates traits and tools by id or identifier; unknown references are 422; PUT/GET traits", async () => {
      const trait = (await post("/traits", { name: "Concise" })).body;
      const tool = (await post("/tools", { name: "Calc", identifier: "calc" })).body;
      const agent = await post("/agents", { name: "Assoc", traits: ["concise"], tools: [tool.id, "calc"] });
      expect(agent.status).toBe(201);
      expect(agent.body.traits).toEqual([expect.objectContaining({ id: trait.id, identifier: "concise" })]);
      expect(agent.body.tools).toEqual([expect.objectContaining({ id: tool.id, identifier: "calc" })]);
      const bad = await post("/agents", { name: "Assoc", traits: ["nope", trait.id], tools: [123456] });
      expect(bad.status).toBe(422);
      expect(bad.body.detail.map((d: { loc: unknown[] }) => d.loc)).toEqual([["body", "traits", 0], ["body", "tools", 0]]);
      const friendly = (await get("/traits?sort_by=name&sort_order=asc")).body.data.find((t: { name: string }) => t.name === "Friendly tone");
      const set = await put(`/agents/${agent.body.id}/traits`, { trait_ids: [friendly.id, trait.id] });
      expect(set.body.traits.map((t: { id: number }) => t.id)).toEqual([friendly.id, trait.id]);
      const traits = await get(`/agents/${agent.body.identifier}/traits`);
      expect(traits.body.map((t: { name: string }) => t.name)).toEqual(["Friendly tone", "Concise"]);
    });

    it("keeps reading an agent whose tool was deleted", async () => {
      const tool = (await post("/tools", { name: "Temp", identifier: "temp-tool" })).body;
      const agent = (await post("/agents", { name: "Orphan", tools: [tool.id] })).body;
      await del(`/tools/${tool.id}`);
      const res = await get(`/agents/${agent.id}`);
      expect(res.status).toBe(200);
      expect(res.body.tools).toEqual([]);
    });

    it("keeps one access level: a REST change of a published agent's level is its publication's too", async () => {
      const pushed = await post("/teams/push", { name: "Published Team", agents: [{ name: "Published", model: "m", publication: { access_level: "public", chat_uri: "published-chat" } }] });
      const agent = pushed.body.agents[0];
      const changed = await put(`/agents/${agent.id}`, { access_level: "private" });
      expect(changed.body).toMatchObject({ access_level: "private", publication: { access_level: "private", chat_uri: "published-chat" } });
      const row = (await get("/agents/directory?search=Published")).body.data.find((r: { id: number }) => r.id === agent.id);
      expect(row.access).toBe("private");
      // A later push that leaves publication out keeps the level REST set.
      const again = await post("/teams/push", { name: "Published Team", agents: [{ name: "Published", model: "m" }] });
      expect(again.body.agents[0].access_level).toBe("private");
    });

    it("attaches the knowledge-retrieval tool idempotently and lists the agent's tools", async () => {
      const agent = (await post("/agents", { name: "Librarian" })).body;
      const first = await post(`/agents/${agent.id}/tools/knowledge-retrieval`, {});
      const second = await post(`/agents/${agent.identifier}/tools/knowledge-retrieval`, {});
      expect(first.status).toBe(200);
      expect(second.body.tool.id).toBe(first.body.tool.id);
      // Attached already: nothing changes, updated_at included.
      const afterFirst = (await get(`/agents/${agent.id}`)).body.updated_at;
      await post(`/agents/${agent.id}/tools/knowledge-retrieval`, {});
      expect((await get(`/agents/${agent.id}`)).body.updated_at).toBe(afterFirst);
      const tools = await get(`/agents/${agent.id}/tools`);
      expect(tools.body).toEqual([expect.objectContaining({ identifier: "knowledge-retrieval", tool_type: "function" })]);
    });

    it("lists agents paginated and sorted; the directory is alphabetical, lean and searchable", async () => {
      const list = await get("/agents?sort_by=name&sort_order=asc&limit=2");
      expect(list.status).toBe(200);
      expect(list.body.pagination).toMatchObject({ limit: 2, has_more: true });
      const names = list.body.data.map((a: { name: string }) => a.name);
      expect(names).toEqual([...names].sort((a: string, b: string) => a.localeCompare(b)));
      const dir = await get("/agents/directory");
      expect(dir.status).toBe(200);
      expect(Object.keys(dir.body.data[0]).sort()).toEqual(["accent", "access", "avatar", "id", "name", "uri"]);
      const dirNames = dir.body.data.map((a: { name: string }) => a.name.toLowerCase());
      expect(dirNames).toEqual([...dirNames].sort());
      const found = await get("/agents/directory?search=SUPPORT");
      expect(found.body.data.map((a: { uri: string }) => a.uri)).toEqual(["support-bot", "support-bot-2"]);
      expect((await get(`/agents/directory?search=${"x".repeat(101)}`)).status).toBe(422);
      expect((await get("/agents/directory?limit=1001")).status).toBe(422);
    });

    it("deletes by identifier (204) and isolates accounts (403)", async () => {
      const agent = (await post("/agents", { name: "Doomed" })).body;
      expect((await get(`/agents/${agent.id}`, other)).status).toBe(403);
      expect((await put(`/agents/${agent.id}`, { name: "x" }, other)).status).toBe(403);
      expect((await del(`/agents/${agent.id}`, other)).status).toBe(403);
      // Identifiers resolve only inside the caller's account.
      expect((await get(`/agents/${agent.identifier}`, other)).status).toBe(404);
      expect((await del(`/agents/${agent.identifier}`)).status).toBe(204);
      expect((await get(`/agents/${agent.id}`)).status).toBe(404);
    });
  });
});

describe("agent reads cached per account by its counts of changes (directory, list totals, traits and tools), on two agents replicas", () => {
  let cluster: Cluster;
  let api: Api;
  let token: string;
  let other: string;

  beforeAll(async () => {
    const core = ["users", "agents", "teams", "tools", "traits", "api-keys"];
    cluster = await startCluster({ database: "agents_directory", nodes: [["gateway"], core, ["agents"]] });
    api = apiClient(cluster.baseUrl);
    token = (await signup(api, "directory")).token;
    other = (await signup(api, "directory-other")).token;
  });
  afterAll(() => cluster?.stop());

  /** Reads the directory enough times that both replicas answer (calls are balanced between them). */
  const directories = async (t = token) => {
    const pages = [];
    for (let i = 0; i < 4; i++) pages.push((await api("GET", "/api/v1/agents/directory", { token: t })).body);
    return pages;
  };
  const names = async () => {
    const pages = await directories();
    for (const page of pages) expect(page).toEqual(pages[0]);
    return pages[0].data.map((entry: { name: string }) => entry.name);
  };

  it("answers every change at once, whichever replica made it and whichever reads", async () => {
    expect(await names()).toEqual([]);
    const alpha = (await api("POST", "/api/v1/agents", { token, body: { name: "Alpha" } })).body;
    expect(await names()).toEqual(["Alpha"]);
    await api("PUT", `/api/v1/agents/${alpha.id}`, { token, body: { name: "Zulu", image_url: "https://img.example.com/z.png" } });
    expect((await directories())[0].data).toEqual([{ id: alpha.id, name: "Zulu", uri: alpha.identifier, avatar: "https://img.example.com/z.png", access: "private", accent: null }]);
    const pushed = await api("POST", "/api/v1/teams/push", { token, body: { name: "Crew", agents: [{ name: "Bravo", model: "gpt-4o-mini" }] } });
    expect(pushed.status).toBe(200);
    expect(await names()).toEqual(["Bravo", "Zulu"]);
    expect((await api("DELETE", `/api/v1/agents/${alpha.id}`, { token })).status).toBe(204);
    expect(await names()).toEqual(["Bravo"]);
  });

  /** Reads the agents list enough times that both replicas answer; every read must be the same. */
  const lists = async (t = token) => {
    const pages = [];
    for (let i = 0; i < 4; i++) pages.push((await api("GET", "/api/v1/agents?sort_by=name", { token: t })).body);
    for (const page of pages) expect(page).toEqual(pages[0]);
    return pages[0] as { data: { name: string; traits: object[]; tools: object[] }[]; pagination: { total: number } };
  };

  it("lists agents with their traits, tools and total as they are now, whichever replica changed them", async () => {
    const trait = (await api("POST", "/api/v1/traits", { token, body: { name: "Calm", category: "tone" } })).body;
    const tool = (await api("POST", "/api/v1/tools", { token, body: { name: "Lookup", identifier: "lookup", tool_type: "function" } })).body;
    const agent = (await api("POST", "/api/v1/agents", { token, body: { name: "Referrer", traits: [trait.id], tools: [tool.id] } })).body;
    const referrer = async () => (await lists()).data.find((a) => a.name === "Referrer")!;
    expect((await lists()).pagination.total).toBe(2);
    expect(await referrer()).toMatchObject({ traits: [{ id: trait.id, name: "Calm", category: "tone" }], tools: [{ id: tool.id, name: "Lookup", tool_type: "function" }] });

    // One change at a time: the references are cached under the sum of the two counts.
    await api("PUT", `/api/v1/traits/${trait.id}`, { token, body: { name: "Serene", category: "mood" } });
    expect((await referrer()).traits).toMatchObject([{ id: trait.id, name: "Serene", category: "mood" }]);
    await api("PUT", `/api/v1/tools/${tool.id}`, { token, body: { name: "Finder" } });
    expect((await referrer()).tools).toMatchObject([{ id: tool.id, name: "Finder" }]);
    const pushed = await api("POST", "/api/v1/teams/push", { token, body: { name: "Crew", traits: [{ name: "Serene", category: "pushed" }] } });
    expect(pushed.status).toBe(200);
    expect((await referrer()).traits).toMatchObject([{ id: trait.id, category: "pushed" }]);

    expect((await api("DELETE", `/api/v1/tools/${tool.id}`, { token })).status).toBe(204);
    expect((await referrer()).tools).toEqual([]);
    expect((await api("DELETE", `/api/v1/traits/${trait.id}`, { token })).status).toBe(204);
    expect((await referrer()).traits).toEqual([]);
    const extra = (await api("POST", "/api/v1/agents", { token, body: { name: "Extra" } })).body;
    expect((await lists()).pagination.total).toBe(3);
    expect((await lists(other)).pagination.total).toBe(0);
    await api("DELETE", `/api/v1/agents/${extra.id}`, { token });
    await api("DELETE", `/api/v1/agents/${agent.id}`, { token });
    expect((await lists()).data.map((a) => a.name)).toEqual(["Bravo"]);
  });

  it("keeps each account's pages and each query's page apart", async () => {
    await api("POST", "/api/v1/agents", { token: other, body: { name: "Elsewhere" } });
    expect((await directories(other))[0].data.map((e: { name: string }) => e.name)).toEqual(["Elsewhere"]);
    expect(await names()).toEqual(["Bravo"]);
    const searched = await api("GET", "/api/v1/agents/directory?search=else", { token: other });
    expect(searched.body.data.map((e: { name: string }) => e.name)).toEqual(["Elsewhere"]);
    expect((await api("GET", "/api/v1/agents/directory?search=zzz", { token: other })).body).toMatchObject({ data: [], pagination: { total: 0 } });
  });
});

describe("the agent directory with caches turned off (CACHE_TTL_SECONDS=0)", () => {
  let cluster: Cluster;
  afterAll(() => cluster?.stop());

  it("reads the database every time (directory, list totals, references)", async () => {
    cluster = await startCluster({ database: "agents_directory_uncached", embedded: true, env: { CACHE_TTL_SECONDS: "0" } });
    const api = apiClient(cluster.baseUrl);
    const { token } = await signup(api, "uncached");
    const directory = async () => (await api("GET", "/api/v1/agents/directory", { token })).body.data.map((e: { name: string }) => e.name);
    expect(await directory()).toEqual([]);
    const trait = (await api("POST", "/api/v1/traits", { token, body: { name: "Calm" } })).body;
    await api("POST", "/api/v1/agents", { token, body: { name: "Solo", traits: [trait.id] } });
    expect(await directory()).toEqual(["Solo"]);
    await api("PUT", `/api/v1/traits/${trait.id}`, { token, body: { name: "Serene" } });
    const list = (await api("GET", "/api/v1/agents", { token })).body;
    expect(list.pagination.total).toBe(1);
    expect(list.data[0].traits).toMatchObject([{ id: trait.id, name: "Serene" }]);
  });
});
