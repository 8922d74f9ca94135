import type { Connection } from "mongoose";
import { RECORD_ID_BLOCK } from "../../lib/ids";

/** The account of the placeholder records occupyNextIds inserts (no real account has it). */
export const PLACEHOLDER_ACCOUNT = -1;

/**
 * Inserts placeholder records of PLACEHOLDER_ACCOUNT on every id a process may hand out next in `collection`
 * (lib/ids.ts nextRecordId): what is left of a block reserved below the counter, and the whole next block. An id
 * already in use stays its record's. `fields` gives each placeholder's other fields (unique ones from `i`).
 */
export async function occupyNextIds(conn: Connection, collection: string, fields: (i: number) => object): Promise<void> {
  const counter = await conn.collection<{ _id: string; seq: number }>("counters").findOne({ _id: collection });
  const last = counter?.seq ?? 0;
  const ids = Array.from({ length: 2 * RECORD_ID_BLOCK }, (_, i) => last - RECORD_ID_BLOCK + 1 + i).filter((id) => id > 0);
  try {
    await conn.collection(collection).insertMany(ids.map((_id, i) => ({ _id, account_id: PLACEHOLDER_ACCOUNT, ...fields(i) })) as never[], { ordered: false });
  } catch (err) {
    const writeErrors = (err as { writeErrors?: { code?: number }[] }).writeErrors ?? [];
    if (!writeErrors.length || writeErrors.some((e) => e.code !== 11000)) throw err;
  }
}
