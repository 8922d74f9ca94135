import type { Connection, Model } from "mongoose";
import type { ServiceSchema } from "moleculer";
import { ERRORS } from "../lib/errors";
import type { Ctx } from "../lib/meta";
import { MongoMixin } from "../lib/mongo.mixin";
import { paginationParams } from "../lib/pagination";
import { respondCreated, respondNoContent } from "../lib/responses";
import { TenancyMixin, type TenancyMethods } from "../lib/tenancy.mixin";
import { API_KEY_PERMISSIONS, generateApiKey, hashApiKey, type ApiKeyPermission } from "../lib/auth/api-keys";
import { changeOf } from "../lib/events";
import { EventsMixin, type EventsMethods } from "../lib/events.mixin";
import { nextId } from "../lib/ids";
import { apiKeyModel, API_KEY_STATUSES, type ApiKeyRecord } from "./api-keys/model";
import { keyRejection, permissionGrantRefusal, shouldTouch } from "./api-keys/rules";
import { crossAccount } from "../lib/tenancy-guard";

const idParam = { api_key_id: { type: "number", integer: true, positive: true, convert: true } } as const;
const nameParam = { type: "string", min: 1, max: 255, trim: true } as const;
const permissionsParam = { type: "array", items: { type: "enum", values: [...API_KEY_PERMISSIONS] }, unique: true, optional: true } as const;

interface Vars {
  db: Connection;
  models: { keys: Model<ApiKeyRecord> };
}

/** Account API keys: the plaintext key is shown once at creation; only its hash is stored. */
const ApiKeysService: ServiceSchema<{ rest: string }, TenancyMethods & EventsMethods, Vars> = {
  name: "api-keys",
  mixins: [
    // Event data is the key as the API lists it: never the key itself or its hash.
    EventsMixin({ records: { apikeys: function (this: Vars, key) { return apiKeyModel(this.db).hydrate(key).toJSON(); } } }),
    MongoMixin((db) => ({ keys: apiKeyModel(db) })),
    TenancyMixin,
  ],
  settings: { rest: "/" },

  actions: {
    list: {
      rest: "GET /account-api-keys",
      params: paginationParams({ max: 1000, def: 100 }),
      async handler(ctx: Ctx<{ skip: number; limit: number }>) {
        const { rows } = await this.listOwned(ctx, this.models.keys, {}, { ...ctx.params, sort: { _id: 1 } });
        return rows.map((k) => k.toJSON());
      },
    },

    create: {
      rest: "POST /account-api-keys",
      params: {
        name: nameParam,
        expires_at: { type: "date", convert: true, optional: true, nullable: true },
        permissions: permissionsParam,
      },
      async handler(ctx: Ctx<{ name: string; expires_at?: Date | null; permissions?: ApiKeyPermission[] }>) {
        const refusal = permissionGrantRefusal(ctx.meta, ctx.params.permissions);
        if (refusal) throw ERRORS.forbidden(refusal);
        if (ctx.params.expires_at && ctx.params.expires_at <= new Date()) {
          throw ERRORS.validation([{ field: "expires_at", message: "expires_at must be in the future", type: "date.min" }]);
        }
        const { key, hash, prefix } = generateApiKey();
        const id = await nextId(this.db, "apikeys");
        const record = await this.recordChange(changeOf("api_key.created", "apikeys", { _id: id, account_id: this.accountOf(ctx) }), async () => {
          const fields = {
            _id: id,
            name: ctx.params.name,
            expires_at: ctx.params.expires_at ?? null,
            permissions: ctx.params.permissions ?? [],
            key_hash: hash,
            prefix,
            created_by_user_id: ctx.meta.userId ?? null,
          };
          return (await this.createOwned(ctx, this.models.keys, fields)).toJSON();
        });
        return respondCreated(ctx, `/api/v1/account-api-keys/${id}`, { ...record, key });
      },
    },

    get: {
      rest: "GET /account-api-keys/:api_key_id",
      params: idParam,
      async handler(ctx: Ctx<{ api_key_id: number }>) {
        return (await this.findOwned(ctx, this.models.keys, ctx.params.api_key_id, "API key")).toJSON();
      },
    },

    update: {
      rest: "PUT /account-api-keys/:api_key_id",
      params: {
        ...idParam,
        name: { ...nameParam, optional: true },
        status: { type: "enum", values: [...API_KEY_STATUSES], optional: true },
        permissions: permissionsParam,
      },
      async handler(ctx: Ctx<{ api_key_id: number; name?: string; status?: ApiKeyRecord["status"]; permissions?: ApiKeyPermission[] }>) {
        const key = await this.findOwned(ctx, this.models.keys, ctx.params.api_key_id, "API key");
        // Dropping permissions is always allowed; adding any needs an owner or admin.
        const added = ctx.params.permissions?.filter((p) => !key.permissions.includes(p)) ?? [];
        const refusal = permissionGrantRefusal(ctx.meta, added);
        if (refusal) throw ERRORS.forbidden(refusal);
        if (ctx.params.permissions !== undefined) key.permissions = ctx.params.permissions;
        if (ctx.params.name !== undefined) key.name = ctx.params.name;
        if (ctx.params.status !== undefined) key.status = ctx.params.status;
        return this.recordChange(changeOf("api_key.updated", "apikeys", key), async () => {
          await key.save();
          return key.toJSON();
        });
      },
    },

    remove: {
      rest: "DELETE /account-api-keys/:api_key_id",
      params: idParam,
      async handler(ctx: Ctx<{ api_key_id: number }>) {
        const key = await this.findOwned(ctx, this.models.keys, ctx.params.api_key_id, "API key");
        await this.recordChange(changeOf("api_key.deleted", "apikeys", key), async () => {
          await this.models.keys.deleteOne({ _id: key._id, account_id: key.account_id });
          return { id: key._id };
        });
        return respondNoContent(ctx);
      },
    },

    /** Resolves an X-AUTH-TOKEN for the gateway; every request asks, so revocation is immediate. */
    authenticate: {
      visibility: "public",
      params: { key: { type: "string", min: 1, max: 512 } },
      async handler(ctx: Ctx<{ key: string }>) {
        const key = await crossAccount("authenticating a key, by its hash", this.models.keys.findOne({ key_hash: hashApiKey(ctx.params.key) })).lean<ApiKeyRecord>();
        if (!key) throw ERRORS.unauthorized("Invalid API key");
        const rejection = keyRejection(key);
        if (rejection) throw ERRORS.unauthorized(rejection);
        if (shouldTouch(key.last_used_at)) {
          await this.models.keys.updateOne({ _id: key._id, account_id: key.account_id }, { last_used_at: new Date() }, { timestamps: false });
        }
        return { accountId: key.account_id, apiKeyId: key._id, permissions: key.permissions ?? [] };
      },
    },
  },
};

export default ApiKeysService;
