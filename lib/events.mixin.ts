import type { Connection } from "mongoose";
import type { Service, ServiceSchema } from "moleculer";
import { configOf } from "./config";
import {
  abandonedEvents,
  abortEvents,
  acknowledgeEvents,
  appendEvent,
  beginChanges,
  claimEvents,
  commitEventsGrouped,
  ensureEventIndexes,
  flushCommits,
  groupsFor,
  pruneEvents,
  queuedEvent,
  releaseEvents,
  resolvePrepared,
  settleIdBlock,
  subjectOf,
  type ChangeDraft,
  type ChangeEvent,
  type CreateCover,
} from "./events";
import { tenantFilter } from "./tenancy-guard";

type Data = Record<string, unknown>;
/** A change to commit: its event's id, its draft, and for a covered create its block's cover (lib/events.ts beginChanges). */
type Change = { id: string; draft: ChangeDraft; cover?: CreateCover };

/**
 * Emitted after commits with the consumer groups they queued work for (at most once per WAKE_EVERY_MS). Each group's
 * wakes go to one replica: the sender's own when it runs the group (the balancer's preferLocal), else the node that
 * Moleculer's hash ring gives the constant WAKE_SHARD, the same for every sender while the group's nodes stay. That
 * replica claims the fresh work alone and the others take only what waited a poll period, so replicas neither split
 * a burst into small claims nor race for the same items (docs/adr/0063-one-replica-takes-the-wakes.md).
 */
export const EVENTS_COMMITTED = "events.committed";
/** The shard key every wake carries (a string: the strategy's options reach emitters on other nodes as JSON). */
const WAKE_SHARD = { shardKey: "shard", value: "wakes" } as const;

/**
 * A process wakes a group's consumers at most this often: the first commit after a quiet spell at once, later ones
 * together when the period is over. One replica acts on each wake and claims what was queued since the last, so
 * a claim's batch follows the period, not the number of replicas (docs/adr/0060-claims-cost-their-batch.md).
 */
const WAKE_EVERY_MS = 50;

/** Sends the groups it is given at most once per `everyMs`: at once after a quiet spell, else together at the period's end. */
export class WakeGate {
  private readonly groups = new Set<string>();
  private lastAt = -Infinity;
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly everyMs: number,
    private readonly send: (groups: string[]) => void,
  ) {}

  add(groups: readonly string[]): void {
    for (const group of groups) this.groups.add(group);
    if (this.timer || !this.groups.size) return;
    const wait = this.lastAt + this.everyMs - Date.now();
    if (wait <= 0) this.flush();
    else this.timer = setTimeout(() => this.flush(), wait).unref();
  }

  private flush(): void {
    this.timer = undefined;
    this.lastAt = Date.now();
    const groups = [...this.groups];
    this.groups.clear();
    this.send(groups);
  }
}

const wakeGates = new WeakMap<Service["broker"], WakeGate>();

/** Tells the consumers of `groups` that work is queued for them (a hint: consumers poll anyway). */
function announce(broker: Service["broker"], groups: readonly string[]): void {
  let gate = wakeGates.get(broker);
  if (!gate) {
    // Sent later from a timer, maybe after the broker stopped: a failed emit is dropped, never thrown there.
    const send = (woken: string[]) => void Promise.resolve().then(() => broker.emit(EVENTS_COMMITTED, { groups: woken, [WAKE_SHARD.shardKey]: WAKE_SHARD.value })).catch(() => undefined);
    wakeGates.set(broker, (gate = new WakeGate(WAKE_EVERY_MS, send)));
  }
  gate.add(groups);
}

/** How often abandoned events are looked for, at most (twice per abandonment age when that is shorter). */
const RECOVERY_EVERY_MS = 15_000;
const PRUNE_EVERY_MS = 3_600_000;
/** Events one consumer claims at a time. */
const CLAIM_BATCH = 50;
/**
 * After a batch that was not full, work committed meanwhile is claimed this long later, so a busy stream of
 * commits makes a few batches of many events rather than a claim (two writes) per event.
 */
