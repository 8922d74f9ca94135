/**
 * Cases where the second-opinion server (mongo-java-server, see jest.config.js) disagrees with MongoDB's documented
 * semantics or lacks a feature: `it` everywhere else, skipped there with the reason in the test's name. Every use
 * is listed in docs/adr/0048-second-opinion-on-embedded-store.md.
 */
export function unlessMongoJava(reason: string): (name: string, fn: () => Promise<void>) => void {
  if (!process.env.TEST_MONGO_KIND?.startsWith("mongo-java-server")) return (name, fn) => it(name, fn);
  return (name, fn) => it.skip(`${name} [skipped on mongo-java-server: ${reason}]`, fn);
}
