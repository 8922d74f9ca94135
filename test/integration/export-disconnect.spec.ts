import { once } from "node:events";
import http from "node:http";
import type { Readable } from "node:stream";
import type { Connection } from "mongoose";
import { connectDatabase } from "../../lib/db";
import { nextId } from "../../lib/ids";
import { entityModel } from "../../services/entities/model";
import { startCluster, type Cluster } from "../harness/cluster";
import { apiClient, signup } from "../harness/http";
import { until, scaled } from "../harness/wait";

/**
 * Records of the exported account: the export reads them in batches of 500, so a whole export is 20 reads. Over
 * NATS the producer does not wait for the HTTP client (moleculer has no flow control across nodes): 3 to 7 of those
 * reads were done by the time it heard of the hang-up, at load averages of 3 to 7.
 */
const RECORDS = 10_000;
const READS_OF_A_WHOLE_EXPORT = RECORDS / 500;

/** The export's reads as the services' own database client sends them: cursor continuations and cursor kills. */
function watchExportReads(client: ReturnType<Connection["getClient"]>) {
  const seen = { getMore: 0, killCursors: 0 };
  client.on("commandStarted", (event) => {
    if (event.commandName === "getMore" && event.command.collection === "entities") seen.getMore++;
    if (event.commandName === "killCursors" && event.command.killCursors === "entities") seen.killCursors++;
  });
  return seen;
}

/** GET /entities/export over a real socket: resolves with the status once the first body chunk arrived, and hangs up. */
function readFirstChunkAndHangUp(url: string, token: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers: { authorization: `Bearer ${token}` } }, (res) => {
      // The hang-up below aborts the response: that error is the point, not a failure.
      res.on("error", () => {});
      res.once("data", () => {
        req.destroy();
        resolve(res.statusCode!);
      });
    });
    req.on("error", (err) => {
      if (!req.destroyed) reject(err);
    });
  });
}

describe.each([
  ["over NATS (export on another node than the HTTP socket)", false],
  ["embedded (one broker, no transporter)", true],
])("an export whose HTTP client goes away, %s", (_label, embedded) => {
  let cluster: Cluster;
  let token: string;
  let accountId: number;
  let reads: { getMore: number; killCursors: number };

  beforeAll(async () => {
    // Over NATS, a node of its own calls the export too (the last test).
    const extraServices = embedded ? [] : [{ name: "export-caller" }];
    cluster = await startCluster({ database: embedded ? "export_hangup_embedded" : "export_hangup_nats", embedded, extraServices, monitorCommands: true });
    const api = apiClient(cluster.baseUrl);
    ({ token } = await signup(api, "hangup"));
    const agent = (await api("POST", "/api/v1/agents", { token, body: { name: "Exporter" } })).body as { id: number; name: string; account_id: number };
    accountId = agent.account_id;
    const db = await connectDatabase(cluster.mongoUrl);
    const lastId = await nextId(db, "entities", RECORDS);
    const now = Date.now();
    const records = Array.from({ length: RECORDS }, (_, i) => ({
      _id: lastId - i, account_id: agent.account_id, agent_id: agent.id, agent_name: agent.name, entity_type_name: i % 2 ? "Lead" : "Support request",
      status: ["new", "reviewed", "actioned"][i % 3], attributes: { name: `Customer ${i}`, email: `customer${i}@example.com`, budget: i * 10 },
      display_name: `Customer ${i}`, contact_email: `customer${i}@example.com`, created_at: new Date(now - i * 1000),
    }));
    for (let i = 0; i < RECORDS; i += 1000) await entityModel(db).insertMany(records.slice(i, i + 1000));
    reads = watchExportReads(db.getClient());
  }, scaled(120_000));
  afterAll(() => cluster?.stop());

  it("closes the export's database cursor early and reads nothing after that", async () => {
    expect(await readFirstChunkAndHangUp(`${cluster.baseUrl}/api/v1/entities/export`, token)).toBe(200);
    // A cursor read to its end is closed by the database (its id comes back 0); the client kills only one it
    // abandons, so a killCursors is the export stopping before its end.
    await until(async () => reads.killCursors, (kills) => kills > 0, 10_000, "a killCursors of the export's cursor");
    const readsWhenClosed = reads.getMore;
    await new Promise((r) => setTimeout(r, 500));
    expect(reads.getMore).toBe(readsWhenClosed);
    expect(reads.getMore).toBeLessThan(READS_OF_A_WHOLE_EXPORT - 1);
    expect(reads.killCursors).toBe(1);
    if (!embedded) {
      // The gateway's node no longer waits for the rest of the stream.
      const transit = cluster.brokers[0]!.transit!;
      expect(transit.pendingRequests.size).toBe(0);
      expect(transit.pendingResStreams.size).toBe(0);
    }
  }, scaled(30_000));

  if (!embedded) {
    it("closes the cursor when the node reading the export leaves before its end", async () => {
      const caller = cluster.brokers.at(-1)!;
      const before = { ...reads };
      const stream = await caller.call<Readable, Record<string, unknown>>("entities.export", {}, { meta: { accountId } });
      await once(stream, "data");
      await caller.stop();
      await until(async () => reads.killCursors, (kills) => kills > before.killCursors, 10_000, "a killCursors of the export's cursor");
      expect(reads.getMore - before.getMore).toBeLessThan(READS_OF_A_WHOLE_EXPORT - 1);
    }, scaled(30_000));
  }
});
