import { WakeGate } from "../../lib/events.mixin";

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
