import type { Connection, HydratedDocument } from "mongoose";
import { agentModel } from "../agents";
import { teamModel } from "../teams";
import { taskModel, type TaskRecord, type TaskStatus } from "./model";

type Summary = { _id: number; title: string; status: TaskStatus };
type Named = { _id: number; name: string; identifier: string };

const taskSummary = (t: Summary) => ({ id: t._id, title: t.title, status: t.status });
const namedSummary = (r: Named) => ({ id: r._id, name: r.name, identifier: r.identifier });

/**
 * A task with its relations resolved (GET /tasks/{id}): parent, team and agent as short summaries (null when
 * unset or deleted since), dependencies in link order, and how many subtasks it has.
 */
export async function taskDetail(db: Connection, task: HydratedDocument<TaskRecord>) {
  const scope = { account_id: task.account_id };
  const tasks = taskModel(db);
  const [parent, team, agent, dependencies, subtaskCount] = await Promise.all([
    task.parent_id ? tasks.findOne({ _id: task.parent_id, ...scope }, { title: 1, status: 1 }).lean<Summary>() : null,
    task.team_id ? teamModel(db).findOne({ _id: task.team_id, ...scope }, { name: 1, identifier: 1 }).lean<Named>() : null,
    task.agent_id ? agentModel(db).findOne({ _id: task.agent_id, ...scope }, { name: 1, identifier: 1 }).lean<Named>() : null,
    task.dependency_ids.length ? tasks.find({ _id: { $in: task.dependency_ids }, ...scope }, { title: 1, status: 1 }).lean<Summary[]>() : [],
    tasks.countDocuments({ ...scope, parent_id: task._id }),
  ]);
  const byId = new Map(dependencies.map((d) => [d._id, d]));
  return {
    ...task.toJSON(),
    parent: parent ? taskSummary(parent) : null,
    team: team ? namedSummary(team) : null,
    agent: agent ? namedSummary(agent) : null,
    dependencies: task.dependency_ids.flatMap((id) => (byId.has(id) ? [taskSummary(byId.get(id)!)] : [])),
    subtask_count: subtaskCount,
  };
}
