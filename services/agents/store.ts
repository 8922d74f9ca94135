import type { Connection } from "mongoose";
import type { PutTarget, UnitOfWork } from "../../lib/unit-of-work";
import { agentModel, type AgentRecord } from "./model";

/*
 * The agents collection as other services read it (through services/agents/index.ts) and as the agents service's
 * batch action writes it for them (lib/owner-writes.ts; docs/adr/0052-service-boundaries.md).
 */

/** An account's agents, all of them or those with these ids. */
export function accountAgents(db: Connection, accountId: number, ids?: number[]): Promise<AgentRecord[]> {
  const model = agentModel(db);
  // By id, in id order (an index range); all of them, in natural order (the account index, no sort).
  return (ids ? model.find({ account_id: accountId, _id: { $in: ids } }).sort({ _id: 1 }) : model.find({ account_id: accountId })).lean<AgentRecord[]>();
}

/** An agent with these fields: created, or updated where it differs; the change is in `uow`. */
export function putAgent(uow: UnitOfWork, db: Connection, accountId: number, target: PutTarget<AgentRecord>, fields: Partial<AgentRecord> & { name: string }): Promise<AgentRecord> {
  return uow.put(agentModel(db), accountId, target, fields, "agent");
}
