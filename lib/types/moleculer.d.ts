import type { AuthRequirement } from "../meta";

/** Action schema field the gateway's authorize step reads: who may call the action over HTTP. */
declare module "moleculer" {
  interface ActionSchema {
    auth?: AuthRequirement;
  }
}
