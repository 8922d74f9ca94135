import type { Connection } from "mongoose";
import { knowledgeSourceModel } from "../knowledge";
import { toolModel } from "../tools";
import { traitModel } from "../traits";
import type { AgentRecord } from "./model";
import { publicPublication } from "./rules";
import type { CountedCache } from "../../lib/counted-cache";

/** What a reference shows of a trait or a tool. */
const TRAIT_REF = { identifier: 1, name: 1, category: 1 };
const TOOL_REF = { identifier: 1, name: 1, tool_type: 1 };
const SOURCE_REF = { identifier: 1, name: 1 };

type Ref = { id: number; identifier: string; name: string };
type Referenced = { _id: number; identifier: string; name: string };

/**
 * Trait and tool references read under the account's count of trait and tool changes (the sum of the two counts,
 * which either change raises), so a cached one is what the database holds; null marks a deleted record.
 */
export interface ReferenceCache {
  entries: CountedCache<Referenced | null>;
  count: number;
}

/** The records with these ids, from `cache` where it holds them and one query (`load`) for the rest. */
async function byId<T extends Referenced>(
  accountId: number,
  kind: string,
  ids: number[],
  load: (ids: number[]) => Promise<T[]>,
  cache?: ReferenceCache,
): Promise<Map<number, T>> {
  const found = new Map<number, T>();
  const missing = cache ? ids.filter((id) => {
    const entry = cache.entries.get(accountId, cache.count, `${kind}/${id}`);
    if (entry) found.set(id, entry as T);
    return entry === undefined;
  }) : ids;
  // Most agents have no knowledge sources (or tools): skip the round trip.
  if (!missing.length) return found;
  const loaded = new Map((await load(missing)).map((r) => [r._id, r]));
  for (const id of missing) {
    const record = loaded.get(id);
    if (record) found.set(id, record);
    cache?.entries.set(accountId, cache.count, `${kind}/${id}`, record ?? null);
  }
  return found;
}

/**
 * Agent records as clients see them, with traits, tools and knowledge sources resolved in one query each (traits
 * and tools from `cache` where it holds them). References to deleted records are skipped, so reading an agent never
 * fails because a tool was deleted.
 */
export async function renderAgents(db: Connection, accountId: number, agents: AgentRecord[], cache?: ReferenceCache) {
  const ids = (pick: (a: AgentRecord) => number[]) => [...new Set(agents.flatMap(pick))];
  const scope = (list: number[]) => ({ _id: { $in: list }, account_id: accountId });
  const [traitIds, toolIds, sourceIds] = [ids((a) => a.trait_ids), ids((a) => a.tool_ids), ids((a) => a.knowledge_source_ids)];
  const [traits, tools, sources] = await Promise.all([
    byId(accountId, "traits", traitIds, (missing) => traitModel(db).find(scope(missing), TRAIT_REF).lean<(Referenced & { category: string })[]>(), cache),
    byId(accountId, "tools", toolIds, (missing) => toolModel(db).find(scope(missing), TOOL_REF).lean<(Referenced & { tool_type: string })[]>(), cache),
    byId(accountId, "knowledge_sources", sourceIds, (missing) => knowledgeSourceModel(db).find(scope(missing), SOURCE_REF).lean<Referenced[]>()),
  ]);
  const refs = <T extends Referenced>(list: number[], found: Map<number, T>, extra: (r: T) => object) =>
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
