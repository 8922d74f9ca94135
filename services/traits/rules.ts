/** Categories every account starts with; accounts may use their own beside them. */
export const BUILT_IN_CATEGORIES: Record<string, string> = {
  general: "Traits that fit no narrower category",
  personality: "Temperament and character of the agent",
  communication: "Tone, style and format of replies",
  expertise: "Domain knowledge the agent brings",
  behavior: "Rules the agent follows while working",
  safety: "Limits and guardrails",
};

export interface TraitCategory {
  name: string;
  description: string | null;
  trait_count: number;
}

/** Built-in categories plus the account's own, with how many traits each holds, sorted by name. */
export function traitCategories(counts: { _id: string; count: number }[]): TraitCategory[] {
  const byName = new Map<string, TraitCategory>();
  for (const [name, description] of Object.entries(BUILT_IN_CATEGORIES)) byName.set(name, { name, description, trait_count: 0 });
  for (const { _id, count } of counts) {
    const entry = byName.get(_id) ?? { name: _id, description: null, trait_count: 0 };
    entry.trait_count = count;
    byName.set(_id, entry);
  }
  return [...byName.values()].sort((a, b) => a.name.localeCompare(b.name));
}

/** Lower-case, trimmed, de-duplicated tags in first-seen order. */
export function normalizeTags(tags: string[]): string[] {
  return [...new Set(tags.map((t) => t.trim().toLowerCase()).filter(Boolean))];
}
