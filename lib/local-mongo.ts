/**
 * Starts a local MongoDB-wire-compatible server (embedded FerretDB over SQLite,
 * built from scripts/mongo by scripts/mongo/build.sh) for development and tests,
 * since no real MongoDB can be installed on the project's machines.
 */
import { execFileSync, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as path from "node:path";

const LOOPBACK_HOST = "127.0.0.1";
const BINARY_RELATIVE_PATH = path.join(".cache", "mongo", "ferretdb");
const BUILD_SCRIPT_RELATIVE_PATH = path.join("scripts", "mongo", "build.sh");
const SERVER_LOG_LEVEL = "warn";
/** The server prints this once it has bound its port (the actual one when asked for port 0). */
const READY_LINE = /^listening on (?:.*):(\d+)$/m;
/** Generous: on a busy machine (load 15) the server took over 20 s to answer its first hello. */
const READY_TIMEOUT_MS = 120_000;
const READY_POLL_INTERVAL_MS = 100;
const PROBE_TIMEOUT_MS = 2_000;
const STOP_GRACE_MS = 5_000;
const OUTPUT_TAIL_CHARS = 16_000;

/** MongoDB wire protocol: OP_MSG opcode, its body section kind, and the message header size. */
const OP_MSG = 2013;
const SECTION_KIND_BODY = 0;
const MSG_HEADER_BYTES = 16;

export interface LocalMongoOptions {
  /** SQLite data directory; created if missing, reused across restarts. */
  dataDir: string;
  /** TCP port on 127.0.0.1; 0 or undefined lets the server pick a free one. */
  port?: number;
  /** Server binary; defaults to localMongoBinary(). */
  binary?: string;
  /** How long to wait for the server to answer (default 120 s). */
  readyTimeoutMs?: number;
}

export interface LocalMongo {
  /** Connection string without a database name, e.g. mongodb://127.0.0.1:40123 */
  url: string;
  port: number;
  /** The server's process id (benches read its CPU time from /proc). */
  pid: number;
  /** Sends SIGTERM and waits for exit (SIGKILL after 5 s); safe to call twice. */
  stop(): Promise<void>;
}

/** Repo root: the nearest ancestor of this file holding the build script (works from lib/ and dist/lib/). */
/** The repository root (also from a build output directory such as dist-bench). */
export function repoRoot(): string {
  for (let dir = path.resolve(__dirname, ".."); ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, BUILD_SCRIPT_RELATIVE_PATH))) return dir;
    if (path.dirname(dir) === dir) return path.resolve(__dirname, "..");
  }
}

/** Default server binary path, so callers and the build script agree on one location. */
export function localMongoBinary(): string {
  return path.join(repoRoot(), BINARY_RELATIVE_PATH);
}

/** Builds the server binary (a Go build, one to two minutes when cold) only if it is missing. */
export function ensureLocalMongoBuilt(): void {
  if (fs.existsSync(localMongoBinary())) return;
  execFileSync("bash", [path.join(repoRoot(), BUILD_SCRIPT_RELATIVE_PATH)], {
    stdio: ["ignore", "inherit", "inherit"],
  });
}

/** Starts the server and resolves once it answers a MongoDB `hello`, so clients can connect at once. */
export async function startLocalMongo(opts: LocalMongoOptions): Promise<LocalMongo> {
  const binary = opts.binary ?? localMongoBinary();
  if (!fs.existsSync(binary)) {
    throw new Error(`local mongo binary not found at ${binary}; run bash ${BUILD_SCRIPT_RELATIVE_PATH}`);
  }
  const dataDir = path.resolve(opts.dataDir);
  fs.mkdirSync(dataDir, { recursive: true });

  const args = [
    "--listen-addr", `${LOOPBACK_HOST}:${opts.port ?? 0}`,
    "--data-dir", dataDir,
    "--log-level", SERVER_LOG_LEVEL,
    "--exit-on-stdin-close", // our stdin pipe closes if this process dies, even by SIGKILL
  ];
  const child = spawn(binary, args, { stdio: ["pipe", "pipe", "pipe"] });

  let stdout = "";
  let stderrTail = "";
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk: string) => {
    stdout = (stdout + chunk).slice(-OUTPUT_TAIL_CHARS);
  });
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (chunk: string) => {
    stderrTail = (stderrTail + chunk).slice(-OUTPUT_TAIL_CHARS);
  });

  let exitInfo: string | undefined;
  const exited = new Promise<void>((resolve) => {
    child.once("error", (err) => {
      exitInfo ??= `failed to spawn: ${err.message}`;
      resolve();
    });
    child.once("close", (code, signal) => {
      exitInfo ??= signal ? `killed by ${signal}` : `exited with code ${code}`;
      resolve();
    });
  });

  // Best effort on normal parent exit; the stdin watch covers hard kills.
  const killOnParentExit = (): void => {
    child.kill("SIGTERM");
  };
  process.on("exit", killOnParentExit);

  let ready = false;
  let stopping = false;
  void exited.then(() => {
    process.off("exit", killOnParentExit);
    // A crash after startup would otherwise go unnoticed until clients time out.
    if (ready && !stopping) {
      process.stderr.write(`local mongo ${exitInfo}:\n${stderrTail.trim()}\n`);
    }
  });

  const stop = async (): Promise<void> => {
    stopping = true;
    if (exitInfo === undefined) {
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), STOP_GRACE_MS);
      await exited;
      clearTimeout(timer);
    }
  };

  // Wait for the ready line (so a probe cannot reach another server that holds
  // the port), then for a successful handshake.
  const readyTimeoutMs = opts.readyTimeoutMs ?? READY_TIMEOUT_MS;
  const deadline = Date.now() + readyTimeoutMs;
  for (;;) {
    if (exitInfo !== undefined) {
      throw new Error(`local mongo ${exitInfo} before becoming ready:\n${stderrTail.trim()}`);
    }
    const port = Number(READY_LINE.exec(stdout)?.[1] ?? 0);
    if (port > 0 && (await helloSucceeds(port))) {
      ready = true;
      return { url: `mongodb://${LOOPBACK_HOST}:${port}`, port, pid: child.pid!, stop };
    }
    if (Date.now() >= deadline) {
      await stop();
      throw new Error(`local mongo not ready after ${readyTimeoutMs} ms:\n${stderrTail.trim()}`);
    }
    await Promise.race([delay(READY_POLL_INTERVAL_MS), exited]);
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** True if the server answers `hello` with ok: 1 (a bare TCP accept could precede serving). */
function helloSucceeds(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    let received = Buffer.alloc(0);
    const socket = net.connect({ host: LOOPBACK_HOST, port });
    const finish = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(PROBE_TIMEOUT_MS, () => finish(false));
    socket.once("error", () => finish(false));
    socket.once("close", () => finish(false));
    socket.once("connect", () => socket.write(helloMessage()));
    socket.on("data", (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (received.length < 4) return;
      const length = received.readInt32LE(0);
      if (received.length < length) return;
      finish(isOkReply(received.subarray(0, length)));
    });
  });
}

