import { identifierRule } from "../../lib/ids";
import { defineResource } from "../../lib/resource";
import { stored } from "../../lib/storage";

/** Traits: reusable behaviour descriptions attached to agents by id or identifier. */
export const traits = defineResource({
  name: "Trait",
  collection: "traits",
  storage: { name: "Trait", named: true },
  path: "/traits",
  idParam: "trait_id",
  identifier: true,
  event: "trait",
  fields: {
    name: { write: { type: "string", min: 1, max: 255, trim: true } },
    identifier: { write: identifierRule },
    category: { write: { type: "string", min: 1, max: 100, trim: true, lowercase: true, optional: true }, store: stored.string({ default: "general" }) },
    description: { write: { type: "string", max: 10_000, optional: true, nullable: true } },
    tags: { write: { type: "array", items: { type: "string", min: 1, max: 100 }, max: 50, optional: true }, store: stored.strings() },
  },
  list: { limits: { max: 200, def: 50 }, sortable: ["updated_at", "created_at", "name"] },
});

/** The traits model on a given connection. */
export const traitModel = traits.model;
export type TraitRecord = typeof traits.types.record;
