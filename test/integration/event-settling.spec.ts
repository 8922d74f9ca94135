import { ServiceBroker, type Service } from "moleculer";
import type { Connection } from "mongoose";
import { loadConfig } from "../../lib/config";
import { closeAllDatabases } from "../../lib/db";
import {
  abortEvents,
  beginChanges,
  changeOf,
  commitEvents,
  commitEventsGrouped,
  EVENT_QUEUE_COLLECTION,
  EVENTS_COLLECTION,
  eventIdFor,
  flushCommits,
  groupsFor,
  prepareEvents,
  preparedId,
  subjectOf,
  type ChangeDraft,
} from "../../lib/events";
import { decodeFreeJson } from "../../lib/free-json";
import { EventsMixin, type EventsMethods } from "../../lib/events.mixin";
import { nextRecordId } from "../../lib/ids";
import { MongoMixin } from "../../lib/mongo.mixin";
import { configured } from "../../services";
import { databaseUrl } from "../harness/servers";

/**
 * The states a change can be cut off in (docs/adr/0038-events-of-cut-off-writes.md), each built step by step
 * on the real database, and what settling makes of them: a stored record ends with exactly one committed event,
 * queued once for each consumer group; a change that never happened ends with none.
 */
describe("settling events of cut-off and failed writes", () => {
  const broker = new ServiceBroker({ logger: false });
  const config = loadConfig({ MONGO_URL: databaseUrl(process.env.TEST_MONGO_URL!, "event-settling"), EVENTS_ABANDONED_MS: "60000" });
  let failRender = new Set<number>();
  const service = broker.createService(
    configured(
      {
        name: "settling-probe",
        mixins: [
          EventsMixin({
            records: {
              tools(record: Record<string, unknown>) {
                if (failRender.has(record._id as number)) throw new Error("render failed");
                return { id: record._id, name: record.name };
              },
            },
          }),
          MongoMixin(() => ({})),
        ],
      },
      config,
    ),
  ) as Service & EventsMethods & { db: Connection; settleAbandonedEvents(): Promise<void> };
  const accountId = 7;
  let nextRecord = 1000;

  beforeAll(async () => {
    await broker.start();
    await Promise.all([EVENTS_COLLECTION, EVENT_QUEUE_COLLECTION, "tools"].map((c) => service.db.collection(c).deleteMany({})));
    // A subscription in the account: its events are queued for the webhooks group too.
    await service.db.collection("webhook_subscriptions").updateOne({ _id: 1, account_id: accountId } as never, { $set: { account_id: accountId } }, { upsert: true });
  });
  afterAll(async () => {
    await broker.stop();
    await closeAllDatabases();
  });

  const draftOf = (id: number): ChangeDraft => changeOf("tool.created", "tools", { _id: id, account_id: accountId });
  /** The created event of record `id`, as its writer commits it. */
  const createdEvent = (eventId: string, id: number) => ({ id: eventId, type: "tool.created", account_id: accountId, subject: subjectOf(["tools", id]), data: { id } });
  const store = (id: number) => service.db.collection("tools").insertOne({ _id: id as never, account_id: accountId, name: `tool ${id}` });
  /** The log entries and queued items of a record, as consumers would find them. */
  async function eventsOf(id: number) {
    const subject = subjectOf(["tools", id]);
    const log = await service.db.collection(EVENTS_COLLECTION).find({ subject }).toArray();
    const queued = await service.db.collection(EVENT_QUEUE_COLLECTION).find({ subject }).toArray();
    return { states: log.map((e) => e.state), queued: queued.map((q) => q._id), data: log.map((e) => decodeFreeJson(e.data)) };
  }
  const queuedOnce = (eventIds: string[]) => eventIds.flatMap((id) => groupsFor("tool.created").map((group) => `${group}:${id}`));
  /** Makes prepared events old enough to count as abandoned. */
  const age = (ids: string[]) => service.db.collection(EVENTS_COLLECTION).updateMany({ event_id: { $in: ids } } as never, { $set: { occurred_at: new Date(Date.now() - 120_000) } });
  const preparedEntry = (eventId: string) => service.db.collection(EVENTS_COLLECTION).findOne({ _id: preparedId(eventId) } as never);

  it("a commit whose prepared event a settler dropped (it looked before the write landed) still commits and queues it", async () => {
    const id = nextRecord++;
    const [eventId] = await prepareEvents(service.db, [draftOf(id)]);
    await abortEvents(service.db, [eventId!]); // the settler saw no record yet
    await store(id);
    expect(await commitEvents(service.db, [createdEvent(eventId!, id)])).toBe(1);
    expect(await eventsOf(id)).toMatchObject({ states: ["committed"], queued: queuedOnce([eventId!]) });
  });

  it("a writer's grouped commit answers once its work is queued; the committed entry is logged after, then the prepared one goes", async () => {
    const id = nextRecord++;
    const [eventId] = await prepareEvents(service.db, [draftOf(id)]);
    await store(id);
    expect(await commitEventsGrouped(service.db, [createdEvent(eventId!, id)])).toEqual(groupsFor("tool.created"));
    // Answered: consumers have it; the log takes it within LOG_GATHER_MS (a kill before that leaves what the next case settles).
    expect((await eventsOf(id)).queued).toEqual(queuedOnce([eventId!]));
    await flushCommits(service.db);
    expect(await eventsOf(id)).toMatchObject({ states: ["committed"], queued: queuedOnce([eventId!]), data: [{ id }] });
  });

  it("a process killed after queuing, before the committed entry: settling commits it once, queued once", async () => {
    const id = nextRecord++;
    const [eventId] = await prepareEvents(service.db, [draftOf(id)]);
    const prepared = await preparedEntry(eventId!);
    await store(id);
    await commitEvents(service.db, [createdEvent(eventId!, id)]);
    // Back to the state a kill right before the committed entry leaves: queued, still prepared.
    await service.db.collection(EVENTS_COLLECTION).deleteOne({ _id: eventId } as never);
    await service.db.collection(EVENTS_COLLECTION).insertOne(prepared!);
    await age([eventId!]);
    await service.settleAbandonedEvents();
    expect(await eventsOf(id)).toMatchObject({ states: ["committed"], queued: queuedOnce([eventId!]) });
  });

  it("a process killed after the committed entry, before dropping the prepared one: settling only drops it", async () => {
    const id = nextRecord++;
    const [eventId] = await prepareEvents(service.db, [draftOf(id)]);
    const prepared = await preparedEntry(eventId!);
    await store(id);
    await commitEvents(service.db, [{ ...createdEvent(eventId!, id), data: { id, as: "committed" } }]);
    await service.db.collection(EVENTS_COLLECTION).insertOne(prepared!);
    await age([eventId!]);
    await service.settleAbandonedEvents();
    // Not committed again with the record rendered now: the event keeps the data its writer committed.
    expect(await eventsOf(id)).toMatchObject({ states: ["committed"], queued: queuedOnce([eventId!]), data: [{ id, as: "committed" }] });
  });

  it("an event the previous version prepared under its own id is committed in place", async () => {
    const id = nextRecord++;
    const eventId = `evt_previous_${id}`;
    // As that version wrote it: the prepared entry under the event's id, without event_id.
    await service.db.collection(EVENTS_COLLECTION).insertOne({
      _id: eventId,
      type: "tool.created",
      account_id: accountId,
      subject: subjectOf(["tools", id]),
      data: {},
      occurred_at: new Date(),
      state: "prepared",
      seq: null,
      committed_at: null,
    } as never);
    await store(id);
    expect(await commitEvents(service.db, [createdEvent(eventId, id)])).toBe(1);
    expect(await eventsOf(id)).toMatchObject({ states: ["committed"], queued: queuedOnce([eventId]) });
  });

  it("the live commit and a settler committing one event at once: one committed event, queued once, counted once", async () => {
    const id = nextRecord++;
    const [eventId] = await prepareEvents(service.db, [draftOf(id)]);
    await store(id);
    const counts = await Promise.all([commitEvents(service.db, [createdEvent(eventId!, id)]), commitEvents(service.db, [createdEvent(eventId!, id)])]);
    expect(counts.reduce((a, b) => a + b)).toBe(1);
    expect(await eventsOf(id)).toMatchObject({ states: ["committed"], queued: queuedOnce([eventId!]) });
  });

  it("a create that stored its record and then threw (its answer failed to render) still commits its created event", async () => {
    const id = nextRecord++;
    await expect(
      service.recordChange(draftOf(id), async () => {
        await store(id);
        throw new Error("rendering the answer failed");
      }),
    ).rejects.toThrow("rendering the answer failed");
    expect(await eventsOf(id)).toMatchObject({ states: ["committed"], data: [{ id, name: `tool ${id}` }] });
  });

  it("a create that threw before storing anything leaves no event", async () => {
    const id = nextRecord++;
    await expect(service.recordChange(draftOf(id), () => Promise.reject(new Error("duplicate name")))).rejects.toThrow("duplicate name");
    expect(await eventsOf(id)).toEqual({ states: [], queued: [], data: [] });
  });

  it("settling goes on past an event it cannot settle now, and settles that one once it can", async () => {
    const [broken, fine, neverWritten] = [nextRecord++, nextRecord++, nextRecord++];
    const ids = await prepareEvents(service.db, [draftOf(broken), draftOf(fine), draftOf(neverWritten)]);
    await store(broken);
    await store(fine);
    await age(ids);
    failRender = new Set([broken]);
    await service.settleAbandonedEvents();
    expect((await eventsOf(broken)).states).toEqual(["prepared"]);
    expect(await eventsOf(fine)).toMatchObject({ states: ["committed"], queued: queuedOnce([ids[1]!]) });
    expect(await eventsOf(neverWritten)).toEqual({ states: [], queued: [], data: [] });
    failRender = new Set();
    await service.settleAbandonedEvents();
    expect(await eventsOf(broken)).toMatchObject({ states: ["committed"], queued: queuedOnce([ids[0]!]) });
  });

  describe("creates covered by their ids' block (no prepared entry each)", () => {
    const createdId = (id: number) => eventIdFor("tool.created", subjectOf(["tools", id]));
    const coverOf = (id: number) => service.db.collection(EVENTS_COLLECTION).findOne({ "ids.first": { $lte: id }, "ids.last": { $gte: id } } as never);
    const create = (id: number, data: object = { id }) =>
      service.recordChange(draftOf(id), async () => {
        await store(id);
        return data;
      });
    /** An id the service hands out under a fresh cover: it covers its tools' blocks once it has recorded a create of one. */
    async function coveredId(): Promise<number> {
      const id = await nextRecordId(service.db, "tools");
      if (await coverOf(id)) return id;
      await create(id);
      return coveredId();
    }

    it("a covered create queues its event under an id derived from its record, and logs it without ever preparing it", async () => {
      const id = await coveredId();
      await create(id);
      expect(await preparedEntry(createdId(id))).toBeNull();
      expect((await eventsOf(id)).queued).toEqual(queuedOnce([createdId(id)]));
      await flushCommits(service.db);
      expect(await eventsOf(id)).toMatchObject({ states: ["committed"], queued: queuedOnce([createdId(id)]), data: [{ id }] });
    });

    it("a covered create cut off before its commit is committed, once, by the settling of its block's abandoned cover", async () => {
      const [logged, cutOff, neverWritten] = [await coveredId(), await coveredId(), await coveredId()];
      await create(logged, { id: logged, as: "committed" });
      // A kill after the record's write, before its commit: begun under the cover, stored, never committed.
      const { covers } = await beginChanges(service.db, [draftOf(cutOff)], { abandonedAfterMs: 60_000, renders: () => true });
      expect(covers[0]).toBeDefined();
      await store(cutOff);
      await flushCommits(service.db);
      const cover = await coverOf(cutOff);
      expect(cover).toMatchObject({ state: "prepared", type: "tool.created" });
      expect(await eventsOf(cutOff)).toEqual({ states: [], queued: [], data: [] });

      await service.db.collection(EVENTS_COLLECTION).updateOne({ _id: cover!._id }, { $set: { occurred_at: new Date(Date.now() - 120_000) } });
      await service.settleAbandonedEvents();
      expect(await eventsOf(cutOff)).toMatchObject({ states: ["committed"], queued: queuedOnce([createdId(cutOff)]), data: [{ id: cutOff, name: `tool ${cutOff}` }] });
      expect(await eventsOf(logged)).toMatchObject({ states: ["committed"], queued: queuedOnce([createdId(logged)]), data: [{ id: logged, as: "committed" }] });
      expect(await eventsOf(neverWritten)).toEqual({ states: [], queued: [], data: [] });
      expect(await coverOf(cutOff)).toBeNull();
    });

    it("a covered create that stored its record and then threw still commits its created event", async () => {
      const id = await coveredId();
      await expect(
        service.recordChange(draftOf(id), async () => {
          await store(id);
          throw new Error("rendering the answer failed");
        }),
      ).rejects.toThrow("rendering the answer failed");
      expect(await eventsOf(id)).toMatchObject({ states: ["committed"], queued: queuedOnce([createdId(id)]), data: [{ id, name: `tool ${id}` }] });
    });

    it("a block's cover is dropped once the block is used up and its covered creates are logged", async () => {
      const id = await coveredId();
      await create(id);
      const cover = await coverOf(id);
      expect(cover).not.toBeNull();
      // The next block's first id retires this block's cover.
      while ((await nextRecordId(service.db, "tools")) <= (cover!.ids as { last: number }).last);
      await flushCommits(service.db);
      expect(await service.db.collection(EVENTS_COLLECTION).findOne({ _id: cover!._id })).toBeNull();
      expect(await eventsOf(id)).toMatchObject({ states: ["committed"], queued: queuedOnce([createdId(id)]) });
    });
  });
});
