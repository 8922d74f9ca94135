import { ServiceBroker } from "moleculer";
import ApiGateway from "moleculer-web";
import { brokerOptions } from "../moleculer.config";
import { loadConfig } from "../lib/config";

/** Path of the one route the ceiling serves. */
export const CEILING_PATH = "/ping";
const DEFAULT_PORT = 3000;
const RESPONSE = { status: "ok" };

/**
 * The ceiling for the HTTP benchmark: the platform's broker options and moleculer-web, with one alias
 * returning a constant, and no transporter, auth or database, so what the platform adds is measurable.
 */
async function main() {
  const broker = new ServiceBroker(brokerOptions(loadConfig(), { transporter: null }));
  broker.createService({
    name: "ceiling",
    mixins: [ApiGateway],
    settings: {
      port: Number(process.env.PORT ?? DEFAULT_PORT),
      ip: "127.0.0.1",
      logRequest: "debug",
      logResponse: "debug",
      routes: [
        {
          path: "/",
          aliases: { [`GET ${CEILING_PATH.slice(1)}`]: "ceiling.ping" },
          mappingPolicy: "restrict",
          bodyParsers: { json: false, urlencoded: false },
        },
      ],
    },
    actions: { ping: () => RESPONSE },
  });
  process.once("SIGTERM", () => void broker.stop().then(() => process.exit(0)));
  await broker.start();
}

if (require.main === module) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
