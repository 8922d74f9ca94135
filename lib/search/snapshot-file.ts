import { closeSync, fstatSync, openSync, readSync, type PathLike } from "node:fs";
import { open, readdir, rename, rm, type FileHandle } from "node:fs/promises";
import path from "node:path";
import { crc32 } from "node:zlib";

/**
 * The container of one partition snapshot: named sections written one after the other, then a JSON header
 * listing every section with its offset, length and CRC-32, then a trailer (the header's length and CRC-32,
 * and a magic). Writing is sequential (text can be streamed before the sections that index it); reading
 * starts from the trailer. A file is only ever written under a temporary name and renamed into place, so a
 * reader sees a whole snapshot or none, and a torn or bit-flipped one fails its checksums.
 */

const MAGIC = Buffer.from("SRCHSNP1", "ascii");
const TRAILER_BYTES = 8 + MAGIC.length;
/** Reads and writes in pieces this big, so checking a large section never holds it whole in memory. */
const IO_CHUNK = 1 << 20;

export interface SectionInfo {
  offset: number;
  length: number;
  crc: number;
}

export class SnapshotError extends Error {}

/** Sequential writer of a snapshot container (temp file; `commit` renames it into place after fsync). */
export class SnapshotWriter {
  private position = 0;
  private readonly sections: Record<string, SectionInfo> = {};
  private buffer = Buffer.allocUnsafeSlow(IO_CHUNK);
  private used = 0;
  private current?: { name: string; offset: number; crc: number };

  private constructor(
    private readonly file: FileHandle,
    private readonly tempPath: string,
    private readonly finalPath: string,
  ) {}

  static async create(finalPath: string): Promise<SnapshotWriter> {
    const tempPath = `${finalPath}.${process.pid}.${Date.now().toString(36)}.tmp`;
    return new SnapshotWriter(await open(tempPath, "w"), tempPath, finalPath);
  }

  /** File offset the next byte will have (for sections that point into the file). */
  get offset(): number {
    return this.position + this.used;
  }

  begin(name: string) {
    if (this.current) throw new Error(`section ${this.current.name} is still open`);
    if (this.sections[name]) throw new Error(`section ${name} written twice`);
    this.current = { name, offset: this.offset, crc: 0 };
  }

  /** Appends bytes to the open section. */
  async write(bytes: Uint8Array) {
    const section = this.current;
    if (!section) throw new Error("no open section");
    section.crc = crc32(bytes, section.crc);
    if (bytes.length >= IO_CHUNK) {
      await this.flush();
      await this.file.write(bytes, 0, bytes.length, this.position);
      this.position += bytes.length;
      return;
    }
    if (this.used + bytes.length > this.buffer.length) await this.flush();
    this.buffer.set(bytes, this.used);
    this.used += bytes.length;
  }

  /** Appends `length` bytes of another file (text kept from the previous snapshot) to the open section. */
  async copyFrom(fd: number, position: number, length: number) {
    const section = this.current;
    if (!section) throw new Error("no open section");
    let done = 0;
    while (done < length) {
      if (this.used === this.buffer.length) await this.flush();
      const n = Math.min(length - done, this.buffer.length - this.used);
      const view = this.buffer.subarray(this.used, this.used + n);
      readExactly(fd, view, position + done);
      section.crc = crc32(view, section.crc);
      this.used += n;
      done += n;
    }
  }

  /** Appends a string's bytes in the given encoding to the open section; returns the byte count. */
  async writeString(text: string, encoding: "utf8" | "utf16le"): Promise<number> {
    const section = this.current;
    if (!section) throw new Error("no open section");
    const length = Buffer.byteLength(text, encoding);
    if (length > this.buffer.length - this.used) {
      await this.flush();
      if (length > this.buffer.length) {
        await this.write(Buffer.from(text, encoding));
        return length;
      }
    }
    const n = this.buffer.write(text, this.used, encoding);
    section.crc = crc32(this.buffer.subarray(this.used, this.used + n), section.crc);
    this.used += n;
    return n;
  }

