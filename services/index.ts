import type { ServiceSchema } from "moleculer";
import type { Config } from "../lib/config";
import GatewayService from "./gateway/gateway.service";
import UsersService from "./users/users.service";
import ApiKeysService from "./api-keys/api-keys.service";
import AgentsService from "./agents/agents.service";
import ToolsService from "./tools/tools.service";
import TraitsService from "./traits/traits.service";
import TeamsService from "./teams/teams.service";
import SearchService from "./search/search.service";
import KnowledgeService from "./knowledge/knowledge.service";
import KnowledgeLoaderService from "./knowledge-loader/knowledge-loader.service";
import EntitiesService from "./entities/entities.service";
import TasksService from "./tasks/tasks.service";
import SchedulerService from "./scheduler/scheduler.service";
import WebhooksService from "./webhooks/webhooks.service";
import McpService from "./mcp/mcp.service";

/** Every service the image can run, by name; SERVICES picks a subset per process. */
export const SERVICE_REGISTRY: Record<string, ServiceSchema<any, any, any>> = {
  gateway: GatewayService,
  users: UsersService,
  "api-keys": ApiKeysService,
  agents: AgentsService,
  tools: ToolsService,
  traits: TraitsService,
  teams: TeamsService,
  search: SearchService,
  knowledge: KnowledgeService,
  "knowledge-loader": KnowledgeLoaderService,
  entities: EntitiesService,
  tasks: TasksService,
  scheduler: SchedulerService,
  webhooks: WebhooksService,
  mcp: McpService,
};

/**
 * A service with the configuration tree as its `config` setting: services read their settings from
 * this.settings.config, never from the environment. $secureSettings keeps it (secrets included) out of the
 * service descriptions other nodes receive.
 */
export function configured<S extends ServiceSchema<any, any, any>>(schema: S, config: Config): S {
  const settings = (schema.settings ?? {}) as { $secureSettings?: string[] };
  return { ...schema, settings: { ...settings, config, $secureSettings: [...(settings.$secureSettings ?? []), "config"] } };
}

/** The schemas named in `names` (all of them when empty); unknown names are a configuration error. */
export function selectServices(names: string[]): ServiceSchema<any, any, any>[] {
  if (!names.length) return Object.values(SERVICE_REGISTRY);
  const unknown = names.filter((n) => !SERVICE_REGISTRY[n]);
  if (unknown.length) {
    throw new Error(`Unknown service(s) in SERVICES: ${unknown.join(", ")}. Known: ${Object.keys(SERVICE_REGISTRY).join(", ")}`);
  }
  return names.map((n) => SERVICE_REGISTRY[n]!);
}
