import type { Connection } from "mongoose";
import { ERRORS, type FieldProblem } from "../../lib/errors";
import { firstFreeIdentifier, identifierFamily, slugify } from "../../lib/ids";
import { UnitOfWork, type PutTarget } from "../../lib/unit-of-work";
import { isReplanError, type BatchItem, type OwnerWrites } from "../../lib/owner-writes";
import { hashPassword, verifyPassword } from "../../lib/auth/passwords";
import { accountAgents, agents as agentsResource, type AgentRecord } from "../agents";
import { accountTools, type ToolRecord } from "../tools";
import { accountTraits, type TraitRecord } from "../traits";
import { documentProblems } from "./config-schema";
import {
  agentToConfig,
  compact,
  duplicateNames,
  effectiveDocument,
  filteredOutTraits,
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

/**
 * Loads what a push is planned against: the account's traits, tools, agents and domains, the team of the document's
 * name (the oldest), and the identifiers a new team of that name would be numbered past.
 */
async function loadState(db: Connection, accountId: number, teamName: string) {
  const scope = { account_id: accountId };
  const [traits, tools, agents, domains, sameName, teamIdentifiers] = await Promise.all([
    accountTraits(db, accountId),
    accountTools(db, accountId),
    accountAgents(db, accountId),
    domainModel(db).find(scope).lean<DomainRecord[]>(),
    teamModel(db).find({ ...scope, name: teamName }).sort({ _id: 1 }).limit(2).lean<TeamRecord[]>(),
    teamModel(db).distinct("identifier", { ...scope, identifier: identifierFamily(slugify(teamName)) }) as Promise<string[]>,
  ]);
  return { traits, tools, agents, domains: domains.map((d) => d.hostname.toLowerCase()), team: sameName[0] ?? null, ambiguous: sameName.length > 1 ? sameName : null, teamIdentifiers };
}
type PushState = Awaited<ReturnType<typeof loadState>>;

/**
 * What each component of a section writes: the account's record of its name (the team's own first), or a new record
 * under its name's identifier numbered past those the account and the section's earlier components hold ("C++
 * Expert" and "C# Expert": c-expert, c-expert-2), as a REST create numbers its own. Only an exact name matches: a
 * name that merely gives a record's identifier ("triage" for "Triage", or any two emoji names) is another component.
 * Planned from the state read, so concurrent pushes creating one name pick one identifier and collide on the unique
 * index; the loser re-plans and finds the winner's record by name.
 */
function planSection<T extends Identified>(records: T[], defs: { name: string }[], preferred: number[] = [], routeWords: readonly string[] = []): PutTarget<T>[] {
  const taken = new Set([...records.map((r) => r.identifier), ...routeWords]);
  return defs.map((def) => {
    const sameName = records.filter((r) => r.name === def.name);
    const existing = sameName.find((r) => preferred.includes(r._id)) ?? sameName[0];
    if (existing) return { existing };
    const identifier = firstFreeIdentifier(slugify(def.name), taken);
    taken.add(identifier);
    return { identifier };
  });
}

/** What a push writes, component by component, in the document's order. */
function planPush(doc: TeamDocument, state: PushState) {
  return {
    traits: planSection(state.traits, doc.traits ?? []),
    tools: planSection(state.tools, doc.tools ?? [], state.team?.tool_ids),
    agents: planSection(state.agents, doc.agents ?? [], state.team?.agent_ids, agentsResource.routeWords),
    team: (state.team ? { existing: state.team } : { identifier: firstFreeIdentifier(slugify(doc.name), state.teamIdentifiers) }) as PutTarget<TeamRecord>,
  };
}
type PushPlan = ReturnType<typeof planPush>;

const existingOf = <T>(target: PutTarget<T>): T | null => ("existing" in target ? target.existing : null);

/** A batch item for the owner: the planned record to update or identifier to create, and what to write. */
const itemFor = <T extends { _id: number }, Def>(target: PutTarget<T>, def: Def): BatchItem<Def> =>
  "existing" in target ? { id: target.existing._id, def } : { id: null, identifier: target.identifier, def };

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

/**
 * Validates the whole document and every reference before anything is written, and plans the writes; 400 lists
 * all problems.
 */
function validate(raw: unknown, state: PushState): { doc: TeamDocument; plan: PushPlan } {
  // References are checked on the document as written (so locations point into it), and alongside the
  // structural problems, so one answer lists everything; parts too malformed to follow are skipped.
  const written: FieldProblem[] = [...documentProblems(raw, { strict: true }), ...safely(() => referenceProblems(raw as TeamDocument, state))];
  // A document names its team only by name: with two teams of that name, the push would update one of them blindly.
  if (state.ambiguous) {
    const identifiers = state.ambiguous.map((t) => t.identifier).join(" and ");
    written.push({ field: "name", message: `At least two teams of this account are named "${state.ambiguous[0]!.name}" (${identifiers}): push cannot tell which to update; rename all but one`, type: "ambiguous" });
  }
  if (written.length) throw ERRORS.invalidDocument("Invalid team configuration", written);
  const doc = effectiveDocument(raw as TeamDocument);
  // Overrides can set values the agent schema refuses (e.g. a temperature of 5); filters can leave out a trait
  // definition an agent they keep names.
  const problems: FieldProblem[] = [...documentProblems(doc), ...filteredOutTraits(raw as TeamDocument, doc, state)];
  const plan = planPush(doc, state);
  (doc.agents ?? []).forEach((agent, i) => {
    const existing = existingOf(plan.agents[i]!);
    const wantsPassword = (agent.publication?.access_level ?? existing?.publication?.access_level) === "password_protected";
    if (wantsPassword && !agent.publication?.password && !existing?.publication?.password_hash) {
      problems.push({ field: `agents[${i}].publication.password`, message: "A password is required for password_protected publication", type: "required" });
    }
  });
  if (problems.length) throw ERRORS.invalidDocument("Invalid team configuration", problems);
  return { doc, plan };
}

/**
 * Writes the planned changes, each with its change event prepared; every write is undone if a later one fails.
 * Traits, tools and agents are written by their owners, in one batch each (`<owner>.putBatch`,
 * lib/owner-writes.ts), the team here; a created record's identifier is its name's slug, so concurrent pushes
 * creating it collide and the loser re-plans.
 */
async function apply(db: Connection, owners: OwnerWrites, accountId: number, doc: TeamDocument, state: PushState, plan: PushPlan) {
  const uow = new UnitOfWork();
  try {
    const traitRecords = await owners.put<TraitRecord, object>("traits", (doc.traits ?? []).map((def, i) => itemFor(plan.traits[i]!, def)));
    const traitId = (ref: string) =>
      (traitRecords.find((t) => traitMatches(ref, t)) ?? state.traits.find((t) => traitMatches(ref, t)))!._id;

    const toolRecords = await owners.put<ToolRecord, object>("tools", (doc.tools ?? []).map((def, i) => itemFor(plan.tools[i]!, def)));
    const toolIds = toolRecords.map((t) => t._id);

    const agentItems = [];
    for (const [i, config] of (doc.agents ?? []).entries()) {
      const existing = existingOf(plan.agents[i]!);
      const fields = mergedAgentFields(existing, config, {
        traitIds: config.traits ? [...new Set(config.traits.map(traitId))] : undefined,
        passwordHash: await publicationPasswordHash(existing, config.publication?.password),
      });
      fields.tool_ids = [...new Set([...(existing?.tool_ids ?? []), ...toolIds])];
      agentItems.push(itemFor(plan.agents[i]!, { ...fields, name: config.name }));
    }
    const agentIds = (await owners.put<AgentRecord, object>("agents", agentItems)).map((a) => a._id);

    const teamFields = {
      name: doc.name,
      description: doc.description !== undefined ? doc.description : (state.team?.description ?? null),
      agent_ids: agentIds,
      tool_ids: toolIds,
      knowledge: doc.knowledge ?? state.team?.knowledge ?? [],
    };
    const team = await uow.put(teamModel(db), accountId, plan.team, teamFields, "team");
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
    const { doc, plan } = validate(raw, state);
    try {
      return await apply(db, owners(), accountId, doc, state, plan);
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
  // Two agents (or traits, or tools) of one name: a document push would refuse, so this team has none.
  const problems = [...documentProblems(doc), ...duplicateNames(doc)];
  if (problems.length) {
    throw ERRORS.conversionFailed(`Team ${team.identifier} cannot be expressed as a configuration: ${problems.map((p) => `${p.field}: ${p.message}`).join("; ")}`);
  }
  return doc;
}
