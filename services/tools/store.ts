import type { Connection } from "mongoose";
import { accountRecords } from "../../lib/tenancy.mixin";
import { definedField, type PutTarget, type UnitOfWork } from "../../lib/unit-of-work";
import { toolModel, type ToolRecord } from "./model";

/*
 * The tools collection as other services read it (through services/tools/index.ts) and as the tools service's
 * batch action writes it for them (lib/owner-writes.ts; docs/adr/0052-service-boundaries.md).
 */

/** An account's tools, all of them or those with these ids. */
export function accountTools(db: Connection, accountId: number, ids?: number[]): Promise<ToolRecord[]> {
  return accountRecords(toolModel(db), accountId, ids);
}

/**
 * A tool as a team document defines it: created, or updated where it differs, a field the definition leaves out
 * keeping its value and one given as null taking its default (as an agent's do); the change is in `uow`.
 */
export function putTool(
  uow: UnitOfWork,
  db: Connection,
  accountId: number,
  target: PutTarget<ToolRecord>,
  def: { name: string; description?: string | null; type: string; config?: Record<string, unknown> | null },
): Promise<ToolRecord> {
  const existing = "existing" in target ? target.existing : null;
  const fields = {
    name: def.name,
    description: definedField(existing, "description", def.description, null),
    tool_type: def.type,
    configuration: definedField(existing, "configuration", def.config, {}),
  };
  return uow.put(toolModel(db), accountId, target, fields, "tool");
}
