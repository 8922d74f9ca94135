import { freeJsonRule, type FreeJsonErrors } from "../../lib/free-json";
import { paginationParams } from "../../lib/pagination";
import { defineResource } from "../../lib/resource";
import { stored } from "../../lib/storage";
import { attributeKeys, searchText, templateKey } from "./rules";
import { ENTITY_STATUSES, MESSAGE_ROLES, type Provenance } from "./types";
import { charCount } from "../../lib/text";

const positiveId = { type: "number", integer: true, positive: true, convert: true } as const;
const text = (max: number) => ({ type: "string", max, optional: true, nullable: true }) as const;
const flag = { type: "boolean", convert: true, default: false, optional: true } as const;
const status = { type: "enum", values: [...ENTITY_STATUSES] } as const;

/** What the fields derived on every save and create (`derive` below) are read from and written to. */
type Derived = {
  agent_name: string;
  entity_type_name: string;
  attributes?: Record<string, unknown>;
  search_text: string;
  entity_type_key: string;
  attribute_keys: string[];
};

/** Filters of list, facets and export (query strings are converted). */
export const filterParams = {
  agent_id: { ...positiveId, optional: true, description: "Only records collected by this agent" },
  template_name: { type: "string", max: 255, optional: true, description: "Only records of this data type (case-insensitive; ignored when no type matches)" },
  days: { type: "number", integer: true, min: 1, max: 36_500, convert: true, optional: true, description: "Only records created in the last this many days" },
  status: { ...status, optional: true, description: "Only records in this status" },
  search: { type: "string", max: 200, optional: true, description: "Text matched in attributes, agent name or data type name" },
} as const;

/** REST list: the interface's list limits (1..200, default 50). */
export const restListParams = { ...filterParams, ...paginationParams({ max: 200, def: 50 }), include_facets: { ...flag, description: "Add facet counts (types and statuses) to the page" } } as const;
/** svc_collected_data list: default limit 10. */
export const toolListParams = { ...filterParams, ...paginationParams({ max: 200, def: 10 }), include_facets: flag } as const;

export const statsParams = {
  agent_id: filterParams.agent_id,
  days: filterParams.days,
  group_by_agent: { ...flag, description: "Break the statistics down per agent" },
} as const;


const MAX_ATTRIBUTE_NAME = 100;

/** Attribute names are CSV column suffixes (`attributes.<name>`): 1 to 100 characters, otherwise anything. */
function checkAttributeNames(value: unknown, errors: FreeJsonErrors): unknown {
  if (typeof value !== "object" || value === null) return value;
  for (const name of Object.keys(value)) {
    const chars = charCount(name);
    if (chars < 1 || chars > MAX_ATTRIBUTE_NAME) {
      errors.push({ type: "attributeName", message: `Attribute names must be 1 to ${MAX_ATTRIBUTE_NAME} characters long (got ${chars})` });
    }
  }
  return value;
}

// An object rule, not a record rule: fastest-validator's record rule rebuilds the object by assignment, which
// would turn a "__proto__" attribute into the result's prototype instead of keeping it.
const attributesRule = freeJsonRule({ type: "object", optional: true } as const, checkAttributeNames);

/** Provenance is keyed by attribute name; "__proto__", the one name the record rule cannot carry, is refused. */
const provenanceRule = freeJsonRule({
  type: "record",
  optional: true,
  nullable: true,
  key: {
    type: "string",
    min: 1,
    max: MAX_ATTRIBUTE_NAME,
    pattern: "^(?!__proto__$)",
    messages: { stringPattern: "Provenance cannot be recorded for an attribute named __proto__" },
  },
  value: {
    type: "object",
    strict: true,
    props: {
      message_id: { type: "number", integer: true, positive: true, optional: true, nullable: true },
      quote: { type: "string", max: 2000, default: "", optional: true },
    },
  },
} as const);

const nullableInt = { type: "number", integer: true, nullable: true } as const;

/**
 * Collected data records. Recording (POST /entities, entities.record) sets the extraction facts; a reviewer
 * changes only the status and the curated values. A record's detail adds where each attribute came from and
 * the conversation around it (render.ts).
 */
