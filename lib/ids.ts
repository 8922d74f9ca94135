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

/** Record ids a process reserves per counter update (nextRecordId); each block of a covered sequence costs a cover too. */
export const RECORD_ID_BLOCK = 64;

/**
 * What stands in the database for a block of record ids while this process hands them out: the event log writes
 * one per block of a collection whose creates it records (lib/events.ts coverCreates), so a create with an id of a
 * fresh block needs no prepared entry of its own.
 */
export interface IdBlockCover {
  readonly first: number;
  readonly last: number;
  /** False once the cover is too old to hand its ids out; the rest of the block is then covered anew. */
  fresh(): boolean;
  /** The block hands no more ids out under this cover. */
  retire(): void;
}

/** Writes the cover of ids first..last before any of them is handed out. */
export type CoverIds = (first: number, last: number) => Promise<IdBlockCover>;

/**
 * The next id of a record sequence (tools, users, ...), taken from a block of RECORD_ID_BLOCK ids this process
 * reserved with one counter update, so a create usually spends no round trip on its id (docs/adr/0050-write-path-speed.md).
 * Ids stay unique and global, ascending in creation order within one process; replicas interleave their blocks,
 * and a block's unused ids are skipped after a restart (gaps, as database sequences with a cache have). Event
 * seqs and change counts take nextId: their values must be the database's.
 */
export function nextRecordId(db: Connection, sequence: string): Promise<number> {
  return idBlock(db, sequence).take();
}

/** From now on, every block of `sequence` this process reserves is covered by `cover` before its ids go out (the first cover set stays). */
export function coverRecordIds(db: Connection, sequence: string, cover: CoverIds): void {
  idBlock(db, sequence).cover ??= cover;
}

/** The cover the id is handed out under, while it is the block's current one. */
export function coverOfId(db: Connection, sequence: string, id: number): IdBlockCover | undefined {
  const covered = recordIdBlocks.get(db)?.get(sequence)?.covered;
  return covered && covered.first <= id && id <= covered.last ? covered : undefined;
}

function idBlock(db: Connection, sequence: string): IdBlock {
  let blocks = recordIdBlocks.get(db);
  if (!blocks) recordIdBlocks.set(db, (blocks = new Map()));
  let block = blocks.get(sequence);
  if (!block) blocks.set(sequence, (block = new IdBlock(() => nextId(db, sequence, RECORD_ID_BLOCK))));
  return block;
}

const recordIdBlocks = new WeakMap<Connection, Map<string, IdBlock>>();

/**
 * The ids left of the last reserved block; callers that find it empty wait for one refill together. Where a cover
 * is set, ids go out under a fresh cover: a caller that finds none (or a stale one) first waits for one over the
 * rest of the block, and takes its id even should that one be stale already (its create is then prepared).
 */
class IdBlock {
  private next = 1;
  private last = 0;
  private refill?: Promise<void>;
  cover?: CoverIds;
  covered?: IdBlockCover;

  constructor(private readonly reserve: () => Promise<number>) {}

  async take(): Promise<number> {
    if (this.cover && !this.covered?.fresh()) await this.renewing();
    while (this.next > this.last) await this.renewing();
    return this.next++;
  }

  private renewing(): Promise<void> {
    return (this.refill ??= this.renew().finally(() => (this.refill = undefined)));
  }

  /** A new block when this one is used up; then, where creates are covered, a cover for what is left of it. */
  private async renew(): Promise<void> {
    this.covered?.retire();
    this.covered = undefined;
    if (this.next > this.last) {
      const last = await this.reserve();
      this.next = last - RECORD_ID_BLOCK + 1;
      this.last = last;
    }
    // Without a cover (its write failed) the ids still go out: their creates are prepared, as uncovered ones are.
    if (this.cover) this.covered = await this.cover(this.next, this.last).catch(() => undefined);
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

/** Romanisation of text in any script ("Служба" → "Sluzhba", "客服" → "Ke Fu"); its tables load on first use. */
function transliterate(text: string): string {
  // Required lazily: the tables take about 14 MB of memory, which a process pays only once a name needs them.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (require("transliteration") as typeof import("transliteration")).transliterate(text);
}

/**
 * Lower-case, dash-separated, URL-friendly form of a display name. Latin letters lose their accents; other scripts
 * are romanised, so names in them get identifiers of their own ("Агент один" → "agent-odin") rather than all
 * "item" (which also made a team push creating two of them refuse the second as a clash).
 */
export function slugify(name: string): string {
  const folded = name.normalize("NFKD").replace(/[\u0300-\u036f]/g, "");
  // Only letters and digits of other scripts need the tables; punctuation and emoji are dropped as separators.
  const slug = (/(?=[^\x00-\x7f])[\p{L}\p{N}]/u.test(folded) ? transliterate(name) : folded)
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 80)
    .replace(/-+$/g, "");
  // An identifier has a letter (identifierRule), or a path segment of only digits would name an id: "7" → "item-7".
  if (!/[a-z]/.test(slug)) return slug ? `item-${slug}` : "item";
  return slug;
}

/** First free identifier among base, base-2, base-3, ... given the identifiers already taken in the account. */
export function firstFreeIdentifier(base: string, taken: Iterable<string>): string {
  const used = new Set(taken);
  if (!used.has(base)) return base;
  for (let n = 2; ; n++) if (!used.has(`${base}-${n}`)) return `${base}-${n}`;
}

/**
 * fastest-validator rule for a client-chosen identifier: URL-safe, with at least one letter, so a path segment that
 * is all digits is always an id. The pattern is a string, as every rule's is: the node info that carries actions'
 * params to other nodes is JSON, where a RegExp arrives as {} (the gateway's OpenAPI document lost it).
 */
export const identifierRule = { type: "string", min: 1, max: 100, pattern: "^(?=.*[A-Za-z])[A-Za-z0-9][A-Za-z0-9_.-]*$", optional: true } as const;

/** True when a reference (path segment or association entry) names a numeric id rather than an identifier. */
export function isIdRef(ref: string | number): boolean {
  return typeof ref === "number" || /^\d+$/.test(ref);
}

/** Regex source matching base and its numbered variants (base-2, base-3, ...). */
export function identifierFamily(base: string): RegExp {
  return new RegExp(`^${escapeRegex(base)}(-\\d+)?$`);
}
