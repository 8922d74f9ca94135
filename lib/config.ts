import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { durationsEnv, listEnv, numberEnv, positiveIntEnv, textEnv, type Env } from "./env";
import { searchConfig } from "./search/config";
import { addressPolicy } from "./address-policy";

/** Standard Webhooks' example schedule: retries 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h after each failure. */
export const DEFAULT_RETRY_SCHEDULE = "5s,5m,30m,2h,5h,10h,10h";
/** The interface's sitemap page ceiling; operators may only lower it. */
export const SITEMAP_PAGE_CEILING = 10_000;

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
function jwtSecret(env: Env, production: boolean, clustered: boolean, dataDir: string): { secret: string; generated: boolean } {
  const configured = env.JWT_SECRET;
  if (configured !== undefined && configured !== "") {
    if (configured.length < 32) throw new Error("JWT_SECRET must be at least 32 characters");
    return { secret: configured, generated: false };
  }
  if (production || clustered) {
    throw new Error(`JWT_SECRET must be set (at least 32 characters) ${production ? "when NODE_ENV=production" : "when TRANSPORTER joins a cluster"}`);
  }
  return { secret: generatedJwtSecret(dataDir), generated: true };
}

/** Where the MCP server listens; MCP_PORT=0 takes an ephemeral port (tests read it from the service). */
function mcpConfig(env: Env) {
  const rawPort = env.MCP_PORT ?? "";
  const port = rawPort === "" ? 3100 : Number(rawPort);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new Error(`MCP_PORT must be a port number, got "${rawPort}"`);
  return { port, host: env.MCP_HOST || "0.0.0.0" };
}

/** Webhook dispatcher settings. */
function webhooksConfig(env: Env) {
  const timeoutMs = numberEnv(env, "WEBHOOK_TIMEOUT_MS", 15_000, { min: 1 });
  return {
    /** How often an idle dispatcher looks for due deliveries. */
    pollMs: numberEnv(env, "WEBHOOK_POLL_MS", 1000, { min: 1 }),
    /** Delays before each retry; a delivery gets 1 + schedule.length attempts. */
    retryScheduleMs: durationsEnv(env, "WEBHOOK_RETRY_SCHEDULE", DEFAULT_RETRY_SCHEDULE),
    /** Time a receiver has to answer (Standard Webhooks recommends 15 to 30 s). */
    timeoutMs,
    /** A claim outlives the request it covers, so a live dispatcher's attempt is never taken over mid-flight. */
    leaseMs: Math.max(numberEnv(env, "WEBHOOK_LEASE_MS", 60_000, { min: 1 }), timeoutMs + 5000),
    /** Deliveries one dispatcher sends at the same time. */
    concurrency: Math.floor(numberEnv(env, "WEBHOOK_CONCURRENCY", 32, { min: 1 })),
    /** How long the previous secret keeps signing after a rotation (a second signature in webhook-signature); 0 = not at all. */
    rotationOverlapSeconds: numberEnv(env, "WEBHOOK_ROTATION_OVERLAP_SECONDS", 24 * 3600, { min: 0 }),
    /** Finished deliveries (delivered or failed) are deleted after this many days. */
    retentionDays: numberEnv(env, "WEBHOOK_RETENTION_DAYS", 30, { min: 1 }),
  };
}

/** Knowledge loader settings. */
function loaderConfig(env: Env) {
  const atLeastOne = (name: string, fallback: number) => numberEnv(env, name, fallback, { min: 1 });
  const ceiling = Number(env.SITEMAP_PAGE_CEILING);
  return {
    /** One load job's time budget per window (the interface's 600 s); tests use a few seconds. */
    windowSeconds: atLeastOne("LOAD_WINDOW_SECONDS", 600),
    /** Windows a load may use before it ends partial. */
    maxWindows: atLeastOne("LOAD_MAX_WINDOWS", 24),
    /** A loader that stops renewing its lease for this long is presumed dead and its job is taken over. */
    leaseSeconds: atLeastOne("LOAD_LEASE_SECONDS", 30),
    /** Jobs one loader process runs at the same time (a stalled source holds one slot, not the loader). */
    concurrency: atLeastOne("LOAD_CONCURRENCY", 4),
    /** Of those, the most one account's jobs take, so the other slots stay free for other accounts. */
    accountConcurrency: atLeastOne("LOAD_ACCOUNT_CONCURRENCY", 2),
    /** How often an idle loader looks for work. */
    pollMs: atLeastOne("LOAD_POLL_MS", 500),
    /** Pages fetched per batch (each batch is one index call and one progress save). */
    batchSize: atLeastOne("LOAD_BATCH_SIZE", 50),
    /** Requests one loader process sends to one host at the same time. */
    perHostConcurrency: positiveIntEnv(env, "LOAD_PER_HOST_CONCURRENCY", 8),
    /** Sitemap pages read per load: the interface's ceiling, unless an operator lowers it. */
    sitemapPageCeiling: Number.isInteger(ceiling) && ceiling > 0 ? Math.min(ceiling, SITEMAP_PAGE_CEILING) : SITEMAP_PAGE_CEILING,
  };
}

/**
 * Every setting the platform reads, from the environment, as one typed tree. The process reads it once at
 * start and hands each service the tree as its `config` setting (services/index.ts); tests build it from a
 * plain object.
 */
