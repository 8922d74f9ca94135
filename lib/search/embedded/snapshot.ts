import { createHash, randomBytes } from "node:crypto";
import { existsSync, openSync } from "node:fs";
import { mkdir, rename } from "node:fs/promises";
import path from "node:path";
import { KeywordIndex, TITLE_WEIGHT } from "../bm25";
import { emptyTable, type ChunkTable, type Partition } from "./partition";
import { fileChecksum, removeOthers, SnapshotReader, SnapshotWriter, syncFile } from "../snapshot-file";
import { ChunkTexts } from "./text-store";
import { analyzerFingerprint } from "../tokenizer";
import { VectorIndex } from "../vectors";

/** Version of the snapshot layout; a snapshot of another version is rebuilt from MongoDB. */
export const SNAPSHOT_FORMAT = 2;
const PARTITION_FILE = "partition.bin";

/** What the analyzer and the keyword weighting bake into postings; part of every snapshot's header. */
const ANALYZER = createHash("sha256").update(analyzerFingerprint()).update(`title-weight:${TITLE_WEIGHT}`).digest("hex").slice(0, 16);

/** The state a snapshot reflects: the database epoch and the account's write generation in MongoDB. */
export interface SnapshotStamp {
  epoch: string;
  generation: number;
}

export interface SnapshotWritten {
  bytes: number;
  chunks: number;
  vectors: number;
  graph: boolean;
  ms: number;
}

export type SnapshotLoad =
  | { ok: true; chunks: number; vectors: number; ms: number }
  | { ok: false; reason: string };

interface SnapshotHeader {
  format: number;
  analyzer: string;
  accountId: number;
  epoch: string;
  generation: number;
  dimensions: number;
  slotCount: number;
  chunks: number;
  vectors: number;
  /** Vector rows ever used (graph labels are below it). */
  rowCount: number;
  graph: { file: string; size: number; crc: number } | null;
}

/** What reading and writing a partition's snapshot needs of the engine. */
export interface SnapshotContext {
  dimensions: number;
  /** Whether a partition with this many characters of text reads it from its snapshot file. */
  textOnDisk(chars: number): boolean;
  newPartition(): Partition;
}

/**
 * Writes a snapshot of a partition (an empty one if there is none) into `dir`, stamped with the MongoDB
 * state it reflects (see EmbeddedEngine.writeSnapshot). Files are written under temporary names and
 * renamed, the graph before the file that names it, so a crash leaves the previous snapshot or the new one.
 * From then on the partition reads chunk text from the new file.
 */
