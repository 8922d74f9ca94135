import http from "node:http";
import type { AddressInfo } from "node:net";
import mongoose from "mongoose";
import { EVENT_QUEUE_COLLECTION, type QueuedEvent } from "../../lib/events";
import { deliveryModel } from "../../services/webhooks/model";
import { startCluster, type Cluster } from "../harness/cluster";
import { apiClient, signup, type Api } from "../harness/http";
import { scaled, until } from "../harness/wait";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Long enough that no poll's claim falls inside a case: what the replicas take, they take on wakes. */
const POLL_MS = 60_000;

/** A receiver that holds every delivery until released, so the deliveries stay leased by whoever claimed them. */
async function startHoldingReceiver() {
  const held: http.ServerResponse[] = [];
  let holding = true;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => (holding ? held.push(res) : res.writeHead(204).end()));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    held,
    hold() {
      holding = true;
    },
    release() {
      holding = false;
      for (const res of held.splice(0)) res.writeHead(204).end();
    },
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

/**
 * Consumer wakes over NATS (lib/events.mixin.ts, docs/adr/0063-one-replica-takes-the-wakes.md): a group's wakes go to
 * one replica (the sender's own, else the one the hash ring gives), so a burst's events go to one replica in batches;
 * when that replica leaves, another takes the wakes.
 */
describe("consumer wakes over NATS, three webhooks replicas", () => {
  let cluster: Cluster;
  let api: Api;
  let receiver: Awaited<ReturnType<typeof startHoldingReceiver>>;
  let db: mongoose.Connection;
  let token: string;
  let accountId: number;
  /** The webhooks nodes (the ring may give the tools node's wakes to any of them). */
  let replicas: string[];
  /** The one of them that took the first burst. */
  let taker: string;
  /** The node of the traits service and a webhooks replica. */
  let traitsNode: string;

  beforeAll(async () => {
    cluster = await startCluster({
      database: "event_wakes",
      env: { EVENTS_POLL_MS: String(POLL_MS), WEBHOOK_POLL_MS: String(POLL_MS) },
      // Tools commit on a node without the group; traits on one of its replicas.
      nodes: [["gateway"], ["users", "api-keys", "tools"], ["webhooks"], ["webhooks"], ["traits", "webhooks"]],
    });
    replicas = cluster.brokers.slice(2).map((b) => b.nodeID);
    traitsNode = cluster.brokers[4]!.nodeID;
    api = apiClient(cluster.baseUrl);
    receiver = await startHoldingReceiver();
    db = await mongoose.createConnection(cluster.mongoUrl).asPromise();
    const owner = await signup(api, "wakes");
    token = owner.token;
    accountId = owner.user.account_id;
    const subscription = await api("POST", "/api/v1/webhook-subscriptions", { token, body: { url: receiver.url, event_types: ["tool.created", "trait.created"] } });
    expect(subscription.status).toBe(201);
  }, scaled(60_000));
  afterAll(async () => {
    receiver?.release();
    await cluster?.stop();
    await receiver?.close();
    await db?.close();
  });

  /** Creates `count` records over several wake periods (50 ms each), so that wakes alternating between replicas would split them. */
  async function create(collection: "tools" | "traits", prefix: string, count: number): Promise<void> {
    for (let i = 0; i < count; i++) {
      const name = `${prefix}-${i}`;
      const created = await api("POST", `/api/v1/${collection}`, { token, body: collection === "tools" ? { name, identifier: name, tool_type: "function" } : { name } });
      expect(created.status).toBe(201);
      if (i % 4 === 3) await sleep(60);
    }
  }

  /** Who holds the lease of each delivery still out (the receiver holds them), by node. */
  async function leaseOwners(): Promise<Record<string, number>> {
    const rows = await deliveryModel(db).find({ account_id: accountId, status: "pending" }, { lease_owner: 1 }).lean();
    const owners: Record<string, number> = {};
    for (const row of rows) owners[String(row.lease_owner)] = (owners[String(row.lease_owner)] ?? 0) + 1;
    return owners;
  }

  it("gives every wake of a burst to one replica: it claims all the burst's events", async () => {
    await create("tools", "burst", 16);
    await until(async () => receiver.held.length, (n) => n === 16, scaled(15_000), "16 deliveries held by the receiver");
    const owners = await leaseOwners();
    taker = Object.keys(owners)[0]!;
    expect(replicas).toContain(taker);
    expect(owners).toEqual({ [taker]: 16 });
    receiver.release();
    await until(async () => await deliveryModel(db).countDocuments({ account_id: accountId, status: "delivered" }), (n) => n === 16, scaled(15_000), "16 deliveries delivered");
  });

  it("gives the wakes of a node running the group to its own replica", async () => {
    receiver.hold();
    await create("traits", "own", 8);
    await until(async () => receiver.held.length, (n) => n === 8, scaled(15_000), "8 deliveries held by the receiver");
    expect(await leaseOwners()).toEqual({ [traitsNode]: 8 });
    receiver.release();
    await until(async () => await deliveryModel(db).countDocuments({ account_id: accountId, status: "delivered" }), (n) => n === 24, scaled(15_000), "8 more deliveries delivered");
  });

  it("gives the wakes to another replica once that one has left", async () => {
    await cluster.brokers.find((b) => b.nodeID === taker)!.stop();
    const tools = cluster.brokers[1]!;
    await until(
      async () => tools.registry.getServiceList({ onlyAvailable: true }).filter((s) => s.name === "webhooks").length,
      (n) => n === 2,
      scaled(15_000),
      "the replica gone from the tools node's registry",
    );
    const before = Date.now();
    await create("tools", "after", 8);
    // Far sooner than a poll: the wakes reached a remaining replica.
    await until(async () => await deliveryModel(db).countDocuments({ account_id: accountId, status: "delivered" }), (n) => n === 32, scaled(15_000), "8 more deliveries delivered");
    expect(Date.now() - before).toBeLessThan(POLL_MS / 2);
  });

  it("claims again at once when a woken claim was all held back behind an older event another claimer holds", async () => {
    const queue = db.collection<QueuedEvent>(EVENT_QUEUE_COLLECTION);
    const subject = "tools/999999999";
    const queuedAt = new Date(Date.now() - 1_000);
    const item = (seq: number, claimedBy: string | null, claimUntil: Date): QueuedEvent => ({
      _id: `webhooks:evt_held_${seq}`,
      group: "webhooks",
      subject,
      seq,
      event: { id: `evt_held_${seq}`, type: "tool.updated", account_id: accountId, subject, data: {}, occurred_at: queuedAt },
      claim_until: claimUntil,
      claimed_by: claimedBy,
      queued_at: queuedAt,
    });
    // A record's event held elsewhere for longer than the case, and a whole claim's worth (50) of its later events,
    // queued before anything else: the woken replica's first claim takes only those, and holds them all back.
    await queue.insertMany([item(1, "elsewhere", new Date(Date.now() + 10 * POLL_MS)), ...Array.from({ length: 50 }, (_, i) => item(i + 2, null, new Date(0)))]);
    try {
      const before = Date.now();
      await create("tools", "behind", 1);
      // Far sooner than a poll: the replica claimed again after the held-back batch instead of sleeping.
      await until(async () => await deliveryModel(db).countDocuments({ account_id: accountId, status: "delivered" }), (n) => n === 33, scaled(15_000), "the new tool's delivery");
      expect(Date.now() - before).toBeLessThan(POLL_MS / 2);
    } finally {
      await queue.deleteMany({ subject });
    }
  });
});
