import type { FieldProblem } from "../../lib/errors";
import { definedField } from "../../lib/unit-of-work";
import { slugify } from "../../lib/ids";
import { DEFAULT_TEMPERATURE, mergeConfiguration, type AgentRecord, type Publication } from "../agents";
import type { KnowledgeConfig } from "./model";

type Json = Record<string, unknown>;

export interface PublicationConfig {
  access_level: Publication["access_level"];
  chat_uri?: string;
  domain?: string;
  password?: string;
}

export interface AgentConfig {
  name: string;
  description?: string | null;
  system_prompt?: string | null;
  model: string;
  temperature?: number;
  max_tokens?: number | null;
  image_url?: string | null;
  publication?: PublicationConfig;
  configuration?: Json;
  events?: Json[];
  traits?: string[];
  delegations?: Json[];
}

export interface ToolConfig {
  name: string;
  description?: string | null;
  type: string;
  config?: Json | null;
}

export interface TraitConfig {
  name: string;
  category?: string | null;
  description?: string | null;
  tags?: string[] | null;
}

/** The team configuration document: push takes it, pull returns it. */
export interface TeamDocument {
  name: string;
  description?: string | null;
  agents?: AgentConfig[];
  tools?: ToolConfig[];
  knowledge?: KnowledgeConfig[];
  traits?: TraitConfig[];
  overrides?: { global?: Json; agent_specific?: Record<string, Json> };
  filters?: {
    include_components?: string[];
    exclude_components?: string[];
    agent_filters?: { include_traits?: string[]; exclude_traits?: string[] };
  };
}

/** Agent fields an override may set; system_prompt_suffix is appended to system_prompt instead. */
const OVERRIDABLE = ["description", "system_prompt", "model", "temperature", "max_tokens", "image_url"] as const;
const SECTIONS = ["agents", "tools", "knowledge", "traits"] as const;

/**
 * Applies `filters`: a component is kept when include_components is empty or names its section or its
 * name, and exclude_components names neither; agents must also carry one of include_traits (when given)
 * and none of exclude_traits, a trait being the same whether written by name or by identifier.
 */
export function applyFilters(doc: TeamDocument): TeamDocument {
  const include = doc.filters?.include_components ?? [];
  const exclude = doc.filters?.exclude_components ?? [];
  const keep = (section: string, name: string) =>
    (!include.length || include.includes(section) || include.includes(name)) && !exclude.includes(section) && !exclude.includes(name);
  // A trait is written by name or by identifier alike ("Nice", "nice"): filters compare the identifiers they give.
  const includeTraits = (doc.filters?.agent_filters?.include_traits ?? []).map(slugify);
  const excludeTraits = (doc.filters?.agent_filters?.exclude_traits ?? []).map(slugify);
  const out: TeamDocument = { ...doc };
  for (const section of SECTIONS) {
    const items = (doc[section] ?? []) as { name: string }[];
    (out as unknown as Record<string, unknown>)[section] = items.filter((item) => keep(section, item.name));
  }
  out.agents = (out.agents ?? []).filter((agent) => {
    const traits = (agent.traits ?? []).map(slugify);
    return (!includeTraits.length || traits.some((t) => includeTraits.includes(t))) && !traits.some((t) => excludeTraits.includes(t));
  });
  return out;
}

/** Applies `overrides`: global values first, then the agent's own, with system_prompt_suffix appended. */
export function applyOverrides(agent: AgentConfig, overrides: TeamDocument["overrides"]): AgentConfig {
  const out: AgentConfig = { ...agent };
  for (const source of [overrides?.global ?? {}, overrides?.agent_specific?.[agent.name] ?? {}]) {
    for (const key of OVERRIDABLE) if (source[key] !== undefined) (out as unknown as Json)[key] = source[key];
    const suffix = source.system_prompt_suffix;
    if (typeof suffix === "string" && suffix) out.system_prompt = out.system_prompt ? `${out.system_prompt}\n\n${suffix}` : suffix;
  }
  return out;
}

/** The document push actually applies: filters, then overrides. */
export function effectiveDocument(doc: TeamDocument): TeamDocument {
  const filtered = applyFilters(doc);
  return { ...filtered, agents: (filtered.agents ?? []).map((a) => applyOverrides(a, doc.overrides)) };
}

/** Finds the trait definition or existing trait an agent's trait reference names. */
export function traitMatches(ref: string, trait: { name: string; identifier?: string }): boolean {
  return trait.name === ref || trait.identifier === ref || slugify(trait.name) === ref;
}

/** Components a document names twice in one section: push names them by name, so it refuses these (and pull cannot express them). */
export function duplicateNames(doc: TeamDocument): FieldProblem[] {
  return (["agents", "tools", "traits", "knowledge"] as const).flatMap((section) => {
    const seen = new Set<string>();
    const noun = section === "knowledge" ? "knowledge" : section.slice(0, -1);
    return ((doc[section] ?? []) as { name: string }[]).flatMap((item, i) => {
      const twice = seen.has(item.name);
      seen.add(item.name);
      return twice ? [{ field: `${section}[${i}].name`, message: `Duplicate ${noun} name "${item.name}"`, type: "duplicate" }] : [];
    });
  });
}