export async function writePartitionSnapshot(p: Partition | undefined, accountId: number, dir: string, stamp: SnapshotStamp, ctx: SnapshotContext): Promise<SnapshotWritten> {
  const started = Date.now();
  await mkdir(dir, { recursive: true });
  const keep = new Set([PARTITION_FILE]);
  let graph: SnapshotHeader["graph"] = null;
  if (p?.vectors.usesGraph) {
    const file = `graph-${randomBytes(6).toString("hex")}.hnsw`;
    const temp = path.join(dir, `${file}.tmp`);
    await p.vectors.writeGraph(temp);
    await syncFile(temp);
    const sum = await fileChecksum(temp);
    await rename(temp, path.join(dir, file));
    graph = { file, ...sum };
    keep.add(file);
  }
  const target = path.join(dir, PARTITION_FILE);
  const writer = await SnapshotWriter.create(target);
  let live: Int32Array<ArrayBufferLike> = new Int32Array(0);
  let text: { offsets: Float64Array<ArrayBufferLike>; lengths: Int32Array<ArrayBufferLike> } = { offsets: new Float64Array(0), lengths: new Int32Array(0) };
  let bytes: number;
  let vectorCount = 0;
  let rowCount = 0;
  try {
    live = p ? p.liveSlots() : live;
    text = p ? await p.texts.write(writer, live) : await new ChunkTexts().write(writer, live);
    await writer.section("text.offsets", text.offsets);
    await writer.section("text.lengths", text.lengths);
    await writer.section("text.chars", Int32Array.from(live, (slot) => p!.texts.charsOf(slot)));
    await writer.section("chunks.live", live);
    await writer.section("chunks.table", Buffer.from(JSON.stringify(p ? p.table(live) : emptyTable()), "utf8"));
    const keyword = (p?.keyword ?? new KeywordIndex()).snapshot();
    await writer.section("keyword.vocabulary", Buffer.from(JSON.stringify(keyword.vocabulary), "utf8"));
    await writer.section("keyword.offsets", keyword.offsets);
    await writer.section("keyword.slots", keyword.slots);
    await writer.section("keyword.tfs", keyword.tfs);
    await writer.section("keyword.lengths", p ? p.keyword.lengthsOf(live) : new Float32Array(0));
    ({ vectors: vectorCount, rowCount } = await (p?.vectors ?? new VectorIndex(ctx.dimensions)).writeSections(writer));
    const header: SnapshotHeader = {
      format: SNAPSHOT_FORMAT,
      analyzer: ANALYZER,
      accountId,
      epoch: stamp.epoch,
      generation: stamp.generation,
      dimensions: ctx.dimensions,
      slotCount: p ? p.chunks.length : 0,
      chunks: live.length,
      vectors: vectorCount,
      rowCount,
      graph,
    };
    bytes = await writer.commit({ ...header, writtenAt: new Date().toISOString() });
  } catch (err) {
    await writer.abort();
    throw err;
  }
  if (p && (p.texts.onDisk || ctx.textOnDisk(p.texts.liveChars))) p.texts.adopt(openSync(target, "r"), live, text.offsets, text.lengths);
  await removeOthers(dir, keep);
  return { bytes: bytes + (graph?.size ?? 0), chunks: live.length, vectors: vectorCount, graph: graph !== null, ms: Date.now() - started };
}

/**
 * A partition from a snapshot directory if the snapshot is whole (every checksum), written by this format
 * and analyzer for these dimensions, and stamped with exactly `expect`; otherwise `{ok: false, reason}`.
 */
