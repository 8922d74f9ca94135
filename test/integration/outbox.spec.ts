import { ServiceBroker } from "moleculer";
import { closeAllDatabases, connectDatabase } from "../../lib/db";
import { publishOutbox, sweepOutbox } from "../../lib/outbox";
import { userModel } from "../../services/users/model";

describe("outbox: events saved with the record are published at least once", () => {
  const url = new URL(process.env.TEST_MONGO_URL!);
  url.pathname = "/outbox";
  const broker = new ServiceBroker({ logger: false });
  const heard: unknown[] = [];
  broker.createService({ name: "ear", events: { "user.registered": (ctx: { params: unknown }) => void heard.push(ctx.params) } });

  beforeAll(() => broker.start());
  afterAll(async () => {
    await broker.stop();
    await closeAllDatabases();
  });

  it("the sweep republishes what a crashed process saved but never published, then clears it", async () => {
    const db = await connectDatabase(url.toString());
    const users = userModel(db);
    await users.init();
    await users.deleteMany({ account_id: 1 });
    const old = new Date(Date.now() - 60_000);
    await users.create({ _id: 1, account_id: 1, email: "a@b.co", password_hash: "x", outbox: [{ event: "user.registered", payload: { user_id: 1 }, created_at: old }] });
    await users.create({ _id: 2, account_id: 1, email: "c@d.co", password_hash: "x", outbox: [{ event: "user.registered", payload: { user_id: 2 }, created_at: new Date() }] });

    const emit = (event: string, payload: Record<string, unknown>) => broker.emit(event, payload);
    expect(await sweepOutbox(users, emit, 30_000)).toBe(1);
    await new Promise((r) => setTimeout(r, 50));
    expect(heard).toEqual([{ user_id: 1 }]);
    expect((await users.findOne({ _id: 1, account_id: 1 }).lean())!.outbox).toEqual([]);
    // Fresh entries belong to a live request and are left to it.
    expect((await users.findOne({ _id: 2, account_id: 1 }).lean())!.outbox).toHaveLength(1);
    expect(await publishOutbox(users, 2, emit)).toBe(1);
    expect(await publishOutbox(users, 2, emit)).toBe(0);
  });
});