const GATHER_MS = 20;
/** A failed handler's event is tried again after this long. */
const RETRY_AFTER_MS = 5_000;

export interface EventsOptions {
  /**
   * The collections whose change events this service records, each with how to render a stored record as its
   * event data; used to settle events a crashed replica left prepared.
   */
  records?: Record<string, (this: any, record: Data) => Promise<object> | object>;
  /** The consumer group this service is, and its handler (idempotent: an event may come twice). */
  consumer?: {
    group: string;
    handle(event: ChangeEvent): Promise<unknown>;
    /**
     * Handles a claimed batch at once (idempotent like handle; a batch may come again). When it throws, the batch's
     * events go one by one through `handle`, so one failing event holds back only its record's later events.
     */
    handleBatch?(events: ChangeEvent[]): Promise<unknown>;
  };
}

/** Methods the mixin adds; services declare them in their `this` type. */
export interface EventsMethods {
  /**
   * Records change events in the same unit of work as the write that causes them: prepared before `write`,
   * committed with the data `write` returns (one entry per draft, in order) after it, dropped when it throws.
   * The ONE way a service records its changes; see docs/adr/0020-durable-events.md.
   */
  recordChanges<T extends object>(drafts: ChangeDraft[], write: () => Promise<T[]>): Promise<T[]>;
  /**
   * Commits events prepared elsewhere (a UnitOfWork's `changes`) with their data, in order; `preparedAt`
   * (performance.now()) when this process prepared them, if it did; a create's `cover` when it was covered instead.
   */
  commitChanges(changes: Change[], data: object[], preparedAt?: number): Promise<void>;
  /** commitChanges with each record's current state rendered by the `records` renderers ({id} for deletes). */
  commitRendered(changes: { id: string; draft: ChangeDraft }[]): Promise<void>;
  /** Relays an event already stored with its change (an outbox entry) into the log: idempotent by its id. */
  appendChange(event: ChangeEvent): Promise<void>;
  /** recordChanges for one event; returns its data (usually the response body). */
  recordChange<T extends object>(draft: ChangeDraft, write: () => Promise<T>): Promise<T>;
}

/** The service as the mixin sees it. */
type Self = Service &
  EventsMethods & {
    db: Connection;
    eventTimers: NodeJS.Timeout[];
    consuming?: Promise<void>;
    consumerRunning: boolean;
    wake?: () => void;
    /** A wake came while the consumer was busy: it looks again before it sleeps. */
    wakeMissed?: boolean;
    consumeEvents(): Promise<void>;
    settleAbandonedEvents(): Promise<void>;
  };

/**
 * Settles the events of a write that threw. It may have reached the database before failing (a create whose
 * answer failed to render), so a create or delete is settled by what the database shows, as an abandoned event
 * is; any other change is dropped, since an update that failed cannot be told from one that never happened.
 * When settling throws too, the events stay prepared (or covered) for the sweep.
 */
async function settleFailedWrite(self: Self, options: EventsOptions, changes: Change[]): Promise<void> {
  for (const { id: _id, draft, cover } of changes) {
    const { type, accountId, record } = draft;
    const render = options.records?.[record[0]];
    if (!render || !/\.(created|deleted)$/.test(type)) await abortEvents(self.db, [_id]);
    else if ((await resolvePrepared(self.db, { _id, type, account_id: accountId, subject: subjectOf(record) }, async (stored) => (await render.call(self, stored)) as Data)) === "committed")
      announce(self.broker, groupsFor(type));
    cover?.end();
  }
}

/**
 * Durable events for a service: recording its changes into the event log (lib/events.ts), settling events a
 * crashed replica left prepared, and, for a consumer group, reading the log with claims and acknowledgements.
 * Needs this.db: list it before MongoMixin in `mixins` (Moleculer starts mixins last to first).
 */
