import fc from "fast-check";
import { mongo, type mongo as Mongo } from "mongoose";
import { databaseUrl } from "../harness/servers";

/**
 * The run's main MongoDB server and mongo-java-server (jest.config.js, second-opinion project) answer the same
 * generated filters, sorts and pages over the same mixed-type records with the same ids: the shapes the local
 * server's pushdown answers in SQL (equalities, $in, ranges, $ne, $nin, $exists, sorts, skip, limit). Where they
 * differ, one of them is wrong (docs/adr/0048-second-opinion-on-embedded-store.md).
 */
describe("the main server and mongo-java-server agree", () => {
  const { Double, Long } = mongo;
  const clients: Mongo.MongoClient[] = [];
  let collections: Mongo.Collection[] = [];

  // Few distinct values of every type the services store, so filters hit and types collide. Arrays stand only in
  // `w` and are never operands, ranges on `w` have one bound, no sort is on `w`, and null bounds no range: on those
  // mongo-java-server is wrong (docs/adr/0048-second-opinion-on-embedded-store.md; query-semantics.spec.ts has a case for each but array bounds).
  const SCALARS: unknown[] = [0, 1, 2, new Double(1), new Double(2.5), Long.fromNumber(2), "1", "a", "b", "", true, false, null, new Date(1000), new Date(2000), { x: 1 }];
  const scalar = fc.constantFrom(...SCALARS);
  const bound = fc.constantFrom(...SCALARS.filter((v) => v !== null));
  const oneBound = fc.tuple(fc.constantFrom("$gt", "$gte", "$lt", "$lte"), bound).map(([op, v]) => ({ [op]: v }));
  const common = [
    scalar,
    fc.record({ $in: fc.array(scalar, { minLength: 1, maxLength: 3 }) }),
    oneBound,
    fc.record({ $ne: scalar }),
    fc.record({ $nin: fc.array(scalar, { minLength: 1, maxLength: 3 }) }),
    fc.record({ $exists: fc.boolean() }),
  ];
  const twoBounds = fc.tuple(fc.constantFrom("$gt", "$gte"), bound, fc.constantFrom("$lt", "$lte"), bound).map(([a, x, b, y]) => ({ [a]: x, [b]: y }));
  const condition = fc.oneof(
    fc.tuple(fc.constant("v"), fc.oneof(...common, twoBounds)),
    fc.tuple(fc.constant("w"), fc.oneof(...common)),
  );
  const filter = fc.tuple(fc.constantFrom(1, 2), fc.array(condition, { maxLength: 2 }))
    .map(([account, conditions]) => ({ account_id: account, ...Object.fromEntries(conditions) }));
  const page = fc.record({
    sort: fc.constantFrom<Record<string, 1 | -1>>({ _id: 1 }, { _id: -1 }, { v: 1, _id: 1 }, { v: -1, _id: -1 }),
    skip: fc.integer({ min: 0, max: 3 }),
    limit: fc.integer({ min: 0, max: 5 }),
  });

  beforeAll(async () => {
    const urls = [process.env.TEST_MAIN_MONGO_URL!, process.env.TEST_MONGO_URL!];
    for (const url of urls) clients.push(await new mongo.MongoClient(databaseUrl(url, "second_opinion")).connect());
    const records = fc.sample(fc.record({ v: fc.option(scalar, { nil: undefined }), w: fc.option(fc.oneof(scalar, fc.constantFrom([1, "a"], [2, 3], [])), { nil: undefined }) }), { numRuns: 60, seed: 20261128 })
      .map((r, i) => ({ _id: i + 1, account_id: 1 + (i % 2), ...(r.v === undefined ? {} : { v: r.v }), ...(r.w === undefined ? {} : { w: r.w }) }));
    collections = clients.map((c) => c.db().collection("records"));
    for (const coll of collections) {
      await coll.db.dropDatabase();
      await coll.createIndexes([{ key: { account_id: 1, v: 1, _id: 1 } }, { key: { account_id: 1, w: 1 } }]);
      await coll.insertMany(records.map((r) => ({ ...r })) as never[]);
    }
  });
  afterAll(async () => {
    await Promise.all(clients.map(async (c) => (await c.db().dropDatabase(), await c.close())));
  });

  const ids = (coll: Mongo.Collection, query: object, options: Mongo.FindOptions) => coll.find(query, options).toArray().then((rows) => rows.map((r) => r._id));

  it("on finds with filters, sorts and pages, and on counts", async () => {
    await fc.assert(
      fc.asyncProperty(filter, page, async (query, options) => {
        const [main, second] = await Promise.all(collections.map((c) => ids(c, query, options)));
        expect(main).toEqual(second);
        const [mainCount, secondCount] = await Promise.all(collections.map((c) => c.countDocuments(query)));
        expect(mainCount).toBe(secondCount);
      }),
      { numRuns: 500, seed: 20261128 },
    );
  });
});