  end() {
    const section = this.current;
    if (!section) throw new Error("no open section");
    this.sections[section.name] = { offset: section.offset, length: this.offset - section.offset, crc: section.crc >>> 0 };
    this.current = undefined;
  }

  async section(name: string, bytes: Uint8Array | ArrayBufferView) {
    this.begin(name);
    await this.write(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength));
    this.end();
  }

  private async flush() {
    if (!this.used) return;
    await this.file.write(this.buffer, 0, this.used, this.position);
    this.position += this.used;
    this.used = 0;
  }

  /** Writes header and trailer, fsyncs, renames into place and fsyncs the directory. Returns the file size. */
  async commit(header: Record<string, unknown>): Promise<number> {
    if (this.current) throw new Error(`section ${this.current.name} is still open`);
    const json = Buffer.from(JSON.stringify({ ...header, sections: this.sections }), "utf8");
    const trailer = Buffer.alloc(TRAILER_BYTES);
    trailer.writeUInt32LE(json.length, 0);
    trailer.writeUInt32LE(crc32(json) >>> 0, 4);
    MAGIC.copy(trailer, 8);
    await this.flush();
    await this.file.write(json, 0, json.length, this.position);
    this.position += json.length;
    await this.file.write(trailer, 0, trailer.length, this.position);
    this.position += trailer.length;
    await this.file.sync();
    await this.file.close();
    await rename(this.tempPath, this.finalPath);
    await syncDirectory(path.dirname(this.finalPath));
    return this.position;
  }

  /** Drops the temporary file (after a failure). */
  async abort() {
    await this.file.close().catch(() => undefined);
    await rm(this.tempPath, { force: true });
  }
}

