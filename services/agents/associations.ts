import type { Connection, Model } from "mongoose";
import type { FieldProblem } from "../../lib/errors";
import { isIdRef } from "../../lib/ids";
import { knowledgeSourceModel } from "../knowledge";
import { toolModel } from "../tools";
import { traitModel } from "../traits";

type Identified = { _id: number; identifier: string };

/** What an agent can be associated with, and the owner's model each is read through (services/<owner>/index.ts). */
const MODELS: Record<"traits" | "tools" | "knowledge_sources", (db: Connection) => Model<any>> = {
  traits: traitModel,
  tools: toolModel,
  knowledge_sources: knowledgeSourceModel,
};
export type AssociationKind = keyof typeof MODELS;

/**
 * Turns references (numeric ids or identifiers) into ids of records of the caller's account, in the
 * order given and without duplicates, plus a problem for every reference that matches nothing (callers
 * gather the problems of all fields and answer one 422).
 */
export async function resolveRefs(
  db: Connection,
  accountId: number,
  kind: AssociationKind,
  refs: (string | number)[],
  field: string = kind,
): Promise<{ ids: number[]; problems: FieldProblem[] }> {
  if (!refs.length) return { ids: [], problems: [] };
  const ids = refs.filter(isIdRef).map(Number);
  const identifiers = refs.filter((r) => !isIdRef(r)).map(String);
  const found = await MODELS[kind](db)
    .find({ account_id: accountId, $or: [{ _id: { $in: ids } }, { identifier: { $in: identifiers } }] }, { identifier: 1 })
    .lean<Identified[]>();
  const byRef = new Map<string, number>();
  for (const row of found) {
    byRef.set(String(row._id), row._id);
    byRef.set(row.identifier, row._id);
  }
  const problems: FieldProblem[] = [];
  const resolved: number[] = [];
  refs.forEach((ref, index) => {
    const id = byRef.get(String(ref));
    if (id === undefined) problems.push({ field: `${field}[${index}]`, message: `No ${kind.replace("_", " ")} "${ref}" in this account`, type: "reference" });
    else if (!resolved.includes(id)) resolved.push(id);
  });
  return { ids: resolved, problems };
}
