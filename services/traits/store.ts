import type { Connection } from "mongoose";
import { accountRecords } from "../../lib/tenancy.mixin";
import { definedField, type PutTarget, type UnitOfWork } from "../../lib/unit-of-work";
import { traitModel, type TraitRecord } from "./model";
import { normalizeTags } from "./rules";

/*
 * The traits collection as other services read it (through services/traits/index.ts) and as the traits service's
 * batch action writes it for them (lib/owner-writes.ts; docs/adr/0052-service-boundaries.md).
 */

/** An account's traits, all of them or those with these ids. */
export function accountTraits(db: Connection, accountId: number, ids?: number[]): Promise<TraitRecord[]> {
  return accountRecords(traitModel(db), accountId, ids);
}

/**
 * A trait as a team document defines it: created, or updated where it differs, a field the definition leaves out
 * keeping its value and one given as null taking its default (as an agent's do); the change is in `uow`.
 */
export function putTrait(
  uow: UnitOfWork,
  db: Connection,
  accountId: number,
  target: PutTarget<TraitRecord>,
  def: { name: string; category?: string | null; description?: string | null; tags?: string[] | null },
): Promise<TraitRecord> {
  const existing = "existing" in target ? target.existing : null;
  const fields = {
    name: def.name,
    category: definedField(existing, "category", def.category, "general"),
    description: definedField(existing, "description", def.description, null),
    tags: definedField(existing, "tags", def.tags && normalizeTags(def.tags), []),
  };
  return uow.put(traitModel(db), accountId, target, fields, "trait");
}
