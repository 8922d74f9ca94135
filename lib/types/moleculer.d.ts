import type { AuthRequirement } from "../meta";
import type { ResponseDecl } from "../resource";

/** Action schema fields the gateway reads: who may call the action over HTTP, and how it answers (OpenAPI). */
declare module "moleculer" {
  interface ActionSchema {
    auth?: AuthRequirement;
    response?: ResponseDecl;
  }
}
