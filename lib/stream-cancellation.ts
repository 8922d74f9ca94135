import { Readable } from "node:stream";
import type { Context, Middleware, Service, ServiceBroker } from "moleculer";

/** The internal service every node runs to hear that a caller stopped reading a stream it returned. */
const SERVICE = "$streams";

/**
 * Moleculer sends a stream an action returns to a caller on another node chunk by chunk and never hears back:
 * when the caller destroys its copy (moleculer-web does when the HTTP client goes away), the producer reads on
 * to the end and the caller's transit keeps the request pending for good. With this middleware the caller's
 * node drops the request and tells the producer's node, which destroys the stream it returned (that stream's
 * own destroy frees what it holds, e.g. closes a database cursor). In one process the caller holds the
 * producer's stream itself, so there is nothing to tell. A caller node that leaves cancels what it was sent.
 * One instance per broker.
 */
export function streamCancellation(): Middleware {
  let broker: ServiceBroker;
  /** Streams this node returned to callers on other nodes, by request id, until they close. */
  const sent = new Map<string, { stream: Readable; caller: string }>();

  /** The caller side: its copy closed while the producer was still sending (its closing packet not yet in). */
  function cancel(ctx: Context) {
    if (!broker.transit?.pendingRequests.has(ctx.id)) return;
    broker.transit.removePendingRequest(ctx.id);
    broker
      .call(`${SERVICE}.cancel`, { id: ctx.id }, { nodeID: ctx.nodeID! })
      .catch((err: Error) => broker.logger.warn(`Cancelling stream ${ctx.id} on ${ctx.nodeID} failed`, err));
  }

  return {
    name: "StreamCancellation",

    created(created) {
      broker = created;
      broker.createService({
        name: SERVICE,
        actions: {
          cancel: {
            visibility: "public",
            params: { id: "string" },
            handler(ctx: Context<{ id: string }>) {
              const entry = sent.get(ctx.params.id);
              if (entry?.caller === ctx.nodeID) entry.stream.destroy();
            },
          },
        },
        events: {
          /** A caller that left (stopped or lost) reads nothing more of what it was sent. */
          "$node.disconnected"(ctx: Context<{ node: { id: string } }>) {
            for (const { stream, caller } of sent.values()) if (caller === ctx.params.node.id) stream.destroy();
          },
        },
      });
    },

    localAction(next) {
      return async function (this: Service, ctx: Context) {
        const result = await next.call(this, ctx);
        if (result instanceof Readable && ctx.nodeID !== broker.nodeID) {
          sent.set(ctx.id, { stream: result, caller: ctx.nodeID! });
          result.once("close", () => sent.delete(ctx.id));
        }
        return result;
      };
    },

    remoteAction(next) {
      return async function (this: Service, ctx: Context) {
        const result = await next.call(this, ctx);
        if (result instanceof Readable) result.once("close", () => cancel(ctx));
        return result;
      };
    },
  };
}
