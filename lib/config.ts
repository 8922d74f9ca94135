import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { listEnv, numberEnv, positiveIntEnv } from "./env";

/** Reads an integer env var, refusing garbage instead of silently running with NaN. */
const intEnv = (name: string, fallback: number) => numberEnv(name, fallback, { integer: true });

/** Where a process without JWT_SECRET keeps the secret it generated, under DATA_DIR. */
export const GENERATED_JWT_SECRET_FILE = path.join("secrets", "jwt-secret");

/** Secrets generated (or read back) this process, by file: the file is read once, not on every loadConfig. */
const generatedSecrets = new Map<string, string>();

/**
 * The secret of a single process started without JWT_SECRET: 48 random bytes created on first start in
 * DATA_DIR/secrets/jwt-secret (mode 0600) and read back on every later start, so restarts keep sessions.
 * Exclusive creation makes two processes starting at once agree on one secret.
 */
function generatedJwtSecret(dataDir: string): string {
  const file = path.join(dataDir, GENERATED_JWT_SECRET_FILE);
  const known = generatedSecrets.get(file);
  if (known) return known;
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  try {
    fs.writeFileSync(file, randomBytes(48).toString("base64url"), { flag: "wx", mode: 0o600 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
  }
  const secret = fs.readFileSync(file, "utf8").trim();
  generatedSecrets.set(file, secret);
  return secret;
}

/**
 * JWT_SECRET, or in a single non-production process a generated one kept with the data. Production and
 * clusters (TRANSPORTER) must set it: every replica has to sign and verify with the same secret.
 */
function jwtSecret(production: boolean, clustered: boolean, dataDir: string): { secret: string; generated: boolean } {
  const configured = process.env.JWT_SECRET;
  if (configured !== undefined && configured !== "") {
    if (configured.length < 32) throw new Error("JWT_SECRET must be at least 32 characters");
    return { secret: configured, generated: false };
  }
  if (production || clustered) {
    throw new Error(`JWT_SECRET must be set (at least 32 characters) ${production ? "when NODE_ENV=production" : "when TRANSPORTER joins a cluster"}`);
  }
  return { secret: generatedJwtSecret(dataDir), generated: true };
}

/** Every setting the platform reads from the environment, resolved once per read (tests change env between files). */
export function loadConfig() {
  const production = process.env.NODE_ENV === "production";
  const dataDir = path.resolve(process.env.DATA_DIR ?? "data");
  const transporter = process.env.TRANSPORTER ?? "";
  const jwt = jwtSecret(production, Boolean(transporter), dataDir);
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
    dataDir,
    transporter,
    namespace: process.env.NAMESPACE ?? "",
    services: listEnv("SERVICES"),
    logLevel: process.env.LOG_LEVEL ?? "info",
    /** Lifetime of cached hot reads (users/me); writes clear them at once, the TTL bounds a missed broadcast. 0 disables. */
    cacheTtlSeconds: intEnv("CACHE_TTL_SECONDS", 30),
    jwt: {
      secret: jwt.secret,
      /** True when no JWT_SECRET was given and the secret was generated under DATA_DIR (the server warns once). */
      generatedSecret: jwt.generated,
      issuer: process.env.JWT_ISSUER ?? "agent-platform",
      audience: process.env.JWT_AUDIENCE ?? "agent-platform-api",
      ttlSeconds: intEnv("JWT_TTL_SECONDS", 8 * 24 * 3600),
    },
    masterApiKey: process.env.MASTER_API_KEY ?? "",
    corsOrigins: listEnv("CORS_ORIGINS"),
    /** Failed credential checks allowed per identity (login email, team) and per client address in one window. */
    throttle: {
      identity: { max: positiveIntEnv("AUTH_MAX_FAILURES", 10), windowSeconds: positiveIntEnv("AUTH_FAILURE_WINDOW_SECONDS", 900) },
      client: { max: positiveIntEnv("AUTH_MAX_FAILURES_PER_CLIENT", 50), windowSeconds: positiveIntEnv("AUTH_FAILURE_WINDOW_SECONDS", 900) },
    },
    /** Proxies of ours in front of the gateway (ingress, load balancer): X-Forwarded-For is read past that many. */
    trustedProxies: numberEnv("TRUSTED_PROXIES", 0, { min: 0, integer: true }),
    bodyLimit: process.env.BODY_LIMIT ?? "1mb",
    serverName: process.env.SERVER_NAME ?? "agent-platform",
    apiUrl: process.env.API_URL ?? `http://localhost:${port}/api/v1`,
    appUrl: process.env.APP_URL ?? `http://localhost:${port}`,
  };
}

export type Config = ReturnType<typeof loadConfig>;
