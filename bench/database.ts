import mongoose from "mongoose";

/** Drops a bench's database on a server that outlives the bench (MONGO_URL); best effort, bounded in time. */
export async function dropDatabase(url: string): Promise<void> {
  const conn = mongoose.createConnection(url, { serverSelectionTimeoutMS: 5_000 });
  try {
    await conn.asPromise();
    await conn.dropDatabase();
  } catch (err) {
    console.error(`could not drop ${url}: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    await conn.close().catch(() => {});
  }
}
