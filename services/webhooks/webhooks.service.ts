import type { Connection, HydratedDocument, Model } from "mongoose";
import type { ServiceBroker, ServiceSchema } from "moleculer";
import { ERRORS } from "../../lib/errors";
import type { Ctx } from "../../lib/meta";
import { MongoMixin } from "../../lib/mongo.mixin";
import { paginationParams, toPage } from "../../lib/pagination";
import { crudActions, eventRecords, plainResponse } from "../../lib/resource";
import { secretBox, type SecretBox } from "../../lib/secrets";
import { TenancyMixin, type TenancyMethods } from "../../lib/tenancy.mixin";
import { changeOf, type ChangeEvent } from "../../lib/events";
import { EventsMixin, type EventsMethods } from "../../lib/events.mixin";
import { configOf, type Config } from "../../lib/config";
import type { AddressPolicy } from "../../lib/address-policy";
import { claimDeliveries, enqueueDeliveries, finishAttempt, finishAttemptGrouped, pruneDeliveries } from "./deliveries";
import { Delivery, DELIVERY_STATUSES, deliveryModel, type DeliveryStatus, subscriptionModel, subscriptions, type SealedSecret, type WebhookDeliveryRecord, type WebhookSubscriptionRecord } from "./model";
import { attemptResult, claimRoom, leaseOutlastsAttempt, olderSecrets, signingSecrets, urlProblem, type Answer, type AttemptResult } from "./rules";
import { postDelivery } from "./send";
import { newSecret, sign } from "./signature";


const idParam = subscriptions.idParams;
/** Finished deliveries are pruned at most this often. */
const PRUNE_EVERY_MS = 3_600_000;

type SubscriptionDoc = HydratedDocument<WebhookSubscriptionRecord>;

/** The picked fields as stored: the URL checked, event types de-duplicated, a re-enable clearing why it stopped. */
function subscriptionChanges(fields: typeof subscriptions.types.update): Partial<WebhookSubscriptionRecord> {
  const problem = fields.url === undefined ? null : urlProblem(fields.url);
  if (problem) throw ERRORS.validation([problem]);
  const { event_types, ...rest } = fields;
  const out: Partial<WebhookSubscriptionRecord> = rest;
  if (event_types !== undefined) out.event_types = [...new Set(event_types)];
  if (fields.enabled !== undefined) out.disabled_reason = null;
  return out;
}

interface Methods extends TenancyMethods, EventsMethods {
  findSubscription(ctx: Ctx<unknown>, id: number): Promise<SubscriptionDoc>;
  dispatch(): Promise<void>;
  attempt(delivery: WebhookDeliveryRecord, subscription?: WebhookSubscriptionRecord | null): Promise<void>;
  /** Runs a claimed delivery's attempt among those in flight, or queues it until a slot frees. */
  track(delivery: WebhookDeliveryRecord, subscription?: WebhookSubscriptionRecord): void;
  /** Starts waiting deliveries while slots are free. */
  startWaiting(): void;
  /**
   * Records an ended attempt's result with the others ending meanwhile (finishAttemptGrouped) while its slot goes to
   * the next attempt: a slot held until the record landed left more deliveries to the dearer dispatcher claims.
   */
  recordLater(delivery: WebhookDeliveryRecord, result: AttemptResult): void;
  send(subscription: WebhookSubscriptionRecord, delivery: WebhookDeliveryRecord): Promise<Answer>;
}
interface Vars {
  db: Connection;
  models: { subscriptions: Model<WebhookSubscriptionRecord>; deliveries: Model<WebhookDeliveryRecord> };
  config: Config["webhooks"];
  /** Which non-public addresses deliveries may reach. */
  addressPolicy: AddressPolicy;
  /** Seals and opens signing secrets (configuration's secretsKey). */
  secrets: SecretBox;
  running: boolean;
  loop?: Promise<void>;
  /** Attempts under way, claimed by the dispatcher or written claimed by the consumer; at most config.concurrency. */
  inFlight: Set<Promise<void>>;
  /** Results of ended attempts on their way to the database (their leases held until they land). */
  recording: Set<Promise<void>>;
  /** Claimed deliveries waiting for a slot; the consumer writes at most config.concurrency of them (claimRoom). */
  waiting: { delivery: WebhookDeliveryRecord; subscription?: WebhookSubscriptionRecord }[];
  /** Deliveries may be pending that nobody holds (the consumer had no room for them): a freed slot claims one. */
  pendingLeft: boolean;
  /** Ends the dispatcher's wait for its next poll, while it waits. */
  wakeDispatcher?: () => void;
}

