import path from "node:path";
import { listEnv, numberEnv } from "./env";

/** Reads an integer env var, refusing garbage instead of silently running with NaN. */
const intEnv = (name: string, fallback: number) => numberEnv(name, fallback, { integer: true });

const DEV_JWT_SECRET = "dev-only-insecure-jwt-secret-change-me";

/** Every setting the platform reads from the environment, resolved once per read (tests change env between files). */
export function loadConfig() {
  const production = process.env.NODE_ENV === "production";
  const jwtSecret = process.env.JWT_SECRET ?? (production ? "" : DEV_JWT_SECRET);
  if (jwtSecret.length < 32) throw new Error("JWT_SECRET must be set to at least 32 characters");
  const port = intEnv("PORT", 3000);
  return {
    production,
    port,
    /** Probe port for processes that do not run the gateway; 0 disables it. */
    healthPort: intEnv("HEALTH_PORT", 0),
    /** Prometheus metrics port; 0 disables metrics. */
    metricsPort: intEnv("METRICS_PORT", 0),
    /** Empty means: start the bundled MongoDB-compatible server under dataDir. */
    mongoUrl: process.env.MONGO_URL ?? "",
    dataDir: path.resolve(process.env.DATA_DIR ?? "data"),
    transporter: process.env.TRANSPORTER ?? "",
    namespace: process.env.NAMESPACE ?? "",
    services: listEnv("SERVICES"),
    logLevel: process.env.LOG_LEVEL ?? "info",
    /** Lifetime of cached hot reads (users/me); writes clear them at once, the TTL bounds a missed broadcast. 0 disables. */
    cacheTtlSeconds: intEnv("CACHE_TTL_SECONDS", 30),
    jwt: {
      secret: jwtSecret,
      issuer: process.env.JWT_ISSUER ?? "agent-platform",
      audience: process.env.JWT_AUDIENCE ?? "agent-platform-api",
      ttlSeconds: intEnv("JWT_TTL_SECONDS", 8 * 24 * 3600),
    },
    masterApiKey: process.env.MASTER_API_KEY ?? "",
    corsOrigins: listEnv("CORS_ORIGINS"),
    /** Proxies of ours in front of the gateway (ingress, load balancer): X-Forwarded-For is read past that many. */
    trustedProxies: numberEnv("TRUSTED_PROXIES", 0, { min: 0, integer: true }),
    bodyLimit: process.env.BODY_LIMIT ?? "1mb",
    serverName: process.env.SERVER_NAME ?? "agent-platform",
    apiUrl: process.env.API_URL ?? `http://localhost:${port}/api/v1`,
    appUrl: process.env.APP_URL ?? `http://localhost:${port}`,
  };
}

export type Config = ReturnType<typeof loadConfig>;
