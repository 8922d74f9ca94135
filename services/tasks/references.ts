import type { Connection } from "mongoose";
import type { FieldProblem } from "../../lib/errors";
import { agentModel } from "../agents";
import { teamModel } from "../teams";

/**
 * Problems with the team and agent a task (or a schedule's task template) is assigned to: each must be a record
 * of the caller's account; another account's record reads as unknown, so nothing about it leaks. `prefix`
 * names the enclosing field (e.g. "task_template.").
 */
export async function assigneeProblems(
  db: Connection,
  accountId: number,
  fields: { team_id?: number | null; agent_id?: number | null },
  prefix = "",
): Promise<FieldProblem[]> {
  const checks = [
    { field: "team_id", id: fields.team_id, label: "team", exists: (id: number) => teamModel(db).exists({ _id: id, account_id: accountId }) },
    { field: "agent_id", id: fields.agent_id, label: "agent", exists: (id: number) => agentModel(db).exists({ _id: id, account_id: accountId }) },
  ];
  const found = await Promise.all(checks.map((c) => (typeof c.id === "number" ? c.exists(c.id) : true)));
  return checks.flatMap((c, i) =>
    found[i] ? [] : [{ field: `${prefix}${c.field}`, message: `No ${c.label} ${c.id} in this account`, type: "reference" }],
  );
}