export function EventsMixin(options: EventsOptions): Partial<ServiceSchema> {
  return {
    events: options.consumer
      ? {
          [EVENTS_COMMITTED]: {
            strategy: "Shard",
            strategyOptions: { shardKey: WAKE_SHARD.shardKey },
            handler(ctx: { params?: { groups?: string[] } }) {
              const self = this as unknown as Self;
              const groups = ctx.params?.groups;
              if (groups && !groups.includes(options.consumer!.group)) return;
              if (self.wake) self.wake();
              else self.wakeMissed = true;
            },
          },
        }
      : {},

    methods: {
      async recordChanges(this: Self, drafts: ChangeDraft[], write: () => Promise<Data[]>) {
        const preparedAt = performance.now();
        const { ids, covers } = await beginChanges(this.db, drafts, {
          abandonedAfterMs: configOf(this).events.abandonedAfterMs,
          renders: (collection) => Boolean(options.records?.[collection]),
        });
        const changes = ids.map((id, i) => ({ id, draft: drafts[i]!, cover: covers[i] }));
        let data: Data[];
        try {
          data = await write();
        } catch (err) {
          await settleFailedWrite(this, options, changes).catch((settleErr) => this.logger.warn("Settling the events of a failed write failed; the sweep will", settleErr));
          throw err;
        }
        await this.commitChanges(changes, data, preparedAt);
        return data;
      },

      async appendChange(this: Self, event: ChangeEvent) {
        if (await appendEvent(this.db, event)) {
          this.broker.emit(event.type, event);
          announce(this.broker, groupsFor(event.type));
        }
      },

      async commitChanges(this: Self, changes: Change[], data: Data[], preparedAt?: number) {
        if (!changes.length) return;
        const events = changes.map(({ id, draft }, i) => ({
          id,
          type: draft.type,
          account_id: draft.accountId,
          subject: subjectOf(draft.record),
          data: (data[i] ?? {}) as Data,
        }));
        const groups = await commitEventsGrouped(this.db, events.map((event, i) => ({ ...event, preparedAt, cover: changes[i]!.cover })));
        // Live notification for in-cluster listeners that may miss some; consumers that must not read the log.
        const occurred_at = new Date();
        for (const event of events) this.broker.emit(event.type, { ...event, occurred_at });
        announce(this.broker, groups);
      },

      async commitRendered(this: Self, changes: Change[]) {
        const data = [];
        for (const { draft } of changes) {
          const [collection, id] = draft.record;
          const record = draft.type.endsWith(".deleted") ? null : await this.db.collection(collection).findOne(tenantFilter(collection, { _id: id, account_id: draft.accountId }) as never);
          data.push(record ? await options.records![collection]!.call(this, record) : { id });
        }
        await this.commitChanges(changes, data);
      },

      async recordChange(this: Self, draft: ChangeDraft, write: () => Promise<object>) {
        const [data] = await this.recordChanges([draft], async () => [await write()]);
        return data!;
      },

      /** Handles claimed events in order; a failure holds back the record's later events until it succeeds. */
      async consumeEvents(this: Self) {
        const { group, handle, handleBatch } = options.consumer!;
        const settings = configOf(this).events;
        let prunedAt = 0;
        // Woken (or just started): claims whatever is queued. After a poll's timeout, only what has waited a poll
        // period: fresh work is the woken replica's, and this one takes what it left (it is gone, or behind).
        let woken = true;
        while (this.consumerRunning) {
          const queuedBefore = woken ? undefined : new Date(Date.now() - settings.pollMs);
          const { ready: batch, claimed } = await claimEvents(this.db, group, this.broker.nodeID, settings.leaseMs, CLAIM_BATCH, queuedBefore).catch((err) => {
            this.logger.warn(`Claiming ${group} events failed`, err);
            return { ready: [], claimed: 0 };
          });
          const done: string[] = [];
          const failedSubjects = new Set<string>();
          const retry: string[] = [];
          let handled = false;
          if (handleBatch && batch.length > 1) {
            handled = await handleBatch.call(this, batch.map(queuedEvent)).then(
              () => true,
              (err) => (this.logger.warn(`${group} could not handle a batch of ${batch.length}; one by one`, err), false),
            );
            if (handled) done.push(...batch.map((item) => item._id));
          }
          for (const item of handled ? [] : batch) {
            if (failedSubjects.has(item.subject)) {
              retry.push(item._id);
              continue;
            }
            try {
              await handle.call(this, queuedEvent(item));
              done.push(item._id);
            } catch (err) {
              this.logger.warn(`${group} could not handle ${item.event.type} ${item.event.id}; retrying`, err);
              failedSubjects.add(item.subject);
              retry.push(item._id);
            }
          }
          await acknowledgeEvents(this.db, this.broker.nodeID, done).catch((err) => this.logger.warn("Acknowledging events failed", err));
          await releaseEvents(this.db, this.broker.nodeID, retry, RETRY_AFTER_MS).catch(() => undefined);
          // A full claim, held-back events included: more may be queued behind it.
          if (claimed === CLAIM_BATCH) continue;
          if (this.wakeMissed) {
            this.wakeMissed = false;
            woken = true;
            await new Promise((resolve) => setTimeout(resolve, GATHER_MS));
            continue;
          }
          if (Date.now() - prunedAt > PRUNE_EVERY_MS) {
            prunedAt = Date.now();
            const day = 86_400_000;
            await pruneEvents(this.db, new Date(Date.now() - settings.retentionDays * day), new Date(Date.now() - settings.pendingRetentionDays * day)).catch(
              (err) => this.logger.warn("Pruning events failed", err),
            );
          }
          woken = await new Promise<boolean>((resolve) => {
            const timer = setTimeout(() => ((this.wake = undefined), resolve(false)), settings.pollMs);
            this.wake = () => (clearTimeout(timer), (this.wake = undefined), resolve(true));
          });
        }
      },

      /** Settles events of this service's records that a crashed replica left prepared; one that fails waits for the next look. */
      async settleAbandonedEvents(this: Self) {
        const records = options.records!;
        const abandoned = await abandonedEvents(this.db, Object.keys(records), configOf(this).events.abandonedAfterMs);
        for (const event of abandoned) {
          const render = records[event.subject.split("/")[0]!]!;
          const rendered = async (record: Data) => (await render.call(this, record)) as Data;
          const settled = await (event.ids ? settleIdBlock(this.db, event, rendered) : resolvePrepared(this.db, event, rendered)).catch((err) =>
            this.logger.warn(`Settling the abandoned event ${event._id} (${event.type} ${event.subject}) failed`, err),
          );
          // Committed now: its consumers are woken as for a writer's commit, not left to a poll.
          if (settled && settled !== "dropped") announce(this.broker, groupsFor(event.type));
        }
      },
    },

    async started(this: Service) {
      const self = this as Self;
      await ensureEventIndexes(self.db);
      self.eventTimers = [];
      if (options.records) {
        const settle = () => self.settleAbandonedEvents().catch((err) => self.logger.warn("Settling abandoned events failed", err));
        // At once too: after a restart, what the previous process left is settled without waiting a period.
        void settle();
        const timer = setInterval(settle, Math.min(RECOVERY_EVERY_MS, configOf(self).events.abandonedAfterMs / 2));
        timer.unref();
        self.eventTimers.push(timer);
      }
      if (options.consumer) {
        self.consumerRunning = true;
        self.consuming = self.consumeEvents();
      }
    },

    async stopped(this: Service) {
      const self = this as Self;
      for (const timer of self.eventTimers ?? []) clearInterval(timer);
      self.consumerRunning = false;
      self.wake?.();
      await self.consuming;
      await flushCommits(self.db);
    },
  };
}
