import type { AuthRequirement } from "../meta";
import type { ResponseDecl } from "../resource";

/** Action schema fields the gateway reads: who may call the action over HTTP, and how it answers (OpenAPI). */
declare module "moleculer" {
  interface ActionSchema {
    auth?: AuthRequirement;
    response?: ResponseDecl;
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
