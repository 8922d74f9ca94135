import type { Connection, Model } from "mongoose";
import type { ServiceSchema } from "moleculer";
import { leanToJSON } from "../../lib/db";
import { configOf } from "../../lib/config";
import { ERRORS, isDuplicateKeyError } from "../../lib/errors";
import { nextRecordId } from "../../lib/ids";
import type { Ctx } from "../../lib/meta";
import { MongoMixin } from "../../lib/mongo.mixin";
import { paginationParams, toPage } from "../../lib/pagination";
import { respondCreated, respondNoContent } from "../../lib/responses";
import { TenancyMixin, type TenancyMethods } from "../../lib/tenancy.mixin";
import { hashPassword, verifyPassword } from "../../lib/auth/passwords";
import { signToken, verifyToken } from "../../lib/auth/jwt";
import { SESSION_CHANGED_EVENT } from "../../lib/auth/identity";
import { attemptKeys, failureCounterModel, FailureThrottle } from "../../lib/auth/throttle";
import { passwordHashing } from "../../lib/auth/hashing-queue";
import { keyRevocationRefusal } from "../../lib/auth/api-keys";
import { publishOutbox, sweepOutbox } from "../../lib/outbox";
import type { UserRole } from "../../lib/meta";
import { eventIdFor } from "../../lib/events";
import { EventsMixin, type EventsMethods } from "../../lib/events.mixin";
import { userModel, type UserRecord } from "./model";
import { Token, UserAuditEntry, UserCreated, userFields, UserPublic } from "./resource";
import { NO_CONTENT, plainResponse } from "../../lib/resource";
import { auditEntry, userAuditModel, type UserAuditAction, type UserAuditRecord } from "./audit";
import {
  actorOf,
  loginKey,
  managesUsers,
  normalizeEmail,
  selfDeleteRefusal,
  passwordKey,
  registrationEvent,
  userChanges,
  userCreateRefusal,
  userUpdateRefusal,
  verificationLink,
  type UserActor,
} from "./rules";
import { crossAccount } from "../../lib/tenancy-guard";

/** Verification links stay valid for two days. */
const VERIFY_EMAIL_TTL_SECONDS = 2 * 24 * 3600;
/** Outbox entries older than this are assumed orphaned by a crashed process and republished. */
const OUTBOX_SWEEP_AGE_MS = 30_000;
const OUTBOX_SWEEP_INTERVAL_MS = 15_000;
/** Compared against when the email is unknown, so a miss costs the same time as a wrong password. */
const DUMMY_PASSWORD_HASH = hashPassword("not-a-real-password");

const userParams = { email: userFields.email.write, full_name: userFields.full_name.write, locale: userFields.locale.write } as const;

const userIdParam = { user_id: { type: "number", integer: true, positive: true, convert: true, description: "The user's id" } } as const;
const passwordParam = { type: "string", min: 8, max: 128 } as const;
/** Account management fields of a UserUpdate: only owners and admins change them, never on themselves. */
const managedFields = { role: userFields.role.write, is_active: userFields.is_active.write } as const;

/**
 * In the last third of a cached read's lifetime one caller refreshes it while the others still get the cached
 * value, and a miss is fetched once for all concurrent callers: an expiry never sends every in-flight request
 * to the database at once.
 */
const hotReadLock = (cacheTtlSeconds: number) => ({ enabled: true, staleTime: Math.max(1, Math.floor(cacheTtlSeconds / 3)) });

interface Methods extends TenancyMethods, EventsMethods {
  publishEvents(userId: number): Promise<number>;
  relayOutboxEntry(type: string, data: Record<string, unknown>, occurredAt: Date): Promise<void>;
  accessToken(user: { _id: number; account_id: number; token_version: number }): Promise<{ access_token: string; token_type: string; expires_in: number }>;
  checkPassword(ctx: Ctx<unknown>, identity: string, password: string, stored: string | undefined): Promise<boolean>;
  requireSelf(ctx: Ctx<unknown>): number;
  applyUpdate(ctx: Ctx<unknown>, userId: number, params: Record<string, unknown>): Promise<object>;
  audit(ctx: Ctx<unknown>, actor: UserActor, change: { accountId: number; action: UserAuditAction; targetUserId: number; fields?: string[] }): Promise<void>;
  forgetCachedReads(): Promise<void>;
}
interface Vars {
  db: Connection;
  models: { users: Model<UserRecord>; audit: Model<UserAuditRecord>; failures: ReturnType<typeof failureCounterModel> };
  sweepTimer?: NodeJS.Timeout;
  throttle: FailureThrottle;
}

