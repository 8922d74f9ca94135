import type { Model } from "mongoose";
import type { EntityRecord } from "./types";

/**
 * Copies an agent's current name into its records that still carry another: `agent_name` and the search text
 * built from it (each record is saved, so the model derives the text again). Idempotent, and order does not
 * matter: the name given is read when the agent.updated event is handled, not carried by the event. The records'
 * own fields did not change, so updated_at stays and the agent's event stands for the change (as agent.deleted
 * does for the records it removes). Returns how many records were renamed.
 */
export async function followAgentName(entities: Model<EntityRecord>, accountId: number, agentId: number, name: string): Promise<number> {
  let renamed = 0;
  for await (const record of entities.find({ account_id: accountId, agent_id: agentId, agent_name: { $ne: name } })) {
    record.agent_name = name;
    await record.save({ timestamps: false });
    renamed++;
  }
  return renamed;
}
