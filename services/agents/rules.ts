import type { AgentRecord } from "./model";

export { accessLevelRule, MAX_SUGGESTED_PROMPTS } from "./model";
/** Model used when a create names none (configurable per deployment). */
export const DEFAULT_TEMPERATURE = 0.7;

type Json = Record<string, unknown>;

function isPlainObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Deep merge used for agent configuration: objects merge key by key, a null value removes the key,
 * arrays and scalars replace. Omitting a key keeps the current value.
 */
export function mergeConfiguration(current: Json, patch: Json): Json {
  const out: Json = { ...current };
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else if (isPlainObject(value) && isPlainObject(out[key])) out[key] = mergeConfiguration(out[key] as Json, value);
    else if (isPlainObject(value)) out[key] = mergeConfiguration({}, value);
    else out[key] = value;
  }
  return out;
}

/** A lean directory row: what pickers need and nothing else. */
export function directoryItem(agent: Pick<AgentRecord, "_id" | "name" | "identifier" | "image_url" | "access_level" | "configuration" | "publication">) {
  const chatUi = (agent.configuration?.chat_ui ?? {}) as Json;
  return {
    id: agent._id,
    name: agent.name,
    uri: agent.publication?.chat_uri ?? agent.identifier,
    avatar: agent.image_url,
    access: agent.publication?.access_level ?? agent.access_level,
    accent: (chatUi.accent_color as string | undefined) ?? (agent.configuration?.accent_color as string | undefined) ?? null,
  };
}

/** The publication as shown to clients: never the password hash, but whether one is set. */
export function publicPublication(publication: AgentRecord["publication"]) {
  if (!publication) return null;
  const { password_hash, ...visible } = publication;
  return { ...visible, has_password: Boolean(password_hash) };
}