export async function readPartitionSnapshot(accountId: number, dir: string, expect: SnapshotStamp, ctx: SnapshotContext): Promise<SnapshotLoad & { partition?: Partition }> {
  const started = Date.now();
  const file = path.join(dir, PARTITION_FILE);
  if (!existsSync(file)) return { ok: false, reason: "missing: no snapshot" };
  let reader: SnapshotReader | undefined;
  try {
    reader = SnapshotReader.open(file);
    const h = reader.header as unknown as SnapshotHeader;
    if (h.format !== SNAPSHOT_FORMAT) return fail(reader, `incompatible: snapshot format ${h.format}, expected ${SNAPSHOT_FORMAT}`);
    if (h.analyzer !== ANALYZER) return fail(reader, "incompatible: written by another analyzer");
    if (h.dimensions !== ctx.dimensions) return fail(reader, `incompatible: ${h.dimensions} dimensions, expected ${ctx.dimensions}`);
    if (h.accountId !== accountId) return fail(reader, `corrupt: snapshot of account ${h.accountId}`);
    if (h.epoch !== expect.epoch) return fail(reader, "stale: written for another database epoch");
    if (h.generation !== expect.generation) return fail(reader, `stale: generation ${h.generation}, MongoDB is at ${expect.generation}`);

    reader.verify("text");
    const live = reader.int32("chunks.live");
    const offsets = reader.float64("text.offsets");
    const lengths = reader.int32("text.lengths");
    const chars = reader.int32("text.chars");
    const table = reader.json<ChunkTable>("chunks.table");
    const n = live.length;
    const slotCount = h.slotCount;
    if (n !== h.chunks || offsets.length !== n || lengths.length !== n || chars.length !== n) throw new RangeError("chunk sections disagree in length");
    for (const list of [table.ids, table.doc, table.position, table.title, table.url, table.start ?? table.ids, table.end ?? table.ids, table.indexedAt]) if (list.length !== n) throw new RangeError("chunk table disagrees in length");
    if (table.metadata.length !== table.documents.length) throw new RangeError("document metadata disagrees in length");
    const text = reader.info("text");
    for (let i = 0; i < n; i++) {
      const slot = live[i]!;
      if (slot < 0 || slot >= slotCount || (i && slot <= live[i - 1]!)) throw new RangeError("live slots are not ascending within the slot count");
      if (offsets[i]! < text.offset || offsets[i]! + Math.abs(lengths[i]!) > text.offset + text.length) throw new RangeError("chunk text lies outside the text section");
    }

    // Slots are renumbered densely in their order (removed chunks leave no gaps after a restart); the
    // order, and so every tie-break, is kept. Vector rows and graph labels are not slots and stay.
    const renumber = new Int32Array(slotCount).fill(-1);
    live.forEach((slot, i) => (renumber[slot] = i));
    const p = ctx.newPartition();
    for (let i = 0; i < n; i++) {
      const d = table.doc[i]!;
      const [documentId, sourceId] = table.documents[d]!;
      const title = table.strings[table.title[i]!]!;
      const url = table.strings[table.url[i]!]!;
      const id = table.ids[i]!;
      if (p.slotOf.has(id)) throw new RangeError(`chunk ${id} appears twice`);
      const doc = p.documents.get(documentId) ?? p.document(documentId, sourceId, title, url, table.metadata[d]!);
      doc.chunks.add(i);
      p.slotOf.set(id, i);
      const [start, end] = [table.start?.[i] ?? -1, table.end?.[i] ?? -1];
      p.place(i, { id, sourceId, documentId, position: table.position[i]!, title, url, chunkStart: start < 0 ? null : start, chunkEnd: end < 0 ? null : end, doc: doc.number, indexedAt: table.indexedAt[i]! });
    }
    const postingSlots = reader.int32("keyword.slots");
    for (let i = 0; i < postingSlots.length; i++) {
      const slot = postingSlots[i]!;
      if (!(slot >= 0 && slot < slotCount) || renumber[slot]! < 0) throw new RangeError(`posting of a slot that is not live (${slot})`);
      postingSlots[i] = renumber[slot]!;
    }
    p.keyword = KeywordIndex.restore(
      {
        vocabulary: reader.json<string[]>("keyword.vocabulary"),
        offsets: reader.int32("keyword.offsets"),
        slots: postingSlots,
        tfs: reader.uint16("keyword.tfs"),
      },
      Int32Array.from(live.keys()),
      reader.float32("keyword.lengths"),
      n,
    );
    const vectorSlots = reader.int32("vectors.slots");
    if (vectorSlots.length !== h.vectors) throw new RangeError("vector count disagrees with the header");
    for (let i = 0; i < vectorSlots.length; i++) {
      const slot = vectorSlots[i]!;
      if (!(slot >= 0 && slot < slotCount) || renumber[slot]! < 0) throw new RangeError(`vector of a slot that is not live (${slot})`);
      vectorSlots[i] = renumber[slot]!;
    }
    const layout = { slots: vectorSlots, rows: reader.int32("vectors.rows"), free: reader.int32("vectors.free"), rowCount: h.rowCount };
    const r = reader;
    if (h.graph) {
      const graphFile = path.join(dir, path.basename(h.graph.file));
      const sum = await fileChecksum(graphFile).catch(() => undefined);
      if (!sum || sum.size !== h.graph.size || sum.crc !== h.graph.crc) throw new RangeError("graph file is missing or fails its checksum");
      await p.vectors.restore(layout, "quantized", reader.float32("vectors.scales"), (unit, each) => r.stream("vectors.int8", unit, each), graphFile);
    } else {
      await p.vectors.restore(layout, "flat", undefined, (unit, each) => r.stream("vectors.flat", unit, each), undefined);
    }
    const slots = Int32Array.from(live.keys());
    let textChars = 0;
    for (const c of chars) textChars += c;
    if (ctx.textOnDisk(textChars)) p.texts.adopt(reader.fd, slots, offsets, lengths, chars);
    else {
      p.texts.load(reader.fd, slots, offsets, lengths);
      reader.close();
    }
    return { ok: true, chunks: n, vectors: vectorSlots.length, ms: Date.now() - started, partition: p };
  } catch (err) {
    reader?.close();
    return { ok: false, reason: `corrupt: ${(err as Error).message}` };
  }
}

function fail(reader: SnapshotReader, reason: string): SnapshotLoad {
  reader.close();
  return { ok: false, reason };
}
