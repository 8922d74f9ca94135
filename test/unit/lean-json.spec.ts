import mongoose, { type Model } from "mongoose";
import { leanToJSON } from "../../lib/db";
import { encodeFreeJson } from "../../lib/free-json";
import { agentModel } from "../../services/agents/model";
import { apiKeyModel } from "../../services/api-keys/model";
import { entityModel } from "../../services/entities/model";
import { knowledgeSourceModel } from "../../services/knowledge/model";
import { searchModels } from "../../services/search/model";
import { taskModel } from "../../services/tasks/model";
import { scheduledTaskModel } from "../../services/tasks/scheduled-model";
import { teamModel } from "../../services/teams/model";
import { toolModel } from "../../services/tools/model";
import { traitModel } from "../../services/traits/model";
import { userModel } from "../../services/users/model";
import { subscriptionModel } from "../../services/webhooks/model";

/**
 * Lists read lean and render with leanToJSON; single reads render documents with toJSON. Both must answer the
 * same JSON, key order included, for every listed model: for records holding every field, and for records stored
 * before most fields existed (only the required ones), where mongoose fills defaults in two passes.
 */
const db = mongoose.createConnection(); // never opened: models only build and serialise documents
const { documents } = searchModels(db);
const MODELS: Model<any>[] = [
  agentModel(db), apiKeyModel(db), entityModel(db), knowledgeSourceModel(db), documents, taskModel(db), scheduledTaskModel(db),
  teamModel(db), toolModel(db), traitModel(db), userModel(db), subscriptionModel(db),
];

const FREE_JSON = "FreeJson";
/** A value of a path's type, as a client reads it (free-form values decoded) — awkward ones where allowed. */
function sampleValue(instance: string, path: string, itemInstance?: string): unknown {
  switch (instance) {
    case FREE_JSON:
      return { "api.base_url": "https://x", $weird: [[1, 2], { "": null }], path };
    case "String":
      return `${path} value`;
    case "Number":
      return 42;
    case "Boolean":
      return true;
    case "Date":
      return new Date(1_700_000_000_000);
    case "Array":
      return itemInstance === "String" ? ["a", "b"] : [1, 2];
    default:
      return { nested: path };
  }
}

/** A record as the database holds it (free-form fields encoded) and as a lean read returns it (decoded). */
function record(model: Model<any>, which: "full" | "required"): { stored: Record<string, unknown>; lean: Record<string, unknown> } {
  const stored: Record<string, unknown> = {};
  const lean: Record<string, unknown> = {};
  for (const [path, type] of Object.entries(model.schema.paths)) {
    if (path.includes(".") || (which === "required" && !type.isRequired && path !== "_id")) continue;
    const value = path === "_id" ? (type.instance === "String" ? "rec-1" : 7) : path === "account_id" ? 3 : sampleValue(type.instance, path, (type as unknown as { embeddedSchemaType?: { instance: string } }).embeddedSchemaType?.instance);
    const enumValues = (type as unknown as { enumValues?: string[] }).enumValues;
    const chosen = enumValues?.length ? enumValues[enumValues.length - 1] : value;
    lean[path] = chosen;
    stored[path] = type.instance === FREE_JSON ? encodeFreeJson(chosen) : chosen;
  }
  return { stored, lean };
}

describe("lean list rows render as their documents do", () => {
  for (const model of MODELS) {
    for (const which of ["full", "required"] as const) {
      it(`${model.modelName}: a record with ${which === "full" ? "every field" : "only its required fields"}`, () => {
        const { stored, lean } = record(model, which);
        const fromDocument = JSON.stringify(model.hydrate(stored).toJSON());
        expect(JSON.stringify(leanToJSON(model, lean))).toBe(fromDocument);
      });
    }
  }

  it("gives each record its own copy of a default (a list's rows never share one array or object)", () => {
    const model = teamModel(db);
    const { lean } = record(model, "required");
    const [a, b] = [leanToJSON(model, { ...lean }), leanToJSON(model, { ...lean })];
    expect(a.agent_ids).toEqual([]);
    expect(a.agent_ids).not.toBe(b.agent_ids);
    expect(a.configuration).not.toBe(b.configuration);
  });
});