export async function syncDirectory(dir: string) {
  const handle = await open(dir, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Reads a snapshot container: header first (from the trailer), then sections on demand, each checked. */
export class SnapshotReader {
  readonly size: number;
  readonly header: Record<string, unknown> & { sections: Record<string, SectionInfo> };

  private constructor(readonly fd: number) {
    this.size = fstatSync(fd).size;
    if (this.size < TRAILER_BYTES) throw new SnapshotError("snapshot file is truncated");
    const trailer = Buffer.alloc(TRAILER_BYTES);
    readExactly(fd, trailer, this.size - TRAILER_BYTES);
    if (!trailer.subarray(8).equals(MAGIC)) throw new SnapshotError("not a snapshot file (bad magic)");
    const headerLength = trailer.readUInt32LE(0);
    if (headerLength > this.size - TRAILER_BYTES) throw new SnapshotError("snapshot header is truncated");
    const json = Buffer.alloc(headerLength);
    readExactly(fd, json, this.size - TRAILER_BYTES - headerLength);
    if (crc32(json) >>> 0 !== trailer.readUInt32LE(4)) throw new SnapshotError("snapshot header fails its checksum");
    try {
      this.header = JSON.parse(json.toString("utf8"));
    } catch {
      throw new SnapshotError("snapshot header is not valid JSON");
    }
    if (!this.header || typeof this.header.sections !== "object") throw new SnapshotError("snapshot header has no sections");
    const limit = this.size - TRAILER_BYTES - headerLength;
    for (const [name, s] of Object.entries(this.header.sections)) {
      if (!(s.offset >= 0 && s.length >= 0 && s.offset + s.length <= limit)) throw new SnapshotError(`section ${name} lies outside the file`);
    }
  }

  static open(file: PathLike): SnapshotReader {
    const fd = openSync(file, "r");
    try {
      return new SnapshotReader(fd);
    } catch (err) {
      closeSync(fd);
      throw err;
    }
  }

  info(name: string): SectionInfo {
    const s = this.header.sections[name];
    if (!s) throw new SnapshotError(`snapshot has no section ${name}`);
    return s;
  }

  /** A section's bytes in a buffer of their own (so typed arrays can view them at any alignment), checked. */
  bytes(name: string): Uint8Array {
    const s = this.info(name);
    const out = new Uint8Array(new ArrayBuffer(s.length));
    readExactly(this.fd, out, s.offset);
    if (crc32(out) >>> 0 !== s.crc) throw new SnapshotError(`section ${name} fails its checksum`);
    return out;
  }

  json<T>(name: string): T {
    try {
      return JSON.parse(Buffer.from(this.bytes(name)).toString("utf8")) as T;
    } catch (err) {
      if (err instanceof SnapshotError) throw err;
      throw new SnapshotError(`section ${name} is not valid JSON`);
    }
  }

  int32(name: string): Int32Array {
    const b = this.bytes(name);
    if (b.byteLength % 4) throw new SnapshotError(`section ${name} has a partial element`);
    return new Int32Array(b.buffer, 0, b.byteLength / 4);
  }

  float32(name: string): Float32Array {
    const b = this.bytes(name);
    if (b.byteLength % 4) throw new SnapshotError(`section ${name} has a partial element`);
    return new Float32Array(b.buffer, 0, b.byteLength / 4);
  }

  float64(name: string): Float64Array {
    const b = this.bytes(name);
    if (b.byteLength % 8) throw new SnapshotError(`section ${name} has a partial element`);
    return new Float64Array(b.buffer, 0, b.byteLength / 8);
  }

  uint16(name: string): Uint16Array {
    const b = this.bytes(name);
    if (b.byteLength % 2) throw new SnapshotError(`section ${name} has a partial element`);
    return new Uint16Array(b.buffer, 0, b.byteLength / 2);
  }

  /** Streams a section in pieces of a multiple of `unit` bytes, checking its CRC at the end. */
  stream(name: string, unit: number, each: (bytes: Uint8Array, at: number) => void) {
    const s = this.info(name);
    const piece = Math.max(unit, Math.floor(IO_CHUNK / unit) * unit);
    const buffer = new Uint8Array(Math.min(piece, Math.max(s.length, 1)));
    let crc = 0;
    for (let at = 0; at < s.length; at += piece) {
      const n = Math.min(piece, s.length - at);
      const view = buffer.subarray(0, n);
      readExactly(this.fd, view, s.offset + at);
      crc = crc32(view, crc);
      each(view, at);
    }
    if (crc >>> 0 !== s.crc) throw new SnapshotError(`section ${name} fails its checksum`);
  }

  /** Checks a section's CRC without keeping it (the chunk text, read later by offset). */
  verify(name: string) {
    this.stream(name, 1, () => undefined);
  }

  close() {
    closeSync(this.fd);
  }
}

export function readExactly(fd: number, into: Uint8Array, position: number) {
  let done = 0;
  while (done < into.length) {
    const n = readSync(fd, into, done, into.length - done, position + done);
    if (n === 0) throw new SnapshotError("unexpected end of snapshot file");
    done += n;
  }
}

/** Size and CRC-32 of a whole file, read in pieces. */
export async function fileChecksum(file: string): Promise<{ size: number; crc: number }> {
  const handle = await open(file, "r");
  try {
    const buffer = Buffer.allocUnsafeSlow(IO_CHUNK);
    let crc = 0;
    let size = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, size);
      if (!bytesRead) break;
      crc = crc32(buffer.subarray(0, bytesRead), crc);
      size += bytesRead;
    }
    return { size, crc: crc >>> 0 };
  } finally {
    await handle.close();
  }
}

/** fsyncs a file written by someone else (hnswlib's writeIndex). */
export async function syncFile(file: string) {
  const handle = await open(file, "r+");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Removes files of a snapshot directory that are not in `keep` (older graphs, temp files of a crashed write). */
export async function removeOthers(dir: string, keep: Set<string>) {
  const names = await readdir(dir).catch(() => [] as string[]);
  await Promise.all(names.filter((n) => !keep.has(n)).map((n) => rm(path.join(dir, n), { force: true, recursive: true })));
}