export const entities = defineResource({
  name: "EntityDetail",
  label: "Collected data record",
  collection: "entities",
  storage: {
    name: "Entity",
    collection: "entities",
    minimize: false,
    indexes: [[{ account_id: 1, created_at: -1, _id: -1 }], [{ account_id: 1, agent_id: 1 }]],
    // Every write goes through save() or a create (lib/db createRecord): the derived fields stay in step with their sources.
    derive(entity: Derived) {
      // Read once: each read of a free-form field decodes it.
      const attributes = entity.attributes ?? {};
      entity.search_text = searchText(entity.agent_name, entity.entity_type_name, attributes);
      entity.entity_type_key = templateKey(entity.entity_type_name);
      entity.attribute_keys = attributeKeys(attributes);
    },
  },
  path: "/entities",
  idParam: "entity_id",
  event: "entity",
  fields: {
    agent_id: { write: { type: "number", integer: true, positive: true }, on: "create", store: stored.int({ required: true, ref: "agents" }) },
    /** Copied from the agent when the record is made, so it survives renames in exports. */
    agent_name: { store: stored.string({ required: true }) },
    template_id: {
      write: { type: "number", integer: true, positive: true, optional: true, nullable: true },
      on: "create",
      store: stored.int({ default: null }),
    },
    entity_type_name: { write: { type: "string", min: 1, max: 255, trim: true }, on: "create", store: stored.string({ required: true }) },
    entity_type_icon: { write: text(100), on: "create", store: stored.string({ default: null }) },
    status: { write: { ...status, optional: true }, read: status, store: stored.string({ enum: ENTITY_STATUSES, default: "new" }) },
    attributes: { write: attributesRule, read: { type: "object" }, store: stored.json({ default: () => ({}) }) },
    confidence_score: { write: { type: "number", min: 0, max: 1, optional: true, nullable: true }, on: "create", store: stored.number({ default: null }) },
    // The identity fields the server resolves for display (DISPLAY_FIELDS); all nullable.
    display_name: { write: text(255), store: stored.string({ default: null }) },
    contact_email: { write: text(320), store: stored.string({ default: null }) },
    contact_phone: { write: text(50), store: stored.string({ default: null }) },
    display_summary: { write: text(2000), store: stored.string({ default: null }) },
    session_channel: { write: text(50), on: "create", store: stored.string({ default: null }) },
    session_id: { write: { type: "string", min: 1, max: 255, optional: true, nullable: true }, on: "create", store: stored.string({ default: null }) },
    provenance: {
      write: provenanceRule,
      on: "create",
      read: { type: "record", nullable: true, value: { type: "object", props: { message_id: nullableInt, quote: { type: "string" } } } },
      store: stored.json<Provenance>({ default: null }),
    },
    /** Lower-cased attribute values, agent name and type name: `search` is one substring match. */
    search_text: { read: false, store: stored.string({ default: "" }) },
    /** Lower-cased template name: the case-insensitive template_name filter is an equality match. */
    entity_type_key: { read: false, store: stored.string({ default: "" }) },
    /** Sorted attribute names: the export header comes from one distinct() instead of reading every row twice. */
    attribute_keys: { read: false, store: stored.strings() },
    // Given explicitly by internal callers that import history; mongoose keeps a created_at that is set.
    created_at: { store: stored.date() },
    session_excerpt: {
      read: {
        type: "array",
        nullable: true,
        items: { type: "object", props: { id: { type: "number", integer: true }, role: { type: "enum", values: ["user", "assistant"] }, text: { type: "string" }, created_at: { type: "date" } } },
      },
    },
  },
  list: { limits: { max: 200, def: 50 }, sort: { created_at: -1, _id: -1 } },
});

/** The collected data records model on a given connection. */
export const entityModel = entities.model;
/** A collected data record: what an agent extracted from a conversation with a data template. */
export type EntityRecord = typeof entities.types.record;

/** Internal callers (imports, the agent runtime) may also date the record. */
export const internalRecordFields = {
  ...entities.createParams,
  created_at: { type: "date", convert: true, optional: true },
} as const;

export const sessionMessagesParams = {
  session_id: { type: "string", min: 1, max: 255 },
  messages: {
    type: "array",
    min: 1,
    max: 100,
    items: {
      type: "object",
      strict: "remove",
      props: {
        role: { type: "enum", values: [...MESSAGE_ROLES] },
        text: { type: "string", max: 100_000 },
        created_at: { type: "date", convert: true, optional: true },
      },
    },
  },
} as const;

export const deleteManyParams = {
  entity_ids: { type: "array", min: 1, max: 1000, items: { type: "number", integer: true, positive: true } },
  confirmed: flag,
} as const;