type Self = Vars & Methods & { broker: ServiceBroker };

/**
 * Writes the deliveries of consumed events; those there is room for among the attempts in flight are written
 * claimed and attempted at once (no claim of their own, no wait for a dispatcher's poll).
 */
async function enqueue(self: Self, events: ChangeEvent[]): Promise<void> {
  const room = self.running ? claimRoom(self.config.concurrency, self.inFlight.size, self.waiting.length) : 0;
  const claim = room > 0 ? { owner: self.broker.nodeID, leaseMs: self.config.leaseMs, max: room } : undefined;
  const { inserted, claimed } = await enqueueDeliveries(self.models.subscriptions, self.models.deliveries, events, claim);
  if (inserted > claimed.length) self.pendingLeft = true;
  for (const { delivery, subscription } of claimed) self.track(delivery, subscription);
}

/**
 * Webhook subscriptions and their deliveries: events read from the event log become delivery documents, which
 * dispatchers (any number of replicas) claim with a lease, sign at send time (Standard Webhooks) and retry.
 */
const WebhooksService: ServiceSchema<{ rest: string }, Methods, Vars> = {
  name: "webhooks",
  mixins: [
    EventsMixin({
      records: eventRecords(subscriptions),
      consumer: {
        group: "webhooks",
        handle(this: Self, event: ChangeEvent) {
          return enqueue(this, [event]);
        },
        handleBatch(this: Self, events: ChangeEvent[]) {
          return enqueue(this, events);
        },
      },
    }),
    MongoMixin((db) => ({ subscriptions: subscriptionModel(db), deliveries: deliveryModel(db) })),
    TenancyMixin,
    // The webhooks consumer group: every event becomes durable deliveries (idempotent per event and subscription).
  ],
  settings: { rest: "/" },

  actions: {
    ...crudActions(subscriptions, {
      creating(this: Vars, _ctx, fields) {
        return { ...subscriptionChanges(fields), secret_sealed: this.secrets.seal(newSecret()) };
      },
      updating: (_ctx, _doc, changes) => subscriptionChanges(changes),
      // Its queued deliveries would fail anyway; the history goes with the subscription.
      async removed(this: Vars, _ctx, subscription) {
        await this.models.deliveries.deleteMany({ account_id: subscription.account_id, subscription_id: subscription._id });
      },
    }),

    /** The only way to read a signing secret (the interface's GET .../{id}/secret). */
    secret: {
      rest: "GET /webhook-subscriptions/:id/secret",
      summary: "Get a webhook subscription's signing secret",
      params: idParam,
      response: plainResponse({ secret: { type: "string" } }),
      async handler(ctx: Ctx<{ id: number }>) {
        return { secret: this.secrets.open((await this.findSubscription(ctx, ctx.params.id)).secret_sealed) };
      },
    },

    /**
     * A new secret; the previous one keeps signing (second signature) for the configured overlap. The secret is not
     * part of the subscription as the API shows it, so updated_at stays and no event is recorded.
     */
    rotateSecret: {
      rest: "POST /webhook-subscriptions/:id/secret/rotate",
      summary: "Rotate a webhook subscription's signing secret",
      params: idParam,
      response: plainResponse({ secret: { type: "string" }, previous_secret_expires_at: { type: "date", nullable: true } }),
      async handler(ctx: Ctx<{ id: number }>) {
        const subscription = await this.findSubscription(ctx, ctx.params.id);
        const overlapMs = this.config.rotationOverlapSeconds * 1000;
        const secret = newSecret();
        const now = new Date();
        const { previous_secret_sealed: sealed, previous_secret_expires_at: expiresAt } = subscription;
        const replaced = sealed && expiresAt ? { sealed, expires_at: expiresAt.toISOString() } : null;
        subscription.set({
          secret_sealed: this.secrets.seal(secret),
          previous_secret_sealed: overlapMs > 0 ? subscription.secret_sealed : null,
          previous_secret_expires_at: overlapMs > 0 ? new Date(now.getTime() + overlapMs) : null,
          older_secrets: olderSecrets(replaced, (subscription.older_secrets ?? []) as SealedSecret[], now),
        });
        await subscription.save({ timestamps: false });
        return { secret, previous_secret_expires_at: subscription.previous_secret_expires_at };
      },
    },

    /** Recent deliveries of a subscription, newest first (for debugging a receiver). */
    deliveries: {
      rest: "GET /webhook-subscriptions/:id/deliveries",
      summary: "List a webhook subscription's deliveries",
      params: { ...idParam, ...paginationParams({ max: 200, def: 50 }), status: { type: "enum", values: [...DELIVERY_STATUSES], optional: true, description: "Only deliveries in this status" } },
      response: Delivery.page(),
      async handler(ctx: Ctx<{ id: number; skip: number; limit: number; status?: DeliveryStatus }>) {
        const { id, skip, limit, status } = ctx.params;
        const subscription = await this.findSubscription(ctx, id);
        const filter = { account_id: subscription.account_id, subscription_id: subscription._id, ...(status ? { status } : {}) };
        const [rows, total] = await Promise.all([
          this.models.deliveries.find(filter).sort({ created_at: -1, _id: -1 }).skip(skip).limit(limit),
          this.models.deliveries.countDocuments(filter),
        ]);
        return toPage(rows.map((d) => d.toJSON()), total, skip, limit);
      },
    },
  },

  methods: {
    findSubscription(ctx, id) {
      return this.findOwned(ctx, this.models.subscriptions, id, "Webhook subscription");
    },

    track(delivery, subscription) {
      this.waiting.push({ delivery, subscription });
      this.startWaiting();
    },

    startWaiting() {
      while (this.inFlight.size < this.config.concurrency && this.waiting.length) {
        const { delivery, subscription } = this.waiting.shift()!;
        // Held too long for its lease (slow receivers): left to the dispatcher that claims it when the lease ends,
        // rather than attempted while another may take it over.
        if (!leaseOutlastsAttempt(delivery.lease_expires_at, this.config.timeoutMs, new Date())) continue;
        const attempt: Promise<void> = this.attempt(delivery, subscription)
          .catch((err) => this.logger.error(`Delivery ${delivery._id} attempt failed`, err))
          .finally(() => {
            this.inFlight.delete(attempt);
            this.startWaiting();
          });
        this.inFlight.add(attempt);
      }
      // Pending deliveries would otherwise wait for the next poll while this slot idles.
      if (this.pendingLeft && !this.waiting.length && this.inFlight.size < this.config.concurrency) this.wakeDispatcher?.();
    },

    recordLater(delivery, result) {
      const recorded: Promise<void> = finishAttemptGrouped(this.models.deliveries, delivery, this.broker.nodeID, result)
        .catch((err) => this.logger.warn(`Recording delivery ${delivery._id}'s attempt failed; its lease runs out and it is attempted again`, err))
        .finally(() => this.recording.delete(recorded));
      this.recording.add(recorded);
    },

    /** Claims due deliveries for the free slots while none waits; otherwise waits for a slot or the next poll. */
    async dispatch() {
      const inFlight = this.inFlight;
      let prunedAt = 0;
      while (this.running) {
        const free = this.waiting.length ? 0 : Math.max(0, this.config.concurrency - inFlight.size);
        // Cleared before the claim, so that deliveries the consumer leaves pending meanwhile set it again.
        if (free) this.pendingLeft = false;
        const claimed = free
          ? await claimDeliveries(this.models.subscriptions, this.models.deliveries, this.broker.nodeID, this.config.leaseMs, free).catch((err) => {
              this.logger.warn("Claiming deliveries failed", err);
              return [];
            })
          : [];
        if (claimed.length) {
          this.pendingLeft = true; // there may be more
          for (const { delivery, subscription } of claimed) this.track(delivery, subscription);
          continue;
        }
        if (Date.now() - prunedAt > PRUNE_EVERY_MS) {
          prunedAt = Date.now();
          const cutoff = new Date(Date.now() - this.config.retentionDays * 86_400_000);
          await pruneDeliveries(this.models.deliveries, cutoff).catch((err) => this.logger.warn("Pruning deliveries failed", err));
        }
        let timer: NodeJS.Timeout | undefined;
        // A slot freeing up matters only when none was free; otherwise nothing was due, and the next poll looks
        // again (waking at every finished attempt made one claim, a scan of the pending deliveries, per delivery).
        const full = inFlight.size >= this.config.concurrency;
        await Promise.race([new Promise((r) => ((timer = setTimeout(r, this.config.pollMs)), (this.wakeDispatcher = () => r(undefined)))), ...(full ? inFlight : [])]);
        this.wakeDispatcher = undefined;
        clearTimeout(timer);
      }
      while (inFlight.size) await Promise.race(inFlight);
    },

    /**
     * One attempt of a claimed delivery, to `known` (its subscription as read when the delivery was written claimed)
     * or the subscription read now; a 410 Gone answer also disables the subscription.
     */
    async attempt(delivery, known) {
      const subscription =
        known ??
        (await this.models.subscriptions.findOne({ _id: delivery.subscription_id, account_id: delivery.account_id }).lean<WebhookSubscriptionRecord>());
      if (!subscription?.enabled) {
        const error = subscription ? "the subscription is disabled" : "the subscription was deleted";
        return this.recordLater(delivery, { status: "failed", httpStatus: null, error });
      }
      const answer = await this.send(subscription, delivery);
      const result = attemptResult(answer, delivery.attempts, this.config.retryScheduleMs, new Date());
      if (answer.status !== 410) return this.recordLater(delivery, result);
      if (await finishAttempt(this.models.deliveries, delivery, this.broker.nodeID, result)) {
        await this.recordChange(changeOf("webhook_subscription.updated", subscriptions.collection, subscription), async () => {
          const disabled = await this.models.subscriptions.findOneAndUpdate(
            { _id: subscription._id, account_id: subscription.account_id },
            { $set: { enabled: false, disabled_reason: `The endpoint answered 410 Gone on ${new Date().toISOString()}` } },
            { returnDocument: "after" },
          );
          return disabled?.toJSON() ?? { id: subscription._id };
        });
      }
    },

    /** Signs at send time (fresh webhook-timestamp, same webhook-id) and POSTs the stored body. */
    async send(subscription, delivery) {
      const now = new Date();
      const timestamp = Math.floor(now.getTime() / 1000);
      const earlier = [
        ...(subscription.previous_secret_sealed && subscription.previous_secret_expires_at ? [{ sealed: subscription.previous_secret_sealed, expiresAt: subscription.previous_secret_expires_at }] : []),
        ...((subscription.older_secrets ?? []) as SealedSecret[]).map((s) => ({ sealed: s.sealed, expiresAt: new Date(s.expires_at) })),
      ].filter((s) => s.expiresAt > now);
      const secrets = signingSecrets(this.secrets.open(subscription.secret_sealed), earlier.map((s) => ({ secret: this.secrets.open(s.sealed), expiresAt: s.expiresAt })), now);
      const headers = {
        "webhook-id": delivery._id,
        "webhook-timestamp": String(timestamp),
        "webhook-signature": secrets.map((secret) => sign(secret, delivery._id, timestamp, delivery.body)).join(" "),
      };
      try {
        return await postDelivery(subscription.url, headers, delivery.body, { timeoutMs: this.config.timeoutMs, policy: this.addressPolicy });
      } catch (err) {
        return { error: (err as Error).message };
      }
    },
  },

  created() {
    this.secrets = secretBox(configOf(this).secretsKey);
  },

  started() {
    this.inFlight = new Set();
    this.recording = new Set();
    this.waiting = [];
    this.pendingLeft = false;
    this.config = configOf(this).webhooks;
    this.addressPolicy = configOf(this).addressPolicy;
    this.running = true;
    this.loop = this.dispatch();
  },

  async stopped() {
    this.running = false;
    this.wakeDispatcher?.();
    await this.loop;
    // Waiting deliveries start as attempts end, so every claimed one is attempted before the service stops.
    while (this.inFlight.size) await Promise.race(this.inFlight);
    await Promise.all([...this.recording]);
  },
};

export default WebhooksService;
