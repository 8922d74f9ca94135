import type { Connection } from "mongoose";
import { ERRORS, type FieldProblem } from "../../lib/errors";
import { slugify } from "../../lib/ids";
import { UnitOfWork } from "../../lib/unit-of-work";
import { isReplanError, type OwnerWrites } from "../../lib/owner-writes";
import { hashPassword, verifyPassword } from "../../lib/auth/passwords";
import { accountAgents, type AgentRecord } from "../agents";
import { accountTools, type ToolRecord } from "../tools";
import { accountTraits, type TraitRecord } from "../traits";
import { documentProblems } from "./config-schema";
import {
  agentToConfig,
  compact,
  effectiveDocument,
  mergedAgentFields,
  referenceProblems,
  traitMatches,
  type TeamDocument,
} from "./config";
import { domainModel, teamModel, type DomainRecord, type TeamRecord } from "./model";

/** Concurrent pushes of one team race on unique identifiers; the loser backs off and re-plans against the winner's state. */
const PUSH_ATTEMPTS = 8;
const PUSH_BACKOFF_MS = 25;

type Identified = { _id: number; account_id: number; identifier: string; name: string };

/** Loads what a push is planned against: the account's traits, tools, agents, domains and the team. */
async function loadState(db: Connection, accountId: number, teamName: string) {
  const scope = { account_id: accountId };
  const [traits, tools, agents, domains, team] = await Promise.all([
    accountTraits(db, accountId),
    accountTools(db, accountId),
    accountAgents(db, accountId),
    domainModel(db).find(scope).lean<DomainRecord[]>(),
    teamModel(db)
      .findOne({ ...scope, $or: [{ identifier: slugify(teamName) }, { name: teamName }] })
      .sort({ _id: 1 })
      .lean<TeamRecord>(),
  ]);
  return { traits, tools, agents, domains: domains.map((d) => d.hostname.toLowerCase()), team };
}

/** The record a named component of the document updates: same name first, then the identifier its name gives. */
function matchByName<T extends Identified>(records: T[], name: string, preferred: number[] = []): T | null {
  const sameName = records.filter((r) => r.name === name);
  return (
    sameName.find((r) => preferred.includes(r._id)) ??
    sameName[0] ??
    records.find((r) => r.identifier === slugify(name)) ??
    null
  );
}

/**
 * Components the push would create under one identifier: a created record's identifier is its name's slug, so two
 * new names with the same slug ("Ü" and "U", or two names with no letters) would make the second insert collide.
 */
function identifierClashes(kind: string, defs: { name: string }[] | undefined, records: Identified[], preferred?: number[]): FieldProblem[] {
  const createdAt = new Map<string, number>();
  return (defs ?? []).flatMap((def, i) => {
    if (typeof def?.name !== "string" || matchByName(records, def.name, preferred)) return [];
    const identifier = slugify(def.name);
    const first = createdAt.get(identifier);
    if (first === undefined) return (createdAt.set(identifier, i), []);
    return [{ field: `${kind}[${i}].name`, message: `Would create the identifier '${identifier}' that ${kind}[${first}] creates; give it a distinct name`, type: "unique" }];
  });
}

/** The hash to store for a pushed publication password: the current one when it already matches (a salted
 * re-hash would rewrite the agent on every identical push), a new one otherwise. */
async function publicationPasswordHash(existing: AgentRecord | null, password: string | undefined): Promise<string | undefined> {
  if (!password) return undefined;
  const current = existing?.publication?.password_hash;
  if (current && (await verifyPassword(password, current))) return current;
  return hashPassword(password);
}

/** Problems found by a check that may trip over a malformed document; none when it does. */
function safely(check: () => FieldProblem[]): FieldProblem[] {
  try {
    return check();
  } catch {
    return [];
  }
}

/** Validates the whole document and every reference before anything is written; 400 lists all problems. */
function validate(raw: unknown, state: Awaited<ReturnType<typeof loadState>>): TeamDocument {
  // References are checked on the document as written (so locations point into it), and alongside the
  // structural problems, so one answer lists everything; parts too malformed to follow are skipped.
  const written: FieldProblem[] = [...documentProblems(raw, { strict: true }), ...safely(() => referenceProblems(raw as TeamDocument, state))];
  if (written.length) throw ERRORS.invalidDocument("Invalid team configuration", written);
  const doc = effectiveDocument(raw as TeamDocument);
  // Overrides can set values the agent schema refuses (e.g. a temperature of 5).
  const problems: FieldProblem[] = [
    ...documentProblems(doc),
    ...identifierClashes("traits", doc.traits, state.traits),
    ...identifierClashes("tools", doc.tools, state.tools, state.team?.tool_ids),
    ...identifierClashes("agents", doc.agents, state.agents, state.team?.agent_ids),
  ];
  (doc.agents ?? []).forEach((agent, i) => {
    const existing = matchByName(state.agents, agent.name, state.team?.agent_ids);
    const wantsPassword = (agent.publication?.access_level ?? existing?.publication?.access_level) === "password_protected";
    if (wantsPassword && !agent.publication?.password && !existing?.publication?.password_hash) {
      problems.push({ field: `agents[${i}].publication.password`, message: "A password is required for password_protected publication", type: "required" });
    }
  });
  if (problems.length) throw ERRORS.invalidDocument("Invalid team configuration", problems);
  return doc;
}