/** Cross-reference problems push must refuse with 400 (the structure is already valid). */
export function referenceProblems(
  doc: TeamDocument,
  known: { traits: { name: string; identifier: string }[]; domains: string[] },
): FieldProblem[] {
  const problems: FieldProblem[] = duplicateNames(doc);
  // An override for an agent the document does not have would apply to nothing: most likely a misspelt name.
  for (const name of Object.keys(doc.overrides?.agent_specific ?? {})) {
    if (!(doc.agents ?? []).some((agent) => agent.name === name)) {
      problems.push({ field: `overrides.agent_specific.${name}`, message: `No agent named "${name}" in this document`, type: "reference" });
    }
  }
  (doc.agents ?? []).forEach((agent, i) => {
    (agent.traits ?? []).forEach((ref, j) => {
      const defined = (doc.traits ?? []).some((t) => traitMatches(ref, t)) || known.traits.some((t) => traitMatches(ref, t));
      if (!defined) problems.push({ field: `agents[${i}].traits[${j}]`, message: `Unknown trait "${ref}"`, type: "reference" });
    });
    const domain = agent.publication?.domain;
    if (domain && !known.domains.includes(domain.toLowerCase())) {
      problems.push({ field: `agents[${i}].publication.domain`, message: `Domain "${domain}" does not exist in this account`, type: "reference" });
    }
  });
  return problems;
}

/**
 * Trait references of the agents a push keeps whose definitions its filters leave out, where the account has no
 * such trait either: the agent would name a trait nothing writes. `raw` is the document as written (locations point
 * into it), `doc` the one filters and overrides made; referenceProblems already found each reference in one of them.
 */
export function filteredOutTraits(raw: TeamDocument, doc: TeamDocument, known: { traits: { name: string; identifier: string }[] }): FieldProblem[] {
  return (doc.agents ?? []).flatMap((agent) => {
    const i = (raw.agents ?? []).findIndex((a) => a.name === agent.name);
    return (agent.traits ?? []).flatMap((ref, j) =>
      (doc.traits ?? []).some((t) => traitMatches(ref, t)) || known.traits.some((t) => traitMatches(ref, t))
        ? []
        : [{ field: `agents[${i}].traits[${j}]`, message: `Trait "${ref}" is defined in this document but its filters leave the definition out, and the account has no such trait`, type: "reference" }],
    );
  });
}

/**
 * The agent fields a push writes, following the merge rules for an existing agent: configuration
 * (chat_ui included) deep-merged with null removing a field, image_url replaced in full, publication
 * replaced per field, and every optional field not provided keeping its value. The text fields, max_tokens and
 * image_url given as null are cleared, as REST's update clears them.
 */
export function mergedAgentFields(
  existing: AgentRecord | null,
  config: AgentConfig,
  resolved: { traitIds?: number[]; passwordHash?: string },
): Partial<AgentRecord> {
  const keep = <K extends keyof AgentRecord>(key: K, fallback: AgentRecord[K]): AgentRecord[K] =>
    existing ? existing[key] : fallback;
  let publication = existing?.publication ?? null;
  if (config.publication) {
    const { password: _password, ...fields } = config.publication;
    publication = { ...(publication ?? {}), ...fields } as Publication;
    if (resolved.passwordHash) publication.password_hash = resolved.passwordHash;
  }
  return {
    name: config.name,
    description: definedField(existing, "description", config.description, null),
    instructions: definedField(existing, "instructions", config.system_prompt, null),
    model: config.model,
    temperature: config.temperature ?? keep("temperature", DEFAULT_TEMPERATURE),
    max_tokens: definedField(existing, "max_tokens", config.max_tokens, null),
    image_url: definedField(existing, "image_url", config.image_url, null),
    access_level: publication?.access_level ?? keep("access_level", "private"),
    publication,
    configuration: config.configuration ? mergeConfiguration(existing?.configuration ?? {}, config.configuration) : keep("configuration", {}),
    events: config.events ?? keep("events", []),
    delegations: config.delegations ?? keep("delegations", []),
    trait_ids: resolved.traitIds ?? keep("trait_ids", []),
  };
}

/** Drops undefined and null members so pulled documents carry only what is set. */
export function compact<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined && v !== null)) as T;
}

/** An agent as pull returns it: the fields push accepts, secrets left out. */
export function agentToConfig(agent: AgentRecord, traitIdentifiers: string[]): AgentConfig {
  const publication = agent.publication
    ? compact({ access_level: agent.publication.access_level, chat_uri: agent.publication.chat_uri ?? undefined, domain: agent.publication.domain ?? undefined })
    : undefined;
  return compact({
    name: agent.name,
    description: agent.description ?? undefined,
    system_prompt: agent.instructions ?? undefined,
    model: agent.model,
    temperature: agent.temperature,
    max_tokens: agent.max_tokens ?? undefined,
    image_url: agent.image_url ?? undefined,
    publication,
    configuration: agent.configuration ?? {},
    events: agent.events ?? [],
    traits: traitIdentifiers,
    delegations: agent.delegations ?? [],
  });
}
