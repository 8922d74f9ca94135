import {
  attemptOutcome,
  attemptResult,
  claimRoom,
  deliveryBody,
  leaseOutlastsAttempt,
  messageIdFor,
  receives,
  retryDelayMs,
  signingSecrets,
  olderSecrets,
  MAX_OLDER_SECRETS,
  urlProblem,
  WEBHOOK_EVENT_TYPES,
} from "../../../services/webhooks/rules";

describe("webhook rules", () => {
  const now = new Date("2026-11-23T08:00:00.000Z");

  it("accepts absolute http and https URLs only", () => {
    expect(urlProblem("https://hooks.example.com/in?x=1")).toBeNull();
    expect(urlProblem("http://127.0.0.1:8080/hook")).toBeNull();
    expect(urlProblem("ftp://example.com/x")).toMatchObject({ field: "url", type: "url" });
    expect(urlProblem("not a url")).toMatchObject({ field: "url", type: "url" });
    expect(urlProblem("/relative/path")).toMatchObject({ field: "url" });
  });

  it("a subscription receives every type when it lists none, otherwise only the listed ones, and nothing when disabled", () => {
    expect(receives({ enabled: true, event_types: [] }, "agent.created")).toBe(true);
    expect(receives({ enabled: true, event_types: ["team.created"] }, "agent.created")).toBe(false);
    expect(receives({ enabled: true, event_types: ["team.created", "agent.created"] }, "agent.created")).toBe(true);
    expect(receives({ enabled: false, event_types: [] }, "agent.created")).toBe(false);
  });

  it("event types are hierarchical, full-stop delimited names", () => {
    for (const type of WEBHOOK_EVENT_TYPES) expect(type).toMatch(/^[a-z_]+\.[a-z_]+$/);
  });

  it("message ids are msg_ plus URL-safe characters and never contain a full stop", () => {
    const ids = new Set(Array.from({ length: 50 }, (_, i) => messageIdFor(`evt_${i % 10}`, Math.floor(i / 10))));
    expect(ids.size).toBe(50);
    for (const id of ids) expect(id).toMatch(/^msg_[A-Za-z0-9_-]{24}$/);
    // The same event and subscription give the same webhook-id: a redelivered event is deduplicated.
    expect(messageIdFor("evt_a", 1)).toBe(messageIdFor("evt_a", 1));
  });

  it("builds the body as {type, timestamp, data} with an ISO-8601 timestamp", () => {
    expect(JSON.parse(deliveryBody("agent.created", { id: 7 }, now))).toEqual({ type: "agent.created", timestamp: "2026-11-23T08:00:00.000Z", data: { id: 7 } });
    expect(JSON.parse(deliveryBody("team.deleted", undefined, now)).data).toEqual({});
  });

  it("2xx is delivered, 410 is gone, everything else (3xx included, or no answer) is retried", () => {
    expect(attemptOutcome(200)).toBe("delivered");
    expect(attemptOutcome(204)).toBe("delivered");
    expect(attemptOutcome(410)).toBe("gone");
    for (const status of [301, 302, 400, 401, 404, 429, 500, 503, undefined]) expect(attemptOutcome(status)).toBe("retry");
  });

  it("waits the scheduled delay for the attempt, with ±20% jitter, and gives up when the schedule is used up", () => {
    const schedule = [1000, 60_000];
    expect(retryDelayMs(schedule, 1, 0.5)).toBe(1000);
    expect(retryDelayMs(schedule, 1, 0)).toBe(800);
    expect(retryDelayMs(schedule, 1, 1)).toBe(1200);
    expect(retryDelayMs(schedule, 2, 0.5)).toBe(60_000);
    expect(retryDelayMs(schedule, 3, 0.5)).toBeNull();
  });

  it("honours Retry-After when it is longer, up to the schedule's longest delay", () => {
    const schedule = [1000, 60_000];
    expect(retryDelayMs(schedule, 1, 0.5, 10_000)).toBe(10_000);
    expect(retryDelayMs(schedule, 1, 0.5, 500)).toBe(1000);
    expect(retryDelayMs(schedule, 1, 0.5, 3_600_000)).toBe(60_000);
  });

  it("turns an answer into the delivery's next state", () => {
    const schedule = [1000];
    expect(attemptResult({ status: 200 }, 1, schedule, now)).toEqual({ status: "delivered", httpStatus: 200 });
    expect(attemptResult({ status: 410 }, 1, schedule, now)).toMatchObject({ status: "failed", httpStatus: 410, error: expect.stringContaining("410") });
    expect(attemptResult({ status: 500 }, 1, schedule, now, 0.5)).toEqual({
      status: "pending",
      nextAttemptAt: new Date(now.getTime() + 1000),
      httpStatus: 500,
      error: "HTTP 500",
    });
    expect(attemptResult({ error: "ECONNREFUSED" }, 1, schedule, now, 0.5)).toMatchObject({ status: "pending", httpStatus: null, error: "ECONNREFUSED" });
    expect(attemptResult({ status: 500 }, 2, schedule, now)).toEqual({ status: "failed", httpStatus: 500, error: "HTTP 500; gave up after 2 attempts" });
  });

  it("signs with the earlier secrets as well until each one's overlap ends", () => {
    const previous = { secret: "whsec_old", expiresAt: new Date(now.getTime() + 1000) };
    const older = { secret: "whsec_older", expiresAt: new Date(now.getTime() + 500) };
    expect(signingSecrets("whsec_new", [previous, older], now)).toEqual(["whsec_new", "whsec_old", "whsec_older"]);
    expect(signingSecrets("whsec_new", [previous, older], new Date(now.getTime() + 500))).toEqual(["whsec_new", "whsec_old"]);
    expect(signingSecrets("whsec_new", [previous], new Date(now.getTime() + 1000))).toEqual(["whsec_new"]);
    expect(signingSecrets("whsec_new", [], now)).toEqual(["whsec_new"]);
  });

  it("keeps an earlier rotation's secret through its own overlap when another rotation comes within it", () => {
    const at = (ms: number) => new Date(now.getTime() + ms).toISOString();
    const first = { sealed: "a", expires_at: at(2000) };
    expect(olderSecrets(first, [], now)).toEqual([first]);
    expect(olderSecrets({ sealed: "b", expires_at: at(3000) }, [first, { sealed: "gone", expires_at: at(-1) }], now)).toEqual([{ sealed: "b", expires_at: at(3000) }, first]);
    expect(olderSecrets(null, Array.from({ length: 9 }, (_, i) => ({ sealed: `s${i}`, expires_at: at(1000) })), now)).toHaveLength(MAX_OLDER_SECRETS);
  });

  it("lets a replica hold two claimed deliveries per attempt slot: one attempted, one waiting", () => {
    expect(claimRoom(10, 0, 0)).toBe(20);
    expect(claimRoom(10, 10, 0)).toBe(10);
    expect(claimRoom(10, 10, 7)).toBe(3);
    expect(claimRoom(10, 10, 10)).toBe(0);
    expect(claimRoom(10, 10, 12)).toBe(0);
  });

  it("starts a held delivery only while its lease outlasts a whole attempt", () => {
    const timeoutMs = 15_000;
    expect(leaseOutlastsAttempt(new Date(now.getTime() + 60_000), timeoutMs, now)).toBe(true);
    expect(leaseOutlastsAttempt(new Date(now.getTime() + timeoutMs), timeoutMs, now)).toBe(false);
    expect(leaseOutlastsAttempt(new Date(now.getTime() - 1), timeoutMs, now)).toBe(false);
    expect(leaseOutlastsAttempt(null, timeoutMs, now)).toBe(false);
  });
});