/** A batch item for the owner: the matched record to update (null: create one) and what to write. */
const itemFor = <Def>(existing: { _id: number } | null, def: Def) => ({ id: existing?._id ?? null, def });

/**
 * Writes the planned changes, each with its change event prepared; every write is undone if a later one fails.
 * Traits, tools and agents are written by their owners, in one batch each (`<owner>.putBatch`,
 * lib/owner-writes.ts), the team here; a created record's identifier is its name's slug, so concurrent pushes
 * creating it collide and the loser re-plans.
 */
async function apply(db: Connection, owners: OwnerWrites, accountId: number, doc: TeamDocument, state: Awaited<ReturnType<typeof loadState>>) {
  const uow = new UnitOfWork();
  try {
    const traitRecords = await owners.put<TraitRecord, object>("traits", (doc.traits ?? []).map((def) => itemFor(matchByName(state.traits, def.name), def)));
    const traitId = (ref: string) =>
      (traitRecords.find((t) => traitMatches(ref, t)) ?? state.traits.find((t) => traitMatches(ref, t)))!._id;

    const toolRecords = await owners.put<ToolRecord, object>(
      "tools",
      (doc.tools ?? []).map((def) => itemFor(matchByName(state.tools, def.name, state.team?.tool_ids), def)),
    );
    const toolIds = toolRecords.map((t) => t._id);

    const agentItems = [];
    for (const config of doc.agents ?? []) {
      const existing = matchByName(state.agents, config.name, state.team?.agent_ids);
      const fields = mergedAgentFields(existing, config, {
        traitIds: config.traits ? [...new Set(config.traits.map(traitId))] : undefined,
        passwordHash: await publicationPasswordHash(existing, config.publication?.password),
      });
      fields.tool_ids = [...new Set([...(existing?.tool_ids ?? []), ...toolIds])];
      agentItems.push(itemFor(existing, { ...fields, name: config.name }));
    }
    const agentIds = (await owners.put<AgentRecord, object>("agents", agentItems)).map((a) => a._id);

    const teamFields = {
      name: doc.name,
      description: doc.description ?? state.team?.description ?? null,
      agent_ids: agentIds,
      tool_ids: toolIds,
      knowledge: doc.knowledge ?? state.team?.knowledge ?? [],
    };
    const team = await uow.put(teamModel(db), accountId, state.team, teamFields, "team");
    return { team, owners, changes: uow.changes };
  } catch (err) {
    await uow.rollback();
    await owners.rollback();
    throw err;
  }
}

/**
 * Push: creates or updates the team, its agents, tools and traits from one configuration document,
 * completely or not at all (everything is validated first; a failed write undoes the earlier ones).
 * `owners` returns a fresh OwnerWrites per attempt (the owners' batch actions, called with the caller's meta).
 * Returns the change events of what it wrote, prepared, for the caller to commit: the owners'
 * (`owners.commit()`) first, then the team's.
 */
export async function pushDocument(
  db: Connection,
  owners: () => OwnerWrites,
  accountId: number,
  raw: unknown,
): Promise<{ team: TeamRecord; owners: OwnerWrites; changes: UnitOfWork["changes"] }> {
  const name = (raw as { name?: unknown })?.name;
  for (let attempt = 1; ; attempt++) {
    const state = await loadState(db, accountId, typeof name === "string" ? name : "");
    const doc = validate(raw, state);
    try {
      return await apply(db, owners(), accountId, doc, state);
    } catch (err) {
      if (!isReplanError(err)) throw err;
      if (attempt >= PUSH_ATTEMPTS) throw ERRORS.conflict("Other changes kept colliding with this push's identifiers; retry it");
      // Jittered backoff so racing pushes stop colliding with each other's in-flight writes.
      await new Promise((r) => setTimeout(r, PUSH_BACKOFF_MS * attempt * (0.5 + Math.random())));
    }
  }
}

/** Pull: the team as a configuration document that push accepts (push(pull(team)) changes nothing). */
export async function pullDocument(db: Connection, team: TeamRecord): Promise<TeamDocument> {
  const agents = await accountAgents(db, team.account_id, team.agent_ids);
  const ordered = team.agent_ids.flatMap((id) => agents.filter((a) => a._id === id));
  const traitIds = [...new Set(ordered.flatMap((a) => a.trait_ids))];
  const [traits, tools] = await Promise.all([accountTraits(db, team.account_id, traitIds), accountTools(db, team.account_id, team.tool_ids)]);
  const identifierOf = new Map(traits.map((t) => [t._id, t.identifier]));
  const doc: TeamDocument = compact({
    name: team.name,
    description: team.description ?? undefined,
    agents: ordered.map((a) => agentToConfig(a, a.trait_ids.flatMap((id) => identifierOf.get(id) ?? []))),
    tools: team.tool_ids.flatMap((id) =>
      tools.filter((t) => t._id === id).map((t) => compact({ name: t.name, description: t.description ?? undefined, type: t.tool_type, config: t.configuration ?? {} })),
    ),
    knowledge: team.knowledge ?? [],
    traits: traits.map((t) => compact({ name: t.name, category: t.category, description: t.description ?? undefined, tags: t.tags })),
  });
  const problems = documentProblems(doc);
  if (problems.length) {
    throw ERRORS.conversionFailed(`Team ${team.identifier} cannot be expressed as a configuration: ${problems.map((p) => `${p.field}: ${p.message}`).join("; ")}`);
  }
  return doc;
}
