import { escapeRegex } from "../../lib/regex";
import { ENTITY_STATUSES, type EntityStatus, type Provenance } from "./types";

const DAY_MS = 86_400_000;
/** Separates the parts of search_text so a search term never matches across two fields' boundary words. */
const SEARCH_SEPARATOR = "\n";

/** The filters the list, facets and export share (and stats, with agent_id and days only). */
export interface EntityFilters {
  agent_id?: number;
  template_name?: string;
  days?: number;
  status?: EntityStatus;
  search?: string;
}

/** Filters with the account and the template lookup already settled, ready for buildEntityFilter. */
export interface ResolvedFilters {
  accountId: number;
  filters: EntityFilters;
  /** The template key to filter on, or null when no template_name was given or none of the account's records matches it. */
  templateKey: string | null;
  now: Date;
}

/** Every value inside an attributes object (nested objects and arrays included) as text. */
function attributeValues(value: unknown): string[] {
  if (value === null || value === undefined) return [];
  if (Array.isArray(value)) return value.flatMap(attributeValues);
  if (typeof value === "object") return Object.values(value).flatMap(attributeValues);
  return [String(value)];
}

/** What `search` matches against, lower-cased: attribute values, agent name and data type name. */
export function searchText(agentName: string, typeName: string, attributes: Record<string, unknown>): string {
  return [agentName, typeName, ...attributeValues(attributes)].filter(Boolean).join(SEARCH_SEPARATOR).toLowerCase();
}

/** Templates are matched by name, ignoring case and surrounding spaces. */
export function templateKey(name: string | undefined | null): string {
  return (name ?? "").trim().toLowerCase();
}

/** Attribute names in export column order. */
export function attributeKeys(attributes: Record<string, unknown>): string[] {
  return Object.keys(attributes).sort();
}

/** The instant a `days` window starts. */
export function windowStart(now: Date, days: number): Date {
  return new Date(now.getTime() - days * DAY_MS);
}

/**
 * The one MongoDB filter behind list, facets, stats and export. Facets drop the template and the status
 * condition (`omit`), count once, and apply each of the two to the other facet's counts (facetsRead).
 */
export function buildEntityFilter(resolved: ResolvedFilters, omit: { template?: boolean; status?: boolean } = {}): Record<string, unknown> {
  const { accountId, filters, templateKey: key, now } = resolved;
  const query: Record<string, unknown> = { account_id: accountId };
  if (filters.agent_id !== undefined) query.agent_id = filters.agent_id;
  if (key && !omit.template) query.entity_type_key = key;
  if (filters.status && !omit.status) query.status = filters.status;
  if (filters.days !== undefined) query.created_at = { $gte: windowStart(now, filters.days) };
  const search = filters.search?.trim().toLowerCase();
  if (search) query.search_text = { $regex: escapeRegex(search) };
  return query;
}

/** Provenance with every message_id that is not a message of the record's session replaced by null. */
export function verifyProvenance(provenance: Provenance, sessionMessageIds: ReadonlySet<number>): Provenance {
  return Object.fromEntries(
    Object.entries(provenance).map(([attribute, { message_id, quote }]) => [
      attribute,
      { message_id: typeof message_id === "number" && sessionMessageIds.has(message_id) ? message_id : null, quote },
    ]),
  );
}

/** Message ids a provenance cites. */
export function citedMessageIds(provenance: Provenance | null): number[] {
  return Object.values(provenance ?? {}).flatMap((p) => (typeof p?.message_id === "number" ? [p.message_id] : []));
}

/** One group of a counting aggregate: records of one agent, status and template. */
export interface CountCell {
  agent_id: number;
  status: string;
  template_id: number | null;
  template_name: string;
  count: number;
}

/** One group of the facets' aggregate: records of one status and template (with its filter key). */
export interface FacetCell {
  status: string;
  template_key: string;
  template_id: number | null;
  template_name: string;
  count: number;
}

export interface TemplateCount {
  template_id: number | null;
  template_name: string;
  count: number;
}

/** Counts per status, every status present (zero when none). */
export function statusCounts(cells: Pick<CountCell, "status" | "count">[]): Record<EntityStatus, number> {
  const counts = Object.fromEntries(ENTITY_STATUSES.map((s) => [s, 0])) as Record<EntityStatus, number>;
  for (const cell of cells) if (cell.status in counts) counts[cell.status as EntityStatus] += cell.count;
  return counts;
}

/** Counts per template (id and name), nonzero only, largest first, then by name. */
export function typeCounts(cells: TemplateCount[]): TemplateCount[] {
  const byTemplate = new Map<string, TemplateCount>();
  for (const { template_id, template_name, count } of cells) {
    const key = JSON.stringify([template_id, template_name]);
    const entry = byTemplate.get(key) ?? { template_id, template_name, count: 0 };
    entry.count += count;
    byTemplate.set(key, entry);
  }
  return [...byTemplate.values()]
    .filter((t) => t.count > 0)
    .sort((a, b) => b.count - a.count || a.template_name.localeCompare(b.template_name) || (a.template_id ?? 0) - (b.template_id ?? 0));
}

const total = (cells: CountCell[]) => cells.reduce((sum, c) => sum + c.count, 0);

/** Cells grouped by agent, agents with the most records first (then by id). */
function byAgent(cells: CountCell[]): [number, CountCell[]][] {
  const groups = new Map<number, CountCell[]>();
  for (const cell of cells) groups.set(cell.agent_id, [...(groups.get(cell.agent_id) ?? []), cell]);
  return [...groups.entries()].sort(([idA, a], [idB, b]) => total(b) - total(a) || idA - idB);
}

/** StatsRead. `agentNames` maps agent ids to the names to show. */
export function statsRead(cells: CountCell[], agentNames: ReadonlyMap<number, string>, periodDays: number | null) {
  return {
    total: total(cells),
    status_counts: statusCounts(cells),
    type_counts: typeCounts(cells),
    agent_counts: byAgent(cells).map(([agentId, own]) => ({ agent_id: agentId, agent_name: agentNames.get(agentId) ?? "", count: total(own) })),
    period_days: periodDays,
  };
}

/** StatsByAgentRead: the same counts broken down per agent. */
export function statsByAgentRead(cells: CountCell[], agentNames: ReadonlyMap<number, string>, periodDays: number | null) {
  return {
    agents: byAgent(cells).map(([agentId, own]) => ({
      agent_id: agentId,
      agent_name: agentNames.get(agentId) ?? "",
      status_counts: statusCounts(own),
      type_counts: typeCounts(own),
      total: total(own),
    })),
    total: total(cells),
    period_days: periodDays,
  };
}

/**
 * EntityFacets from one count of the records matched without the template and the status filter: the types keep
 * the status filter and the statuses keep the template filter (buildEntityFilter's conditions, applied to the cells).
 */
export function facetsRead(cells: FacetCell[], resolved: ResolvedFilters) {
  const { filters, templateKey: key } = resolved;
  return {
    entity_types: typeCounts(cells.filter((cell) => !filters.status || cell.status === filters.status)),
    statuses: statusCounts(cells.filter((cell) => !key || cell.template_key === key)),
  };
}

/** The answer to an unconfirmed bulk delete: what would go, and how to confirm. Nothing is deleted. */
export function deletionPreview(count: number) {
  return {
    count,
    warning: `This permanently deletes ${count} collected data record${count === 1 ? "" : "s"}; it cannot be undone.`,
    confirm_instruction: "Repeat the call with the same entity_ids and confirmed=true to delete them.",
  };
}
