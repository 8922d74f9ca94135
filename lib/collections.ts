/**
 * The knowledge sources' collection name, shared by its owner's model and resource and by the loader, which
 * records their loading events. Other services read it through services/knowledge/index.ts, never by name
 * (docs/adr/0052-service-boundaries.md).
 */
export const KNOWLEDGE_SOURCES_COLLECTION = "knowledge_sources";

/** Custom domains an account may publish agents on (operators register them; push checks them). */
export const DOMAINS_COLLECTION = "domains";
