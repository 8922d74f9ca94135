import mongoose, { type Connection, type SchemaOptions } from "mongoose";

/** One connection per URL per process: brokers started side by side in one process share it. */
const connections = new Map<string, Promise<Connection>>();

/** Opens (or reuses) the connection for `url`; services await it in `started`. */
export function connectDatabase(url: string): Promise<Connection> {
  let pending = connections.get(url);
  if (!pending) {
    pending = mongoose
      .createConnection(url, { serverSelectionTimeoutMS: 10_000, autoIndex: true })
      .asPromise()
      .catch((err) => {
        connections.delete(url);
        throw err;
      });
    connections.set(url, pending);
  }
  return pending;
}

/** Closes every connection this process opened (process shutdown and test teardown). */
export async function closeAllDatabases(): Promise<void> {
  const pending = [...connections.values()];
  connections.clear();
  await Promise.all(pending.map(async (p) => (await p.catch(() => null))?.close()));
}

/** The URL services connect to; the server entry point and the test harness set MONGO_URL before brokers start. */
export function databaseUrl(): string {
  const url = process.env.MONGO_URL;
  if (!url) throw new Error("MONGO_URL is not set");
  return url;
}

type Json = Record<string, unknown>;

/**
 * Shared schema options: integer `_id` shown as `id` first, snake_case timestamps, and `hidden` fields
 * (hashes, outboxes) never serialised.
 */
export function recordSchemaOptions<T>(hidden: string[] = []): SchemaOptions<T> {
  const drop = new Set(["_id", "__v", ...hidden]);
  return {
    versionKey: false,
    timestamps: { createdAt: "created_at", updatedAt: "updated_at" },
    toJSON: {
      transform(_doc, ret) {
        const out: Json = { id: ret._id };
        for (const [key, value] of Object.entries(ret as Json)) if (!drop.has(key)) out[key] = value;
        return out;
      },
    },
  };
}
