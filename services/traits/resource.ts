import { identifierRule } from "../../lib/ids";
import { defineResource } from "../../lib/resource";
import { traitModel } from "./model";

/** Traits: reusable behaviour descriptions attached to agents by id or identifier. */
export const traits = defineResource({
  name: "Trait",
  collection: "traits",
  model: traitModel,
  path: "/traits",
  idParam: "trait_id",
  identifier: true,
  event: "trait",
  fields: {
    name: { write: { type: "string", min: 1, max: 255, trim: true } },
    identifier: { write: identifierRule },
    category: { write: { type: "string", min: 1, max: 100, trim: true, lowercase: true, optional: true } },
    description: { write: { type: "string", max: 10_000, optional: true, nullable: true } },
    tags: { write: { type: "array", items: { type: "string", min: 1, max: 100 }, max: 50, optional: true } },
  },
  list: { limits: { max: 200, def: 50 }, sortable: ["updated_at", "created_at", "name"] },
});
