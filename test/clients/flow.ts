/**
 * An ordinary client flow written against the types openapi-typescript generates from the served document
 * (./generated/api.d.ts) and called through openapi-fetch: every operation family, with the interface's field
 * names. test/integration/clients.spec.ts type-checks it strictly (test/clients/tsconfig.json), then runs it against
 * the platform it started: PLATFORM_URL. It serves its own loopback site (a page to load as knowledge) and webhook
 * receiver. A wrong field name, an untyped body or an optional field read as always present fails the type check;
 * a response the flow does not expect fails the run.
 */
import { createHmac } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import createClient from "openapi-fetch";
import type { components, paths, webhooks } from "./generated/api";

type Schemas = components["schemas"];
type AgentCreatedDelivery = webhooks["agent.created"]["post"]["requestBody"]["content"]["application/json"];

const baseUrl = process.env.PLATFORM_URL;
if (!baseUrl) throw new Error("PLATFORM_URL is not set");

/** The body of a successful answer; anything else stops the flow with the status and error body. */
function ok<T>(result: { data?: T; error?: unknown; response: Response }, what: string): T {
  if (result.data === undefined) throw new Error(`${what}: ${result.response.status} ${JSON.stringify(result.error)}`);
  return result.data;
}
function check(condition: boolean, what: string): void {
  if (!condition) throw new Error(`unexpected: ${what}`);
}
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A page to load as knowledge, and a webhook receiver that keeps what it is sent. */
function startSite() {
  const deliveries: { headers: http.IncomingHttpHeaders; body: string }[] = [];
  const server = http.createServer((req, res) => {
    if (req.method === "GET" && req.url === "/glaciers.html") {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      res.end("<html><head><title>Glacier guide</title></head><body><h1>Glaciers</h1><p>A glacier moves slowly downhill under its own weight, carving valleys as the ice flows.</p></body></html>");
      return;
    }
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      if (req.method === "POST" && req.url === "/hooks") deliveries.push({ headers: req.headers, body });
      res.writeHead(req.method === "POST" ? 204 : 404).end();
    });
  });
  return new Promise<{ url: string; deliveries: typeof deliveries; close(): void }>((resolve) =>
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      resolve({ url: `http://127.0.0.1:${port}`, deliveries, close: () => server.close() });
    }),
  );
}

/** Standard Webhooks: HMAC-SHA256 of "{id}.{timestamp}.{body}" with the base64 key after "whsec_". */
function signatureOf(secret: string, id: string, timestamp: string, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  return `v1,${createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest("base64")}`;
}

