import { WakeGate, wakeTarget } from "../../lib/events.mixin";

describe("consumer wakes (WakeGate)", () => {
  beforeEach(() => jest.useFakeTimers({ now: 1_000_000 }));
  afterEach(() => jest.useRealTimers());

  it("wakes at once after a quiet spell, and sends what comes within the period together at its end", () => {
    const sent: string[][] = [];
    const gate = new WakeGate(50, (groups) => sent.push(groups));
    gate.add(["webhooks"]);
    expect(sent).toEqual([["webhooks"]]);

    jest.advanceTimersByTime(10);
    gate.add(["webhooks"]);
    gate.add(["search", "webhooks"]);
    expect(sent).toHaveLength(1);
    jest.advanceTimersByTime(39);
    expect(sent).toHaveLength(1);
    jest.advanceTimersByTime(1);
    expect(sent).toEqual([["webhooks"], ["webhooks", "search"]]);

    // Quiet for a period: the next one goes at once again.
    jest.advanceTimersByTime(50);
    gate.add(["search"]);
    expect(sent).toEqual([["webhooks"], ["webhooks", "search"], ["search"]]);
  });

  it("sends nothing for no groups", () => {
    const sent: string[][] = [];
    const gate = new WakeGate(50, (groups) => sent.push(groups));
    gate.add([]);
    jest.advanceTimersByTime(100);
    expect(sent).toEqual([]);
  });
});

describe("the replica a group's wakes are for (wakeTarget)", () => {
  it("is the sender's own replica when the sender runs the group", () => {
    expect(wakeTarget("api-7f-10", ["api-7f-2", "api-7f-10", "api-1c-5"])).toBe("api-7f-10");
  });

  it("is otherwise the first node by node ID, whatever order the registry lists them in; none without nodes", () => {
    expect(wakeTarget("gateway-1", ["api-7f-2", "api-7f-10", "api-1c-5"])).toBe("api-1c-5");
    expect(wakeTarget("node-1", ["node-3", "node-2"])).toBe("node-2");
    expect(wakeTarget("node-1", [])).toBeUndefined();
  });
});
