import type { Connection } from "mongoose";
import { KNOWLEDGE_SOURCES_COLLECTION } from "../../lib/collections";
import { toolModel } from "../tools/model";
import { traitModel } from "../traits/model";
import type { AgentRecord } from "./model";
import { publicPublication } from "./rules";
import { tenantFilter } from "../../lib/tenancy-guard";

type Ref = { id: number; identifier: string; name: string };

async function byId<T extends { _id: number }>(ids: number[], load: () => Promise<T[]>): Promise<Map<number, T>> {
  // Most agents have no knowledge sources (or tools): skip the round trip.
  if (!ids.length) return new Map();
  return new Map((await load()).map((r) => [r._id, r]));
}

/**
 * Agent records as clients see them, with traits, tools and knowledge sources resolved in one query each.
 * References to deleted records are skipped, so reading an agent never fails because a tool was deleted.
 */
export async function renderAgents(db: Connection, accountId: number, agents: AgentRecord[]) {
  const ids = (pick: (a: AgentRecord) => number[]) => [...new Set(agents.flatMap(pick))];
  const scope = (list: number[]) => ({ _id: { $in: list }, account_id: accountId });
  const [traitIds, toolIds, sourceIds] = [ids((a) => a.trait_ids), ids((a) => a.tool_ids), ids((a) => a.knowledge_source_ids)];
  const [traits, tools, sources] = await Promise.all([
    byId(traitIds, () => traitModel(db).find(scope(traitIds)).lean<{ _id: number; identifier: string; name: string; category: string }[]>()),
    byId(toolIds, () => toolModel(db).find(scope(toolIds)).lean<{ _id: number; identifier: string; name: string; tool_type: string }[]>()),
    byId(sourceIds, () =>
      db.collection(KNOWLEDGE_SOURCES_COLLECTION).find(tenantFilter(KNOWLEDGE_SOURCES_COLLECTION, scope(sourceIds)) as never, { projection: { identifier: 1, name: 1 } })
        .toArray() as unknown as Promise<{ _id: number; identifier: string; name: string }[]>),
  ]);
  const refs = <T extends { _id: number; identifier: string; name: string }>(list: number[], found: Map<number, T>, extra: (r: T) => object) =>
    list.flatMap((id) => {
      const r = found.get(id);
      return r ? [{ id: r._id, identifier: r.identifier, name: r.name, ...extra(r) } as Ref] : [];
    });

  return agents.map((a) => ({
    id: a._id,
    identifier: a.identifier,
    name: a.name,
    description: a.description,
    instructions: a.instructions,
    model: a.model,
    temperature: a.temperature,
    max_tokens: a.max_tokens,
    access_level: a.access_level,
    image_url: a.image_url,
    configuration: a.configuration ?? {},
    traits: refs(a.trait_ids, traits, (t) => ({ category: t.category })),
    tools: refs(a.tool_ids, tools, (t) => ({ tool_type: t.tool_type })),
    knowledge_sources: refs(a.knowledge_source_ids, sources, () => ({})),
    publication: publicPublication(a.publication),
    events: a.events ?? [],
    delegations: a.delegations ?? [],
    account_id: a.account_id,
    created_at: a.created_at,
    updated_at: a.updated_at,
  }));
}

export type AgentView = Awaited<ReturnType<typeof renderAgents>>[number];
