/*
 * The agents service's public face (docs/adr/0052-service-boundaries.md): the only file of services/agents/ another
 * service may import. Everything else here is the service's own. The agents collection has one writer, this
 * service: others read it through `agentModel`/`accountAgents` and write it only through its batch actions
 * (`agents.putBatch`, `agents.commitBatch`, `agents.undoBatch`; lib/owner-writes.ts), as team push does.
 */

/** The agents collection: its model (for reads and index registration) and record types. */
export { agentModel, type AgentRecord, type Publication } from "./model";
/** An account's agents, all of them or those with these ids. */
export { accountAgents } from "./store";
/** Agents as the API shows them, references resolved (teams render their agents with it). */
export { renderAgents } from "./render";
/** Agent rules a team configuration applies: the default temperature and the configuration merge. */
export { DEFAULT_TEMPERATURE, mergeConfiguration } from "./rules";
/** The agents resource (its read schema is embedded in a team) and the chat UI rule a team document reuses. */
export { agents, chatUiRule } from "./resource";
