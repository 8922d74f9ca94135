import type { Ctx } from "./meta";

/** Marks a response as 201 Created with the new resource's location. */
export function respondCreated<T>(ctx: Ctx<unknown>, location: string, body: T): T {
  ctx.meta.$statusCode = 201;
  ctx.meta.$location = location;
  return body;
}

/** Marks a response as 204 No Content. */
export function respondNoContent(ctx: Ctx<unknown>): null {
  ctx.meta.$statusCode = 204;
  return null;
}
