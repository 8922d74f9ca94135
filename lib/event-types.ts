/**
 * Every change event the platform records, `<resource>.<change>` (Standard Webhooks recommends hierarchical,
 * full-stop delimited names), and which consumer groups read which of them from the event log.
 */
const CRUD = ["created", "updated", "deleted"] as const;
const crud = (resource: string) => CRUD.map((change) => `${resource}.${change}`);

/**
 * Event types a webhook subscription can receive: every resource change (subscriptions' own included, as GitHub
 * pings a new hook), how knowledge loads end, and what a refresh changed.
 */
export const WEBHOOK_EVENT_TYPES = [
  ...crud("agent"),
  ...crud("team"),
  ...crud("tool"),
  ...crud("trait"),
  ...crud("api_key"),
  ...crud("knowledge_source"),
  "knowledge_source.loaded",
  "knowledge_source.failed",
  "knowledge_source.partial",
  "knowledge_source.refreshed",
  ...crud("entity"),
  ...crud("task"),
  ...crud("scheduled_task"),
  ...crud("webhook_subscription"),
] as const;

/**
 * The response schema (OpenAPI component, lib/resource.ts) of the record each resource's events carry as data:
 * the record as the API shows it after the change; `.deleted` events carry only its {id}.
 */
const EVENT_RECORD_SCHEMAS: Record<string, string> = {
  agent: "Agent",
  team: "Team",
  tool: "Tool",
  trait: "Trait",
  api_key: "AccountApiKey",
  knowledge_source: "KnowledgeSource",
  entity: "EntityDetail",
  task: "Task",
  scheduled_task: "ScheduledTask",
  webhook_subscription: "WebhookSubscription",
};

/** Each webhook event type with the schema of its data (the `webhooks` section of the OpenAPI document). */
export const WEBHOOK_EVENTS = WEBHOOK_EVENT_TYPES.map((type) => ({ type, record: EVENT_RECORD_SCHEMAS[type.slice(0, type.lastIndexOf("."))]! }));

/** Emitted once per created user; drives the verify-email automation and the onboarding task. */
export const USER_REGISTERED = "user.registered";

/** A consumer group: the event types it handles, and whether it acts only for some accounts. */
export interface ConsumerGroup {
  handles(type: string): boolean;
  /**
   * The collection an account must hold a record of for this group to act on its events (a group with nothing to
   * do for an account without one gets none of its events).
   */
  onlyForAccountsWith?: string;
}

/**
 * Consumer groups and the types each handles. An event is pending for every group listed for its type (and its
 * account, see onlyForAccountsWith) from the moment it is committed, whether or not a replica of that group runs
 * then, so a group that is down catches up when it starts.
 */
export const CONSUMER_GROUPS: Record<string, ConsumerGroup> = {
  /** Queues a delivery per matching subscription: nothing to do in an account without subscriptions. */
  webhooks: { handles: (type) => (WEBHOOK_EVENT_TYPES as readonly string[]).includes(type), onlyForAccountsWith: "webhook_subscriptions" },
  /** A renamed agent's collected-data records take its new name. */
  entities: { handles: (type) => type === "agent.updated" },
  /** A deleted agent leaves its teams. */
  teams: { handles: (type) => type === "agent.deleted" },
  /** The onboarding task of a new user. */
  tasks: { handles: (type) => type === USER_REGISTERED },
};
