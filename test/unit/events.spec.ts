import { CONSUMER_GROUPS, USER_REGISTERED, WEBHOOK_EVENT_TYPES } from "../../lib/event-types";
import { changeOf, eventIdFor, groupsFor, newEventId } from "../../lib/events";

describe("event log rules", () => {
  it("names a change by type, account and record", () => {
    expect(changeOf("agent.updated", "agents", { _id: 12, account_id: 3 })).toEqual({ type: "agent.updated", accountId: 3, record: ["agents", 12] });
  });

  it("makes an event pending for every consumer group that handles its type", () => {
    expect(groupsFor("agent.deleted")).toEqual(["webhooks", "teams"]);
    expect(groupsFor("agent.created")).toEqual(["webhooks"]);
    expect(groupsFor("agent.updated")).toEqual(["webhooks", "entities"]);
    expect(groupsFor(USER_REGISTERED)).toEqual(["tasks"]);
    expect(groupsFor("something.else")).toEqual([]);
    expect(Object.keys(CONSUMER_GROUPS)).toEqual(["webhooks", "entities", "teams", "tasks"]);
  });

  it("lets webhooks subscribe to every resource change, each named <resource>.<change>", () => {
    for (const resource of ["agent", "team", "tool", "trait", "api_key", "knowledge_source", "entity", "task", "scheduled_task", "webhook_subscription"]) {
      for (const change of ["created", "updated", "deleted"]) expect(WEBHOOK_EVENT_TYPES).toContain(`${resource}.${change}`);
    }
    expect(new Set(WEBHOOK_EVENT_TYPES).size).toBe(WEBHOOK_EVENT_TYPES.length);
  });

  it("gives random event ids, and the same id to an event that happens once per record", () => {
    expect(newEventId()).toMatch(/^evt_[A-Za-z0-9_-]{24}$/);
    expect(newEventId()).not.toBe(newEventId());
    expect(eventIdFor(USER_REGISTERED, "users/7")).toBe(eventIdFor(USER_REGISTERED, "users/7"));
    expect(eventIdFor(USER_REGISTERED, "users/7")).not.toBe(eventIdFor(USER_REGISTERED, "users/8"));
    expect(eventIdFor(USER_REGISTERED, "users/7")).toMatch(/^evt_[A-Za-z0-9_-]{24}$/);
    // The same ids across versions: a relay replayed by a newer process, or a create settled by one, commits nothing twice.
    expect(eventIdFor(USER_REGISTERED, "users/7")).toBe("evt_koA2kqhpnv5JpGQOn8fqcu3y");
  });
});
