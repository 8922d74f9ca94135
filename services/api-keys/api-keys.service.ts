import type { Connection, Model } from "mongoose";
import type { ServiceSchema } from "moleculer";
import { leanToJSON } from "../../lib/db";
import { ERRORS } from "../../lib/errors";
import type { Ctx } from "../../lib/meta";
import { MongoMixin } from "../../lib/mongo.mixin";
import { crudActions, defineView, eventRecords, type CrudHooks } from "../../lib/resource";
import { respondCreated } from "../../lib/responses";
import { TenancyMixin, type TenancyMethods } from "../../lib/tenancy.mixin";
import { generateApiKey, hashApiKey, keyRevocationRefusal, type ApiKeyPermission } from "../../lib/auth/api-keys";
import { changeOf } from "../../lib/events";
import { EventsMixin, type EventsMethods } from "../../lib/events.mixin";
import { nextRecordId } from "../../lib/ids";
import { apiKeyModel, apiKeys, type ApiKeyRecord } from "./model";
import { keyCreator, keyRejection, permissionGrantRefusal, privilegedKeyRefusal, shouldTouch } from "./rules";
import { crossAccount } from "../../lib/tenancy-guard";
import { plainResponse } from "../../lib/resource";

const userIdRule = { type: "number", integer: true, positive: true, convert: true, description: "The id of the user the keys are answerable for" } as const;

const CreatedKey = defineView("AccountApiKeyCreateResponse", { ...apiKeys.view.fields, key: { read: { type: "string" } } });

const ApiKeysService: ServiceSchema<{ rest: string }, TenancyMethods & EventsMethods, { db: Connection; models: { keys: Model<ApiKeyRecord> } }> = {
  name: "api-keys",
  mixins: [
    // Event data is the key as the API lists it: never the key itself or its hash.
    EventsMixin({ records: eventRecords(apiKeys) }),
    MongoMixin((db) => ({ keys: apiKeyModel(db) })),
    TenancyMixin,
  ],
  settings: { rest: "/" },

  actions: {
    ...crudActions(apiKeys, {
      actions: ["list", "get", "update", "remove"],
      // One person's keys (offboarding: see revoke).
      filters: {
        params: { created_by_user_id: { ...userIdRule, optional: true } },
        filter: (params) => (params.created_by_user_id ? { created_by_user_id: params.created_by_user_id } : {}),
      },
      updating(ctx, key, changes) {
        // A key holding permissions is changed only by who may grant them; adding any needs an owner or admin.
        const added = (changes.permissions as ApiKeyPermission[] | undefined)?.filter((p) => !key.permissions.includes(p)) ?? [];
        const refusal = privilegedKeyRefusal(ctx.meta, key) ?? permissionGrantRefusal(ctx.meta, added);
        if (refusal) throw ERRORS.forbidden(refusal);
        return changes;
      },
      async removing(ctx, key) {
        const refusal = privilegedKeyRefusal(ctx.meta, key);
        if (refusal) throw ERRORS.forbidden(refusal);
      },
    } satisfies CrudHooks<unknown, ApiKeyRecord>),

    /** Creates a key and answers it with the plaintext key, the only time it is ever shown. */
    create: {
      rest: "POST /account-api-keys",
      summary: "Create an account API key (the key is shown once)",
      params: apiKeys.createParams,
      response: CreatedKey.one(201),
      async handler(ctx: Ctx<typeof apiKeys.types.create>) {
        const refusal = permissionGrantRefusal(ctx.meta, ctx.params.permissions);
        if (refusal) throw ERRORS.forbidden(refusal);
        if (ctx.params.expires_at && ctx.params.expires_at <= new Date()) {
          throw ERRORS.validation([{ field: "expires_at", message: "expires_at must be in the future", type: "date.min" }]);
        }
        const { key, hash, prefix } = generateApiKey();
        const creatingKey = ctx.meta.apiKeyId ? await this.models.keys.findOne({ _id: ctx.meta.apiKeyId, account_id: this.accountOf(ctx) }).lean<ApiKeyRecord>() : null;
        const id = await nextRecordId(this.db, apiKeys.collection);
        const record = await this.recordChange(changeOf("api_key.created", apiKeys.collection, { _id: id, account_id: this.accountOf(ctx) }), async () => {
          const fields = {
            _id: id,
            name: ctx.params.name,
            expires_at: ctx.params.expires_at ?? null,
            permissions: ctx.params.permissions ?? [],
            key_hash: hash,
            prefix,
            ...keyCreator(ctx.meta, creatingKey),
          };
          return leanToJSON(this.models.keys, await this.createOwned(ctx, this.models.keys, fields));
        });
        return respondCreated(ctx, apiKeys.location(id), { ...record, key });
      },
    },

    /**
     * Offboarding: deletes every key a person is answerable for (made by them, or with one of their keys), in one
     * call, each with its api_key.deleted event. Owners and admins only, as it may end keys holding permissions.
     */
    revoke: {
      rest: "POST /account-api-keys/revoke",
      summary: "Revoke (delete) every API key a user is answerable for",
      params: { created_by_user_id: userIdRule },
      response: plainResponse({ revoked: { type: "number", integer: true }, ids: { type: "array", items: { type: "number", integer: true } } }),
      async handler(ctx: Ctx<{ created_by_user_id: number }>) {
        const accountId = this.accountOf(ctx);
        const refusal = keyRevocationRefusal(ctx.meta);
        if (refusal) throw ERRORS.forbidden(refusal);
        const filter = { account_id: accountId, created_by_user_id: ctx.params.created_by_user_id };
        const ids = (await this.models.keys.find(filter, { _id: 1 }).sort({ _id: 1 }).lean<{ _id: number }[]>()).map((k) => k._id);
        const drafts = ids.map((id) => changeOf("api_key.deleted", apiKeys.collection, { _id: id, account_id: accountId }));
        await this.recordChanges(drafts, async () => {
          await this.models.keys.deleteMany({ ...filter, _id: { $in: ids } });
          return ids.map((id) => ({ id }));
        });
        return { revoked: ids.length, ids };
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
