import type { AuthRequirement } from "../meta";
import type { BodyDecl, ResponseDecl } from "../resource";

/** Action schema fields the gateway reads: who may call the action over HTTP, and how it is described (OpenAPI). */
declare module "moleculer" {
  interface ActionSchema {
    auth?: AuthRequirement;
    response?: ResponseDecl;
    /** One line saying what the operation does (every routed action has one). */
    summary?: string;
    /** Operation ids of an action's routes when it has several, in `rest` order, named like actions of its service ("patch"). */
    operationIds?: string[];
    /** Answers besides the ones every operation documents, by status (the interface's 500 of a pull that cannot convert). */
    errors?: Record<string, string>;
    /** A body the action checks itself rather than through params. */
    body?: BodyDecl;
    /** Params also taken as multipart/form-data file parts (the gateway turns each into {filename, content_type, data}). */
    multipartFiles?: string[];
  }

  // The type parameters as moleculer declares them (an augmentation repeats them).
  interface ServiceSchema<TSettings, TMethods, TVars, TThis> {
    /**
     * Called by Moleculer (0.15 runs it, its typings omit it) with the schema once its mixins are merged, before
     * the service reads it: the place to derive settings or action options from the configuration tree that
     * mixins read in their own `created`.
     */
    merged?: (schema: ServiceSchema<TSettings>) => void;
  }
}