async function main() {
  const site = await startSite();
  const anonymous = createClient<paths>({ baseUrl });

  // Health and signup need no credentials; signup answers a token.
  const health: Schemas["Health"] = ok(await anonymous.GET("/health"), "health");
  check(health.status === "healthy", "health status");
  const email = `flow-${Date.now()}@example.com`;
  const signup = ok(await anonymous.POST("/api/v1/users", { body: { email, password: "flow-password-1", full_name: "Flow" } }), "signup");
  const login = ok(await anonymous.POST("/api/v1/login/access-token", { body: { email, password: "flow-password-1" } }), "login");
  check(login.token_type === "bearer" && signup.access_token.length > 0, "tokens");
  const api = createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${login.access_token}` } });
  const me = ok(await api.GET("/api/v1/users/me"), "me");
  check(me.email === email && me.role === "owner", "own user");
  ok(await api.PUT("/api/v1/users/me", { body: { full_name: "Flow Runner" } }), "update me");

  // An API key, then calls made with it (X-AUTH-TOKEN).
  const key = ok(await api.POST("/api/v1/account-api-keys", { body: { name: "flow" } }), "create key");
  const withKey = createClient<paths>({ baseUrl, headers: { "X-AUTH-TOKEN": key.key } });
  const keys = ok(await withKey.GET("/api/v1/account-api-keys"), "list keys");
  check(keys.some((k) => k.id === key.id && k.status === "active"), "key listed");

  // Webhooks: a subscription to agent.created on the flow's own receiver.
  const subscription = ok(await api.POST("/api/v1/webhook-subscriptions", { body: { url: `${site.url}/hooks`, event_types: ["agent.created"] } }), "subscribe");
  const { secret } = ok(await api.GET("/api/v1/webhook-subscriptions/{id}/secret", { params: { path: { id: subscription.id } } }), "secret");

  // Traits and tools; a tool's configuration is free-form.
  const trait = ok(await api.POST("/api/v1/traits", { body: { name: "Patient", category: "tone", tags: ["support"] } }), "create trait");
  const tool = ok(
    await api.POST("/api/v1/tools", {
      body: { name: "Weather", identifier: "weather", tool_type: "api", configuration: { endpoint: "https://weather.example/v1", retries: 2, headers: { accept: "json" } } },
    }),
    "create tool",
  );
  const patchedTool = ok(await api.PATCH("/api/v1/tools/{tool_id}", { params: { path: { tool_id: tool.id } }, body: { description: "Forecasts" } }), "patch tool");
  check(patchedTool.configuration.retries === 2, "tool configuration kept");

  // Knowledge: a source loaded from the flow's page (auto_load in the query), polled until loaded, then searched.
  const source = ok(
    await api.POST("/api/v1/knowledge", { params: { query: { auto_load: true } }, body: { name: "Glacier guide", data_type: "website", paths: [`${site.url}/glaciers.html`] } }),
    "create source",
  );
  let loaded: Schemas["KnowledgeSource"] = source;
  for (let i = 0; i < 120 && (loaded.loading_status === "unloaded" || loaded.loading_status === "loading"); i++) {
    await sleep(500);
    loaded = ok(await api.GET("/api/v1/knowledge/{knowledge_source_id}", { params: { path: { knowledge_source_id: source.id } } }), "poll source");
  }
  check(loaded.loading_status === "loaded" && loaded.document_count === 1, `source loaded (${loaded.loading_status}, ${loaded.loading_error})`);
  const found = ok(await api.POST("/api/v1/knowledge/search", { body: { query: "glacier ice", mode: "keyword", knowledge_source_ids: [source.id], limit: 5 } }), "search sources");
  check(found.total_results === found.results.length && found.results.length > 0, "source search results");
  const best = found.results[0]!;
  check(best.metadata.title === "Glacier guide" && best.metadata.knowledge_source_id === source.id && best.score > 0 && best.content.includes("glacier"), "source result");
  const documents = ok(await api.POST("/api/v1/knowledge/documents/search", { body: { query: "glacier", mode: "hybrid", source_ids: [source.id] } }), "search documents");
  const modeUsed: "semantic" | "keyword" | "hybrid" = documents.mode_used;
  const hit = documents.results[0]!;
  check(documents.total >= 1 && hit.normalized_score === 100 && hit.source_id === source.id && modeUsed.length > 0, "document search");
  const detail = ok(await api.GET("/api/v1/knowledge/documents/{document_id}", { params: { path: { document_id: hit.document_id } } }), "document");
  check(detail.content.includes("carving valleys") && detail.url.endsWith("/glaciers.html"), "document detail");
  const stats = ok(await api.GET("/api/v1/knowledge/{knowledge_source_id}/stats", { params: { path: { knowledge_source_id: source.id } } }), "source stats");
  check(stats.document_count === 1, "source stats");
  ok(await api.GET("/api/v1/knowledge/documents/stats"), "index stats");

  // Agents: the interface's lower-case access level, free-form configuration beside chat_ui, associations.
  const agent = ok(
    await api.POST("/api/v1/agents", {
      body: {
        name: "Support bot",
        instructions: "Answer from the glacier guide.",
        access_level: "private",
        configuration: { chat_ui: { greeting: "Hello", suggested_prompts: [{ title: "Ice", text: "How do glaciers move?" }] }, memory: { turns: 20 } },
        traits: [trait.id],
        tools: [tool.identifier],
        knowledge_sources: [source.id],
      },
    }),
    "create agent",
  );
  check(agent.access_level === "private" && agent.traits[0]!.name === "Patient" && agent.tools[0]!.tool_type === "api" && agent.knowledge_sources[0]!.id === source.id, "agent associations");
  const agentPath = { params: { path: { agent_id_or_identifier: agent.identifier } } };
  ok(await api.PUT("/api/v1/agents/{agent_id_or_identifier}", { ...agentPath, body: { temperature: 0.2 } }), "update agent");
  ok(await api.GET("/api/v1/agents/{agent_id_or_identifier}/traits", agentPath), "agent traits");
  ok(await api.POST("/api/v1/agents/{agent_id_or_identifier}/tools/knowledge-retrieval", agentPath), "attach retrieval");
  const directory = ok(await api.GET("/api/v1/agents/directory", { params: { query: { search: "support" } } }), "directory");
  check(directory.data[0]!.access === "private" && directory.pagination.total === 1, "directory item");

  // Teams: the interface's upper-case access level, free-form configuration; push with a document, then pull.
  const team = ok(await api.POST("/api/v1/teams", { body: { name: "Support", access_level: "PRIVATE", configuration: { escalation: { after_minutes: 30 } }, agent_ids: [agent.id] } }), "create team");
  check(team.access_level === "PRIVATE" && team.agents[0]!.id === agent.id, "team agents");
  const document: Schemas["TeamConfigurationDocumentInput"] = {
    name: "Research",
    description: "Pushed from a configuration document",
    agents: [
      {
        name: "Researcher",
        model: "gpt-4o-mini",
        system_prompt: "Find sources.",
        publication: { access_level: "public", chat_uri: "researcher" },
        configuration: { chat_ui: { greeting: "Ask me" }, citations: true },
        events: [{ type: "schedule", description: "Daily digest", enabled: true, config: { cron: "0 9 * * *" } }],
        traits: ["curious"],
      },
    ],
    tools: [{ name: "Search", type: "function", config: { engine: "internal" } }],
    traits: [{ name: "Curious", category: "tone", tags: [] }],
  };
  const pushed = ok(await api.POST("/api/v1/teams/push", { body: document }), "push");
  check(pushed.name === "Research" && pushed.agents[0]!.name === "Researcher", "pushed team");
  const pulled = ok(await api.GET("/api/v1/teams/{identifier}/pull", { params: { path: { identifier: pushed.identifier } } }), "pull");
  check(pulled.name === "Research" && (pulled.agents ?? []).length === 1, "pulled document");
  ok(await api.GET("/api/v1/teams/{team_id_or_identifier}", { params: { path: { team_id_or_identifier: team.identifier } } }), "get team");

  // Collected data: free-form attributes; facets and statistics.
  const entity = ok(await api.POST("/api/v1/entities", { body: { agent_id: agent.id, entity_type_name: "Lead", attributes: { company: "Acme", seats: 40, tags: ["warm"] } } }), "create entity");
  check(entity.attributes.company === "Acme" && entity.status === "new", "entity");
  const entities = ok(await api.GET("/api/v1/entities", { params: { query: { include_facets: true, status: "new" } } }), "list entities");
  check(entities.pagination.total === 1, "entity page");
  // Without group_by_agent the answer is StatsRead (the document says either shape: the client narrows).
  const entityStats = ok(await api.GET("/api/v1/entities/stats", { params: { query: { days: 30 } } }), "entity stats");
  check("status_counts" in entityStats && entityStats.status_counts.new === 1 && entityStats.total === 1, "entity stats");

  // Tasks: free-form input, a subtask, a dependency, the detail with its relations; a scheduled task's template.
  const task = ok(await api.POST("/api/v1/tasks", { body: { title: "Write digest", input: { topics: ["ice"], depth: 2 }, agent_id: agent.id, team_id: team.id } }), "create task");
  const subtask = ok(await api.POST("/api/v1/tasks", { body: { title: "Collect sources", parent_id: task.id } }), "create subtask");
  const taskPath = { params: { path: { task_id: task.id } } };
  ok(await api.POST("/api/v1/tasks/{task_id}/dependencies/{dependency_id}", { params: { path: { task_id: task.id, dependency_id: subtask.id } } }), "add dependency");
  const taskDetail = ok(await api.GET("/api/v1/tasks/{task_id}", taskPath), "task detail");
  check(taskDetail.input.depth === 2 && taskDetail.agent?.identifier === agent.identifier && taskDetail.dependencies[0]!.title === "Collect sources", "task relations");
  const subtasks = ok(await api.GET("/api/v1/tasks/{task_id}/subtasks", taskPath), "subtasks");
  check(subtasks[0]!.parent_id === task.id, "subtask");
  const schedule = ok(
    await api.POST("/api/v1/scheduled-tasks", { body: { name: "Weekly digest", schedule: "0 9 * * 1", timezone: "UTC", task_template: { title: "Digest", input: { week: true } } } }),
    "create schedule",
  );
  check(schedule.task_template.title === "Digest" && schedule.next_run_at !== null, "schedule");

  // The first agent's agent.created delivery, typed by the document's webhooks section, with a signature that
  // verifies. The pushed team created an agent too, and deliveries need not arrive in creation order.
  const firstAgentDelivery = () =>
    site.deliveries.find((d) => (JSON.parse(d.body) as AgentCreatedDelivery).data.identifier === agent.identifier);
  for (let i = 0; i < 60 && !firstAgentDelivery(); i++) await sleep(500);
  const delivery = firstAgentDelivery();
  if (!delivery) throw new Error("no agent.created delivery");
  const payload = JSON.parse(delivery.body) as AgentCreatedDelivery;
  check(payload.type === "agent.created", "delivery payload");
  const [id, timestamp, signature] = ["webhook-id", "webhook-timestamp", "webhook-signature"].map((h) => String(delivery.headers[h]));
  check(signature!.split(" ").includes(signatureOf(secret, id!, timestamp!, delivery.body)), "delivery signature");

  // Deletes answer 204 (no body).
  const removed = await api.DELETE("/api/v1/agents/{agent_id_or_identifier}", { params: { path: { agent_id_or_identifier: agent.identifier }, query: { force: true } } });
  check(removed.response.status === 204, "agent deleted");
  site.close();
  console.log("client flow passed");
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