/** OP_MSG carrying { hello: 1, $db: "admin" }. */
function helloMessage(): Buffer {
  const body = bsonDocument([
    bsonElement(0x10, "hello", int32(1)),
    bsonElement(0x02, "$db", bsonString("admin")),
  ]);
  const header = Buffer.alloc(MSG_HEADER_BYTES);
  const flagBits = Buffer.alloc(4);
  const length = header.length + flagBits.length + 1 + body.length;
  header.writeInt32LE(length, 0);
  header.writeInt32LE(1, 4); // requestID
  header.writeInt32LE(0, 8); // responseTo
  header.writeInt32LE(OP_MSG, 12);
  return Buffer.concat([header, flagBits, Buffer.from([SECTION_KIND_BODY]), body]);
}

function isOkReply(msg: Buffer): boolean {
  const bodyStart = MSG_HEADER_BYTES + 4 + 1;
  if (msg.length <= bodyStart || msg.readInt32LE(12) !== OP_MSG || msg[bodyStart - 1] !== SECTION_KIND_BODY) {
    return false;
  }
  return bsonTopLevelNumber(msg.subarray(bodyStart), "ok") === 1;
}

function int32(value: number): Buffer {
  const buf = Buffer.alloc(4);
  buf.writeInt32LE(value, 0);
  return buf;
}

function bsonString(value: string): Buffer {
  const bytes = Buffer.from(`${value}\0`, "utf8");
  return Buffer.concat([int32(bytes.length), bytes]);
}

function bsonElement(type: number, name: string, value: Buffer): Buffer {
  return Buffer.concat([Buffer.from([type]), Buffer.from(`${name}\0`, "utf8"), value]);
}

function bsonDocument(elements: Buffer[]): Buffer {
  const content = Buffer.concat([...elements, Buffer.from([0])]);
  return Buffer.concat([int32(content.length + 4), content]);
}

/** Fixed value sizes of the BSON types a hello reply uses; others are length-prefixed or unsupported. */
const BSON_FIXED_SIZES: Readonly<Record<number, number>> = {
  0x01: 8, // double
  0x07: 12, // ObjectId
  0x08: 1, // bool
  0x09: 8, // UTC datetime
  0x0a: 0, // null
  0x10: 4, // int32
  0x11: 8, // timestamp
  0x12: 8, // int64
  0x13: 16, // decimal128
};

/** Reads a numeric top-level field of a BSON document; undefined if absent or unparsable. */
function bsonTopLevelNumber(doc: Buffer, field: string): number | undefined {
  let pos = 4;
  while (pos < doc.length && doc[pos] !== 0) {
    const type = doc[pos];
    const nameEnd = doc.indexOf(0, pos + 1);
    if (type === undefined || nameEnd < 0) return undefined;
    const name = doc.toString("utf8", pos + 1, nameEnd);
    const valueStart = nameEnd + 1;
    if (name === field) {
      if (type === 0x01) return doc.readDoubleLE(valueStart);
      if (type === 0x10) return doc.readInt32LE(valueStart);
      if (type === 0x12) return Number(doc.readBigInt64LE(valueStart));
      return undefined;
    }
    let size = BSON_FIXED_SIZES[type];
    if (size === undefined) {
      if (type === 0x02) size = 4 + doc.readInt32LE(valueStart); // string
      else if (type === 0x03 || type === 0x04) size = doc.readInt32LE(valueStart); // document, array
      else if (type === 0x05) size = 5 + doc.readInt32LE(valueStart); // binary
      else return undefined;
    }
    pos = valueStart + size;
  }
  return undefined;
}
