/**
 * Collection names other services read directly (one database, one writer per collection): the
 * knowledge-sources service writes this one; agents resolve associations against it.
 */
export const KNOWLEDGE_SOURCES_COLLECTION = "knowledge_sources";