export function loadConfig(env: Env = process.env) {
  const intEnv = (name: string, fallback: number) => numberEnv(env, name, fallback, { integer: true });
  const production = env.NODE_ENV === "production";
  const dataDir = path.resolve(textEnv(env, "DATA_DIR", "data"));
  const transporter = env.TRANSPORTER ?? "";
  const jwt = jwtSecret(env, production, Boolean(transporter), dataDir);
  const port = intEnv("PORT", 3000);
  return {
    production,
    port,
    /** Probe port for processes that do not run the gateway; 0 disables it. */
    healthPort: intEnv("HEALTH_PORT", 0),
    /** Prometheus metrics port; 0 disables metrics. */
    metricsPort: intEnv("METRICS_PORT", 0),
    /** Empty means: start the bundled MongoDB-compatible server under dataDir. */
    mongoUrl: env.MONGO_URL ?? "",
    dataDir,
    transporter,
    namespace: env.NAMESPACE ?? "",
    services: listEnv(env, "SERVICES"),
    logLevel: textEnv(env, "LOG_LEVEL", "info"),
    /** Lifetime of cached hot reads (users/me); writes clear them at once, the TTL bounds a missed broadcast. 0 disables. */
    cacheTtlSeconds: intEnv("CACHE_TTL_SECONDS", 30),
    jwt: {
      secret: jwt.secret,
      /** True when no JWT_SECRET was given and the secret was generated under DATA_DIR (the server warns once). */
      generatedSecret: jwt.generated,
      issuer: textEnv(env, "JWT_ISSUER", "agent-platform"),
      audience: textEnv(env, "JWT_AUDIENCE", "agent-platform-api"),
      ttlSeconds: intEnv("JWT_TTL_SECONDS", 8 * 24 * 3600),
    },
    /** Seals stored credentials; derived from the JWT secret when unset. */
    secretsKey: env.SECRETS_KEY || jwt.secret,
    masterApiKey: env.MASTER_API_KEY ?? "",
    corsOrigins: listEnv(env, "CORS_ORIGINS"),
    /** Failed credential checks allowed per identity (login email, team) and per client address in one window. */
    throttle: {
      identity: { max: positiveIntEnv(env, "AUTH_MAX_FAILURES", 10), windowSeconds: positiveIntEnv(env, "AUTH_FAILURE_WINDOW_SECONDS", 900) },
      client: { max: positiveIntEnv(env, "AUTH_MAX_FAILURES_PER_CLIENT", 50), windowSeconds: positiveIntEnv(env, "AUTH_FAILURE_WINDOW_SECONDS", 900) },
    },
    /** Proxies of ours in front of the gateway (ingress, load balancer): X-Forwarded-For is read past that many. */
    trustedProxies: numberEnv(env, "TRUSTED_PROXIES", 0, { min: 0, integer: true }),
    bodyLimit: textEnv(env, "BODY_LIMIT", "1mb"),
    /** Documents added to `upload` knowledge sources (docs/adr/0055-uploaded-documents.md). */
    uploads: {
      /**
       * Largest uploaded file (multipart `file`), in bytes; a bigger one is a 413. The file crosses NATS in base64
       * (4/3 larger): the default fits NATS's default max_payload of 1 MiB; raise both together.
       */
      maxFileBytes: positiveIntEnv(env, "UPLOAD_MAX_FILE_BYTES", 512 * 1024),
      /** Longest text of one document (JSON `text`, or a file's extracted text), in characters; longer is a 413. */
      maxTextChars: positiveIntEnv(env, "UPLOAD_MAX_TEXT_CHARS", 200_000),
      /** Documents one upload source may hold; one more is a 422. */
      maxDocumentsPerSource: positiveIntEnv(env, "UPLOAD_MAX_DOCUMENTS_PER_SOURCE", 1000),
    },
    serverName: textEnv(env, "SERVER_NAME", "agent-platform"),
    apiUrl: textEnv(env, "API_URL", `http://localhost:${port}/api/v1`),
    appUrl: textEnv(env, "APP_URL", `http://localhost:${port}`),
    /** Model of agents created without one. */
    defaultModel: textEnv(env, "DEFAULT_MODEL", "gpt-4o-mini"),
    /** Every signup creates an onboarding task in the new account (tasks service). */
    onboardingTaskEnabled: env.ONBOARDING_TASK_ENABLED === "true",
    /** Durable events (lib/events.mixin.ts). */
    events: {
      pollMs: positiveIntEnv(env, "EVENTS_POLL_MS", 1000),
      leaseMs: positiveIntEnv(env, "EVENTS_LEASE_MS", 30_000),
      /** A change prepared this long ago and still not committed was cut off (its process died): settle it. */
      abandonedAfterMs: positiveIntEnv(env, "EVENTS_ABANDONED_MS", 30_000),
      retentionDays: numberEnv(env, "EVENTS_RETENTION_DAYS", 7, { min: 0 }),
      pendingRetentionDays: numberEnv(env, "EVENTS_PENDING_RETENTION_DAYS", 30, { min: 1 }),
    },
    scheduler: {
      /** How often a scheduler looks for due schedules; also the worst-case delay of a run. */
      pollMs: positiveIntEnv(env, "SCHEDULER_POLL_MS", 1000),
      /** Due schedules handled per look; a full batch is followed at once by the next. */
      batchSize: positiveIntEnv(env, "SCHEDULER_BATCH_SIZE", 100),
    },
    /** What knowledge loads and webhook deliveries may connect to besides public addresses. */
    addressPolicy: addressPolicy(env),
    loader: loaderConfig(env),
    webhooks: webhooksConfig(env),
    mcp: mcpConfig(env),
    search: searchConfig(env),
  };
}

export type Config = ReturnType<typeof loadConfig>;

/** The configuration tree a service was given as its `config` setting (services/index.ts `configured`). */
export function configOf(service: { settings?: unknown }): Config {
  const config = (service.settings as { config?: Config } | undefined)?.config;
  if (!config) throw new Error("The service was created without its config setting (services/index.ts configured)");
  return config;
}
