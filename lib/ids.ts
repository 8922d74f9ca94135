import type { Connection } from "mongoose";
import { isDuplicateKeyError } from "./errors";
import { keyedGroupCommit } from "./group-commit";
import { escapeRegex } from "./regex";

const COUNTERS = "counters";
const counters = (db: Connection) => db.collection<{ _id: string; seq: number }>(COUNTERS);

/**
 * Allocates the next integer id of a sequence with one atomic single-document update, so it needs no
 * transactions. Ids are global per sequence (not per account), which lets a lookup tell "not yours" (403)
 * from "does not exist" (404) as the interface asks. With `count`, reserves that many and returns the last.
 * Calls for the same sequence made while one is on its way go together in the next update (group commit,
 * docs/adr/0050-write-path-speed.md): each still gets its own ids, in the order of the calls.
 */
export function nextId(db: Connection, sequence: string, count = 1): Promise<number> {
  let allocate = allocators.get(db);
  if (!allocate) allocators.set(db, (allocate = keyedGroupCommit((seq: string, counts: number[]) => reserve(db, seq, counts))));
  return allocate(sequence, count);
}

const allocators = new WeakMap<Connection, (sequence: string, count: number) => Promise<number>>();

/** Record ids a process reserves per counter update (nextRecordId). */
export const RECORD_ID_BLOCK = 16;

/**
 * The next id of a record sequence (tools, users, ...), taken from a block of RECORD_ID_BLOCK ids this process
 * reserved with one counter update, so a create usually spends no round trip on its id (docs/adr/0050-write-path-speed.md).
 * Ids stay unique and global, ascending in creation order within one process; replicas interleave their blocks,
 * and a block's unused ids are skipped after a restart (gaps, as database sequences with a cache have). Event
 * seqs and change counts take nextId: their values must be the database's.
 */
export function nextRecordId(db: Connection, sequence: string): Promise<number> {
  let blocks = recordIdBlocks.get(db);
  if (!blocks) recordIdBlocks.set(db, (blocks = new Map()));
  let block = blocks.get(sequence);
  if (!block) blocks.set(sequence, (block = new IdBlock(() => nextId(db, sequence, RECORD_ID_BLOCK))));
  return block.take();
}

const recordIdBlocks = new WeakMap<Connection, Map<string, IdBlock>>();

/** The ids left of the last reserved block; callers that find it empty wait for one refill together. */
class IdBlock {
  private next = 1;
  private last = 0;
  private refill?: Promise<void>;

  constructor(private readonly reserve: () => Promise<number>) {}

  async take(): Promise<number> {
    while (this.next > this.last) {
      this.refill ??= this.reserve()
        .then((last) => {
          this.next = last - RECORD_ID_BLOCK + 1;
          this.last = last;
        })
        .finally(() => (this.refill = undefined));
      await this.refill;
    }
    return this.next++;
  }
}

/** One $inc for every count; each gets the last id of its own range. */
async function reserve(db: Connection, sequence: string, counts: number[]): Promise<number[]> {
  const total = counts.reduce((sum, n) => sum + n, 0);
  let last = await increment(db, sequence, total);
  const lasts = new Array<number>(counts.length);
  for (let i = counts.length - 1; i >= 0; i--) (lasts[i] = last), (last -= counts[i]!);
  return lasts;
}

async function increment(db: Connection, sequence: string, count: number): Promise<number> {
  for (let attempt = 0; ; attempt++) {
    try {
      const doc = await counters(db).findOneAndUpdate(
        { _id: sequence },
        { $inc: { seq: count } },
        { upsert: true, returnDocument: "after" },
      );
      if (!doc) throw new Error(`counter ${sequence} was not returned`);
      return doc.seq;
    } catch (err) {
      // Two first-ever upserts can race on the same _id; the loser simply retries the increment.
      if (!isDuplicateKeyError(err) || attempt > 2) throw err;
    }
  }
}

/** Current values of sequences without changing them, in one query; 0 for one before its first nextId. */
export async function readSequences(db: Connection, sequences: string[]): Promise<number[]> {
  const found = new Map((await counters(db).find({ _id: { $in: sequences } }).toArray()).map((doc) => [doc._id, doc.seq]));
  return sequences.map((sequence) => found.get(sequence) ?? 0);
}

/** Lower-case, dash-separated, URL-friendly form of a display name. */
export function slugify(name: string): string {
  const slug = name
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 80)
    .replace(/-+$/g, "");
  return slug || "item";
}

/** First free identifier among base, base-2, base-3, ... given the identifiers already taken in the account. */
export function firstFreeIdentifier(base: string, taken: Iterable<string>): string {
  const used = new Set(taken);
  if (!used.has(base)) return base;
  for (let n = 2; ; n++) if (!used.has(`${base}-${n}`)) return `${base}-${n}`;
}

/** URL-safe identifiers with at least one letter, so a path segment that is all digits is always an id. */
export const IDENTIFIER_PATTERN = /^(?=.*[A-Za-z])[A-Za-z0-9][A-Za-z0-9_.-]*$/;

/** fastest-validator rule for a client-chosen identifier. */
export const identifierRule = { type: "string", min: 1, max: 100, pattern: IDENTIFIER_PATTERN, optional: true } as const;

/** True when a reference (path segment or association entry) names a numeric id rather than an identifier. */
export function isIdRef(ref: string | number): boolean {
  return typeof ref === "number" || /^\d+$/.test(ref);
}

/** Regex source matching base and its numbered variants (base-2, base-3, ...). */
export function identifierFamily(base: string): RegExp {
  return new RegExp(`^${escapeRegex(base)}(-\\d+)?$`);
}