/**
 * Users, signup and login. A signup without credentials opens a new account (its first user is the owner); an
 * authenticated one adds a user to the caller's account, which needs an owner or admin (or an API key with the
 * users:manage permission). Users change their own profile; owners and admins manage the others. Every change
 * to a user is recorded in the account's audit log.
 */
const UsersService: ServiceSchema<{ rest: string }, Methods, Vars> = {
  name: "users",
  mixins: [EventsMixin({}), MongoMixin((db) => ({ users: userModel(db), audit: userAuditModel(db), failures: failureCounterModel(db) })), TenancyMixin],
  settings: { rest: "/" },

  /** The cached reads' lock follows the configured cache lifetime; set before the cacher wraps the actions. */
  merged(schema) {
    const lock = hotReadLock(configOf(schema).cacheTtlSeconds);
    for (const action of Object.values(schema.actions ?? {})) {
      if (typeof action === "object" && typeof action.cache === "object") action.cache.lock = lock;
    }
  },

  actions: {
    create: {
      rest: "POST /users",
      summary: "Sign up (a new account and its owner), or add a user to the caller's account",
      auth: "optional",
      params: { ...userParams, password: passwordParam, role: { ...managedFields.role } },
      response: UserCreated.one(201),
      async handler(ctx: Ctx<{ email: string; password: string; full_name?: string | null; role?: UserRole }>) {
        const { users } = this.models;
        const joining = typeof ctx.meta.accountId === "number";
        if (!joining && ctx.params.role !== undefined && ctx.params.role !== "owner") {
          throw ERRORS.validation([{ field: "role", message: "A signup without credentials opens a new account, whose first user is its owner", type: "role" }]);
        }
        const role: UserRole = joining ? (ctx.params.role ?? "member") : "owner";
        const refusal = joining ? userCreateRefusal(actorOf(ctx.meta), role) : null;
        if (refusal) throw ERRORS.forbidden(refusal);
        // Adding a taken email to an account answers 409, so such probes cost the budget of password guesses
        // (counted before the insert, given back when it was no probe); a signup only has to be within it.
        const probes = attemptKeys(configOf(this).throttle, null, ctx.meta.clientIp);
        await this.throttle.check(probes);
        const accountId = ctx.meta.accountId ?? (await nextRecordId(this.db, "accounts"));
        const id = await nextRecordId(this.db, "users");
        const email = normalizeEmail(ctx.params.email);
        const locale = ctx.meta.locale ?? null;
        const verifyToken = await signToken(configOf(this).jwt, { userId: id, accountId }, "verify-email", VERIFY_EMAIL_TTL_SECONDS);
        const event = registrationEvent({ id, account_id: accountId, email, locale }, verificationLink(configOf(this).appUrl, verifyToken));
        const record = {
          _id: id,
          account_id: accountId,
          full_name: ctx.params.full_name ?? null,
          password_hash: await passwordHashing.run(ctx.meta.clientIp, () => hashPassword(ctx.params.password)),
          locale,
          role,
          outbox: [event],
        };
        const probe = joining ? await this.throttle.reserve(probes) : null;
        let user;
        try {
          user = await users.create({ ...record, email });
        } catch (err) {
          if (!isDuplicateKeyError(err)) throw err;
          if (joining) throw ERRORS.conflict("A user with this email already exists");
          // An anonymous signup answers alike whether or not the address is taken, so nobody learns who is
          // registered: it opens its account all the same, holding the address as contact only. The address
          // keeps logging in to its first user; the new user works with the token answered here.
          user = await users.create({ ...record, contact_email: email });
        }
        await probe?.refund();
        await this.publishEvents(id);
        const actor: UserActor = joining ? actorOf(ctx.meta) : { kind: "user", userId: id, role };
        await this.audit(ctx, actor, { accountId, action: "user.created", targetUserId: id, fields: ["email", "role"] });
        return respondCreated(ctx, `/api/v1/users/${id}`, { ...user.toJSON(), ...(await this.accessToken(user)) });
      },
    },

    login: {
      rest: "POST /login/access-token",
      summary: "Log in: an access token (JWT) for an email and password",
      auth: "none",
      params: { email: { type: "email", max: 254 }, password: { type: "string", min: 1, max: 128 } },
      response: Token.one(),
      async handler(ctx: Ctx<{ email: string; password: string }>) {
        const email = normalizeEmail(ctx.params.email);
        const user = await crossAccount("login by email", this.models.users.findOne({ email }));
        const right = await this.checkPassword(ctx, loginKey(email), ctx.params.password, user?.password_hash);
        if (!right || !user) throw ERRORS.unauthorized("Incorrect email or password");
        if (!user.is_active) throw ERRORS.forbidden("Inactive user");
        return this.accessToken(user);
      },
    },

    verifyEmail: {
      rest: "GET /users/verify-email",
      summary: "Verify a user's email address (the link sent at signup)",
      auth: "none",
      params: { token: { type: "string", min: 1, max: 4096, description: "The verification token from the link" } },
      response: plainResponse({ message: { type: "string" } }),
      async handler(ctx: Ctx<{ token: string }>) {
        const claims = await verifyToken(configOf(this).jwt, ctx.params.token, "verify-email");
        if (!claims) throw ERRORS.badRequest("Invalid or expired verification link");
        const res = await this.models.users.updateOne({ _id: claims.userId, account_id: claims.accountId }, { email_verified: true });
        if (!res.matchedCount) throw ERRORS.notFound("User", claims.userId);
        await this.forgetCachedReads();
        return { message: "Email verified" };
      },
    },

    list: {
      rest: "GET /users",
      summary: "List the users of the caller's account",
      params: paginationParams({ max: 1000, def: 100 }),
      response: UserPublic.array(),
      async handler(ctx: Ctx<{ skip: number; limit: number }>) {
        const { rows } = await this.listOwned(ctx, this.models.users, {}, { ...ctx.params, sort: { _id: 1 } });
        return rows.map((user) => leanToJSON(this.models.users, user));
      },
    },

    me: {
      rest: "GET /users/me",
      summary: "Get the caller's own user",
      auth: "user",
      // Every authenticated client reads this; cached per caller, cleared on every user write (forgetCachedReads).
      cache: { keys: ["#accountId", "#userId"] },
      response: UserPublic.one(),
      async handler(ctx: Ctx) {
        return (await this.findOwned(ctx, this.models.users, this.requireSelf(ctx), "User")).toJSON();
      },
    },

    updateMe: {
      rest: "PUT /users/me",
      summary: "Update the caller's own user",
      auth: "user",
      params: { ...userParams, email: { ...userParams.email, optional: true } },
      response: UserPublic.one(),
      handler(ctx: Ctx<Record<string, unknown>>) {
        return this.applyUpdate(ctx, this.requireSelf(ctx), ctx.params);
      },
    },

    get: {
      rest: "GET /users/:user_id",
      summary: "Get a user of the caller's account",
      params: userIdParam,
      cache: { keys: ["#accountId", "user_id"] },
      response: UserPublic.one(),
      async handler(ctx: Ctx<{ user_id: number }>) {
        return (await this.findOwned(ctx, this.models.users, ctx.params.user_id, "User")).toJSON();
      },
    },

    /** Changes the caller's password (the current one is required) and ends every other session of the user. */
    changePassword: {
      rest: "PUT /users/me/password",
      summary: "Change the caller's password (answers a new token)",
      auth: "user",
      params: { current_password: { type: "string", min: 1, max: 128 }, new_password: passwordParam },
      response: Token.one(),
      async handler(ctx: Ctx<{ current_password: string; new_password: string }>) {
        const user = await this.findOwned(ctx, this.models.users, this.requireSelf(ctx), "User");
        // Guessing the current password with a stolen token costs the same budget as guessing it at login.
        if (!(await this.checkPassword(ctx, passwordKey(user), ctx.params.current_password, user.password_hash))) {
          throw ERRORS.validation([{ field: "current_password", message: "The current password is not correct", type: "password.mismatch" }]);
        }
        user.password_hash = await passwordHashing.run(ctx.meta.clientIp, () => hashPassword(ctx.params.new_password));
        user.token_version += 1;
        await user.save();
        await this.forgetCachedReads();
        await this.audit(ctx, actorOf(ctx.meta), { accountId: user.account_id, action: "user.password_changed", targetUserId: user._id, fields: ["password"] });
        return this.accessToken(user);
      },
    },

    /** The account's user audit log, newest first: owners and admins (and keys with users:manage) only. */
    auditLog: {
      rest: "GET /users/audit-log",
      summary: "List the account's user audit log, newest first",
      params: { ...paginationParams({ max: 1000, def: 100 }), user_id: { ...userIdParam.user_id, optional: true, description: "Only entries about this user" } },
      response: UserAuditEntry.page(),
      async handler(ctx: Ctx<{ skip: number; limit: number; user_id?: number }>) {
        const accountId = this.accountOf(ctx);
        if (!managesUsers(actorOf(ctx.meta))) throw ERRORS.forbidden("Only account owners and admins can read the audit log");
        const filter = { account_id: accountId, ...(ctx.params.user_id ? { target_user_id: ctx.params.user_id } : {}) };
        const [rows, total] = await Promise.all([
          this.models.audit.find(filter).sort({ at: -1, _id: -1 }).skip(ctx.params.skip).limit(ctx.params.limit),
          this.models.audit.countDocuments(filter),
        ]);
        return toPage(rows.map((r) => r.toJSON()), total, ctx.params.skip, ctx.params.limit);
      },
    },

    /**
     * A token's user as the identity check needs it (account, role, token version, active); null once deleted.
     * Cached like the other user reads and cleared on every replica by each user write, so a delete, a disable
     * or a password change ends the user's tokens at once.
     */
    session: {
      visibility: "public",
      params: userIdParam,
      cache: { keys: ["user_id"] },
      async handler(ctx: Ctx<{ user_id: number }>) {
        const user = await crossAccount("the session of a token's user, by global id", this.models.users
          .findById(ctx.params.user_id, { account_id: 1, role: 1, token_version: 1, is_active: 1 }))
          .lean<Pick<UserRecord, "account_id" | "role" | "token_version" | "is_active">>();
        if (!user) return null;
        return { account_id: user.account_id, role: user.role ?? "member", token_version: user.token_version ?? 0, is_active: user.is_active !== false };
      },
    },

    update: {
      rest: "PUT /users/:user_id",
      summary: "Update a user of the caller's account",
      params: {
        ...userIdParam,
        ...userParams,
        email: { ...userParams.email, optional: true },
        ...managedFields,
        // Offboarding in one call: with is_active false, also deletes the API keys the user is answerable for.
        revoke_api_keys: { type: "boolean", optional: true },
      },
      response: UserPublic.one(),
      handler(ctx: Ctx<{ user_id: number } & Record<string, unknown>>) {
        return this.applyUpdate(ctx, ctx.params.user_id, ctx.params);
      },
    },

    remove: {
      rest: "DELETE /users/:user_id",
      summary: "Delete a user (self-delete only)",
      params: userIdParam,
      response: NO_CONTENT,
      async handler(ctx: Ctx<{ user_id: number }>) {
        if (ctx.params.user_id !== ctx.meta.userId) throw ERRORS.forbidden("Users can only delete themselves");
        const user = await this.findOwned(ctx, this.models.users, ctx.params.user_id, "User");
        const others = { account_id: user.account_id, _id: { $ne: user._id } };
        const [users, activeOwners] = user.role === "owner"
          ? await Promise.all([this.models.users.countDocuments(others), this.models.users.countDocuments({ ...others, role: "owner", is_active: true })])
          : [0, 0];
        const refusal = selfDeleteRefusal(user.role ?? "member", { users, activeOwners });
        if (refusal) throw ERRORS.conflict(refusal);
        await this.models.users.deleteOne({ _id: user._id, account_id: user.account_id });
        await this.forgetCachedReads();
        await this.audit(ctx, actorOf(ctx.meta), { accountId: user.account_id, action: "user.deleted", targetUserId: user._id });
        return respondNoContent(ctx);
      },
    },

    /** Clears this replica's cached user reads (called on every replica by forgetCachedReads). */
    forgetCachedReads: {
      visibility: "public",
      handler() {
        return this.broker.cacher?.clean(`${this.name}.**`);
      },
    },
  },

  methods: {
    /**
     * Drops cached user reads on every users replica before the write is answered, so no replica serves the
     * old record afterwards. A replica that cannot be reached keeps its entries at most CACHE_TTL_SECONDS. HTTP
     * edges drop their cached session states on the broadcast (lib/auth/identity).
     */
    async forgetCachedReads() {
      await this.broker.broadcast(SESSION_CHANGED_EVENT, {});
      if (!this.broker.cacher) return;
      const replicas = this.broker.registry
        .getServiceList({ onlyAvailable: true, skipInternal: true })
        .flatMap((s) => (s.name === this.name && s.nodeID ? [s.nodeID] : []));
      await Promise.all(
        replicas.map((nodeID) =>
          this.broker.call(`${this.name}.forgetCachedReads`, {}, { nodeID }).catch((err: Error) => this.logger.warn(`Cache clear on ${nodeID} failed`, err)),
        ),
      );
    },

    /** Relays the user's outbox (user.registered) into the event log; one event per user, whatever replays. */
    publishEvents(userId: number) {
      return publishOutbox(this.models.users, userId, (type, data, createdAt) => this.relayOutboxEntry(type, data, createdAt));
    },

    relayOutboxEntry(type, data, occurred_at) {
      const subject = `users/${data.user_id}`;
      return this.appendChange({ id: eventIdFor(type, subject), type, account_id: data.account_id as number, subject, data, occurred_at });
    },

    async accessToken(user) {
      const access_token = await signToken(configOf(this).jwt, { userId: user._id, accountId: user.account_id, tokenVersion: user.token_version ?? 0 });
      return { access_token, token_type: "bearer", expires_in: configOf(this).jwt.ttlSeconds };
    },

    /**
     * Checks a password of `identity` (a login email or a user) within the hashing queue and the throttle: the
     * attempt is counted on the identity and the client address before hashing, so parallel guesses never check more than the limits allow
     * (429 beyond them), and given back when the password is right, which also clears the identity's count.
     * Without a stored hash (an unknown email) a dummy is checked instead, so a miss costs the same time.
     */
    async checkPassword(ctx, identity, password, stored) {
      const keys = attemptKeys(configOf(this).throttle, identity, ctx.meta.clientIp);
      // Admitted by the hashing queue first, so a burst beyond it costs no database write either.
      return passwordHashing.admit(ctx.meta.clientIp, async (slot) => {
        const right = await this.throttle.attempt(keys, async () => {
          const matches = await slot(async () => verifyPassword(password, stored ?? (await DUMMY_PASSWORD_HASH)));
          return matches && stored !== undefined;
        });
        if (right) await this.throttle.clear(identity);
        return right;
      });
    },

    /** The calling user's id; API keys act for an account, not a user. */
    requireSelf(ctx) {
      if (typeof ctx.meta.userId !== "number") throw ERRORS.forbidden("This endpoint needs a user's access token, not an API key");
      return ctx.meta.userId;
    },

    async applyUpdate(ctx, userId, params) {
      const user = await this.findOwned(ctx, this.models.users, userId, "User");
      const actor = actorOf(ctx.meta);
      const changes = userChanges(params);
      const refusal = userUpdateRefusal(actor, { _id: user._id, role: user.role ?? "member" }, changes);
      if (refusal) throw ERRORS.forbidden(refusal);
      const revokeKeys = params.revoke_api_keys === true;
      if (revokeKeys && changes.is_active !== false) {
        throw ERRORS.validation([{ field: "revoke_api_keys", message: "revoke_api_keys goes with is_active: false", type: "revoke_api_keys.disable" }]);
      }
      // Checked here too, so a refused revocation leaves the user unchanged.
      const revocationRefusal = revokeKeys ? keyRevocationRefusal(ctx.meta) : null;
      if (revocationRefusal) throw ERRORS.forbidden(revocationRefusal);
      user.set(changes);
      // A user that signed up with a taken address logs in once it sets an address of its own.
      if (changes.email) user.set("contact_email", undefined);
      // A disabled user's tokens end at once and stay ended when it is enabled again.
      if (changes.is_active === false && user.isModified("is_active")) user.token_version += 1;
      const fields = user.modifiedPaths().filter((path) => path !== "token_version");
      try {
        await user.save();
      } catch (err) {
        if (isDuplicateKeyError(err)) throw ERRORS.conflict("A user with this email already exists");
        throw err;
      }
      await this.forgetCachedReads();
      if (revokeKeys) {
        await ctx.call("api-keys.revoke", { created_by_user_id: user._id });
        fields.push("api_keys");
      }
      if (fields.length) await this.audit(ctx, actor, { accountId: user.account_id, action: "user.updated", targetUserId: user._id, fields });
      return user.toJSON();
    },

    async audit(ctx, actor, change) {
      await this.models.audit.create(auditEntry(actor, { ...change, clientIp: ctx.meta.clientIp }));
    },
  },

  started() {
    this.throttle = new FailureThrottle(this.models.failures);
    this.sweepTimer = setInterval(() => {
      const relay = (type: string, data: Record<string, unknown>, createdAt: Date) => this.relayOutboxEntry(type, data, createdAt);
      sweepOutbox(this.models.users, relay, OUTBOX_SWEEP_AGE_MS).catch((err) => this.logger.warn("Outbox sweep failed", err));
      this.throttle.prune().catch((err) => this.logger.warn("Pruning failure counters failed", err));
    }, OUTBOX_SWEEP_INTERVAL_MS);
    this.sweepTimer.unref();
  },

  stopped() {
    clearInterval(this.sweepTimer);
  },
};

export default UsersService;
