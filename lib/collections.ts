/**
 * Collection names other services read directly (one database, one writer per collection): the
 * knowledge-sources service writes this one; agents resolve associations against it.
 */
export const KNOWLEDGE_SOURCES_COLLECTION = "knowledge_sources";

/** Custom domains an account may publish agents on (operators register them; push checks them). */
export const DOMAINS_COLLECTION = "domains";
