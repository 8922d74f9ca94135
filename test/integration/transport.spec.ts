import { ServiceBroker, type BrokerOptions } from "moleculer";
import { brokerOptions } from "../../moleculer.config";
import { loadConfig } from "../../lib/config";
import { CoalescingNatsTransporter } from "../../lib/nats-transporter";
import { scaled } from "../harness/wait";

/** The coalescing NATS transporter over the test run's real NATS server: many calls in one loop turn, all answered. */
describe("coalescing NATS transporter", () => {
  const brokers: ServiceBroker[] = [];
  afterAll(() => Promise.all(brokers.map((b) => b.stop())));

  const broker = (nodeID: string) => {
    const b = new ServiceBroker(brokerOptions(loadConfig(), { namespace: "transport-spec", nodeID, transporter: process.env.TEST_NATS_URL as BrokerOptions["transporter"], logger: false }));
    brokers.push(b);
    return b;
  };

  it("is what a nats:// TRANSPORTER becomes, and carries bursts of calls and events between brokers", async () => {
    const caller = broker("caller");
    const callee = broker("callee");
    expect(caller.transit?.tx).toBeInstanceOf(CoalescingNatsTransporter);
    const received: number[] = [];
    callee.createService({
      name: "echo",
      actions: { double: { params: { n: "number" }, handler: (ctx) => (ctx.params as { n: number }).n * 2 } },
      events: { "echo.seen"(ctx) { received.push((ctx.params as { n: number }).n); } },
    });
    await Promise.all([caller.start(), callee.start()]);
    await caller.waitForServices("echo");

    // Issued in one synchronous loop: they leave together and must all come back right.
    const answers = await Promise.all(Array.from({ length: 500 }, (_, n) => caller.call<number, { n: number }>("echo.double", { n })));
    expect(answers).toEqual(Array.from({ length: 500 }, (_, n) => n * 2));

    for (let n = 0; n < 50; n++) caller.emit("echo.seen", { n });
    const deadline = Date.now() + scaled(5000);
    while (received.length < 50 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect([...received].sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, n) => n));
  });
});
