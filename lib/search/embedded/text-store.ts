import { closeSync } from "node:fs";
import { wellFormed } from "../../text";
import { readExactly, type SnapshotWriter } from "../snapshot-file";

/**
 * Chunk text by slot. Text of chunks added since the last snapshot is held as strings; once a snapshot has
 * written it, the strings are dropped and the text is read back from the snapshot file by offset when a
 * search returns the chunk (a pread of about a kilobyte from the page cache per hit). So the process does
 * not hold the corpus text at all after a snapshot, which is the largest part of its memory otherwise.
 * Text is stored as UTF-8, or UTF-16 when it has a lone surrogate, so it reads back exactly as written.
 */
export class ChunkTexts {
  private strings: (string | undefined)[] = [];
  /** Absolute offset in the snapshot file, per slot. */
  private offsets = new Float64Array(1024);
  /** Byte length in the snapshot file (negative: UTF-16), 0 when the slot's text is not in the file. */
  private lengths = new Int32Array(1024);
  private fd = -1;
  private scratch = Buffer.allocUnsafeSlow(16 * 1024);
  /** Characters of live text (for size statistics). */
  private charCount = 0;
  private chars = new Int32Array(1024);

  /** Whether some text is read from a snapshot file. */
  get onDisk(): boolean {
    return this.fd >= 0;
  }

  get liveChars(): number {
    return this.charCount;
  }

  /** Characters of a slot's text. */
  charsOf(slot: number): number {
    return slot < this.chars.length ? this.chars[slot]! : 0;
  }

  private ensure(slot: number) {
    if (slot < this.lengths.length) return;
    let n = this.lengths.length;
    while (n <= slot) n *= 2;
    const offsets = new Float64Array(n);
    offsets.set(this.offsets);
    this.offsets = offsets;
    const lengths = new Int32Array(n);
    lengths.set(this.lengths);
    this.lengths = lengths;
    const chars = new Int32Array(n);
    chars.set(this.chars);
    this.chars = chars;
  }

  set(slot: number, text: string) {
    this.ensure(slot);
    this.delete(slot);
    this.strings[slot] = text;
    this.chars[slot] = text.length;
    this.charCount += text.length;
  }

  get(slot: number): string {
    const s = this.strings[slot];
    if (s !== undefined) return s;
    const length = slot < this.lengths.length ? this.lengths[slot]! : 0;
    if (!length || this.fd < 0) return "";
    const n = Math.abs(length);
    if (n > this.scratch.length) this.scratch = Buffer.allocUnsafeSlow(Math.max(n, this.scratch.length * 2));
    readExactly(this.fd, this.scratch.subarray(0, n), this.offsets[slot]!);
    return this.scratch.toString(length < 0 ? "utf16le" : "utf8", 0, n);
  }

  delete(slot: number) {
    if (slot >= this.lengths.length) return;
    this.strings[slot] = undefined;
    this.lengths[slot] = 0;
    this.charCount -= this.chars[slot]!;
    this.chars[slot] = 0;
  }

  /**
   * Writes the text of `slots` (ascending) as one section of a snapshot and returns where each landed.
   * Text already in the current snapshot file is copied from it; the rest is encoded from the strings.
   */
  async write(writer: SnapshotWriter, slots: Int32Array): Promise<{ offsets: Float64Array; lengths: Int32Array }> {
    const offsets = new Float64Array(slots.length);
    const lengths = new Int32Array(slots.length);
    writer.begin("text");
    for (let i = 0; i < slots.length; i++) {
      const slot = slots[i]!;
      offsets[i] = writer.offset;
      const s = this.strings[slot];
      if (s !== undefined) {
        const utf8 = wellFormed(s);
        const n = await writer.writeString(s, utf8 ? "utf8" : "utf16le");
        lengths[i] = utf8 ? n : -n;
      } else {
        const length = this.lengths[slot]!;
        if (length) await writer.copyFrom(this.fd, this.offsets[slot]!, Math.abs(length));
        lengths[i] = length;
      }
    }
    writer.end();
    return { offsets, lengths };
  }

  /**
   * Reads text from a (new) snapshot file from now on: `slots` are at `offsets` with `lengths`, and their
   * strings are dropped. The previous file is closed; a replaced file stays readable through its open
   * descriptor until then, because snapshots are renamed into place, never rewritten.
   */
  adopt(fd: number, slots: Int32Array, offsets: Float64Array, lengths: Int32Array, chars?: Int32Array) {
    const previous = this.fd;
    this.fd = fd;
    for (let i = 0; i < slots.length; i++) {
      const slot = slots[i]!;
      this.ensure(slot);
      this.strings[slot] = undefined;
      this.offsets[slot] = offsets[i]!;
      this.lengths[slot] = lengths[i]!;
      if (chars) {
        this.charCount += chars[i]! - this.chars[slot]!;
        this.chars[slot] = chars[i]!;
      }
    }
    if (previous >= 0 && previous !== fd) closeSync(previous);
  }

  /** Reads `slots`' text from a snapshot file into strings (partitions too small to keep a file open for). */
  load(fd: number, slots: Int32Array, offsets: Float64Array, lengths: Int32Array) {
    for (let i = 0; i < slots.length; i++) {
      const n = Math.abs(lengths[i]!);
      const bytes = Buffer.allocUnsafe(n);
      readExactly(fd, bytes, offsets[i]!);
      this.set(slots[i]!, bytes.toString(lengths[i]! < 0 ? "utf16le" : "utf8"));
    }
  }

  close() {
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
  }
}
