import type { Connection } from "mongoose";
import type { UnitOfWork } from "../../lib/unit-of-work";
import { agentModel, type AgentRecord } from "./model";
import { renderAgents } from "./render";

/*
 * The agents collection as other services use it (the agents service owns it; docs/adr/0022-layout-one-writer-tenancy-guard.md,
 * "One writer per collection"): their reads, their writes within a unit of work, and an agent's change-event data.
 */

/** An account's agents, all of them or those with these ids. */
export function accountAgents(db: Connection, accountId: number, ids?: number[]): Promise<AgentRecord[]> {
  const model = agentModel(db);
  // By id, in id order (an index range); all of them, in natural order (the account index, no sort).
  return (ids ? model.find({ account_id: accountId, _id: { $in: ids } }).sort({ _id: 1 }) : model.find({ account_id: accountId })).lean<AgentRecord[]>();
}

/** An agent with these fields: created, or updated where it differs; the change is in `uow`. */
export function putAgent(uow: UnitOfWork, db: Connection, accountId: number, existing: AgentRecord | null, fields: Partial<AgentRecord> & { name: string }): Promise<AgentRecord> {
  return uow.put(agentModel(db), accountId, existing, fields, "agent");
}

/** An agent's change-event data: the record as the API shows it, references resolved. */
export async function agentEventData(db: Connection, agent: object): Promise<object> {
  const record = agent as AgentRecord;
  return (await renderAgents(db, record.account_id, [record]))[0]!;
}
