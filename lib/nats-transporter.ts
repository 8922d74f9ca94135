import { Transporters } from "moleculer";

interface PendingMessage {
  topic: string;
  data: Buffer;
  sent: () => void;
  failed: (err: unknown) => void;
}

/**
 * Moleculer's NATS transporter, writing the messages of one event-loop turn to the socket together.
 *
 * nats.js flushes its outgoing buffer in a microtask, so each request the gateway handles in its own I/O callback
 * costs one socket write, and on loopback that write (which does the receiver's TCP work too) was the largest
 * single cost of a call over NATS. Publishing in the check phase (setImmediate) instead lets every message
 * produced during one poll phase leave in a single write; a lone message waits only for the end of the current
 * loop turn. Measured: 4.3k -> 6.6k authenticated GETs/s through the gateway at 32 connections (bench/run.ts).
 */
export class CoalescingNatsTransporter extends Transporters.NATS {
  private pending: PendingMessage[] = [];

  override send(topic: string, data: Buffer): Promise<void> {
    return new Promise((sent, failed) => {
      if (this.pending.push({ topic, data, sent, failed }) === 1) setImmediate(() => this.publishPending());
    });
  }

  private publishPending() {
    const batch = this.pending;
    this.pending = [];
    for (const message of batch) {
      try {
        // Same as the stock transporter: nothing to publish through while disconnected.
        this.client?.publish(message.topic, message.data);
        message.sent();
      } catch (err) {
        message.failed(err);
      }
    }
  }
}
