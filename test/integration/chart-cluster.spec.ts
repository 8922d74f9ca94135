/**
 * The charts and the app agree: the umbrella chart is rendered (test/charts/values/umbrella-cluster-test.yaml) and
 * every replica of every Deployment starts as a local process with exactly the rendered command (the image's CMD,
 * over the image's build in dist/),
 * environment (ConfigMap and Secret through envFrom, extraEnv) and ports, each replica on ports of its own as in a
 * pod of its own, with the Service names of the values (nats, mongo, typesense) mapped to the test's servers on
 * loopback. Each replica must turn ready on its rendered readiness probe; then the REST smoke flow and a knowledge
 * load run through a gateway replica, one replica of every scaled Deployment is killed mid-load, and nothing is lost.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { randomBytes } from "node:crypto";
import mongoose from "mongoose";
import { apiClient, signup, type Api } from "../harness/http";
import { spawnProcess, type ServiceProcess } from "../harness/process";
import { freePort } from "../harness/servers";
import { until } from "../harness/wait";

/** moleculer.config.ts: a node silent this long is dropped from the registry. */
const HEARTBEAT_TIMEOUT_MS = 15_000;

const ROOT = path.resolve(__dirname, "..", "..");
const VALUES = path.join(ROOT, "test/charts/values/umbrella-cluster-test.yaml");
/** Twenty-eight processes start on a 2-core machine shared with other work. */
const START_TIMEOUT_MS = 300_000;
const SITE_PAGES = 40;
/** A list route of every service behind the gateway (the loader has none; the load itself waits for it). */
const ROUTED = ["/users/me", "/agents", "/tools", "/traits", "/teams", "/knowledge", "/knowledge/documents", "/tasks", "/scheduled-tasks", "/entities", "/webhook-subscriptions", "/account-api-keys"];

interface Container {
  env?: { name: string; value?: string }[];
  envFrom: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  ports: { name: string; containerPort: number }[];
  readinessProbe: { httpGet: { path: string; port: string } };
  command?: string[];
  args?: string[];
}
interface Resource {
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  spec?: { replicas?: number; template: { spec: { containers: Container[] } } };
  data?: Record<string, string>;
  stringData?: Record<string, string>;
}

interface Replica {
  deployment: string;
  process: ServiceProcess;
  /** Container port name -> the loopback port this replica got for it. */
  ports: Record<string, number>;
  readiness: string;
}

/**
 * The image's CMD (Dockerfile), run as in the image: from the compiled dist/ beside node_modules. The build is the
 * image's `npm run build` (tsc -p tsconfig.build.json); running compiled code keeps twenty-odd processes from each
 * transpiling the sources.
 */
function imageCommand(): string[] {
  const cmd = [...readFileSync(path.join(ROOT, "Dockerfile"), "utf8").matchAll(/^CMD (\[.*\])$/gm)].pop();
  const [node, ...args] = JSON.parse(cmd![1]!) as string[];
  if (node !== "node") throw new Error(`unexpected image CMD ${cmd![1]}`);
  execFileSync(process.execPath, [require.resolve("typescript/bin/tsc"), "-p", path.join(ROOT, "tsconfig.build.json")], { cwd: ROOT });
  return [process.execPath, ...args];
}

/** The umbrella chart rendered with the cluster values and this run's settings, as resources. */
function renderUmbrella(settings: Record<string, string>): Resource[] {
  const tools = Object.fromEntries(
    execFileSync("bash", [path.join(ROOT, "scripts/charts/tools.sh")], { encoding: "utf8" })
      .trim()
      .split("\n")
      .map((line) => line.split("=") as [string, string]),
  );
  const work = mkdtempSync(path.join(os.tmpdir(), "chart-cluster-"));
  try {
    execFileSync("bash", [path.join(ROOT, "scripts/charts/vendor.sh"), work], { env: { ...process.env, HELM: tools.HELM } });
    const sets = Object.entries(settings).flatMap(([key, value]) => ["--set-string", `${key}=${value}`]);
    const yaml = execFileSync(tools.HELM!, ["template", "ap", path.join(work, "charts/agent-platform"), "-f", VALUES, "--kube-version", "1.37.0", ...sets], {
      encoding: "utf8",
      maxBuffer: 64 << 20,
    });
    const toJson = "import json,sys,yaml; json.dump([d for d in yaml.safe_load_all(sys.stdin) if d], sys.stdout)";
    return JSON.parse(execFileSync(tools.PYTHON!, ["-c", toJson], { input: yaml, encoding: "utf8", maxBuffer: 64 << 20 })) as Resource[];
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** A small site whose pages answer slowly, so a load is still running when replicas are killed. */
function startSite(): Promise<{ sitemap: string; stop(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", `http://${req.headers.host}`);
    if (url.pathname === "/sitemap.xml") {
      const locs = Array.from({ length: SITE_PAGES }, (_, i) => `<url><loc>${url.origin}/page-${i}</loc></url>`).join("");
      return void res.writeHead(200, { "content-type": "application/xml" }).end(`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${locs}</urlset>`);
    }
    const match = /^\/page-(\d+)$/.exec(url.pathname);
    if (!match) return void res.writeHead(404).end();
    const body = `<html><head><title>Harbour note ${match[1]}</title></head><body><main><h1>Harbour note ${match[1]}</h1><p>Pilot boats moor at berth ${match[1]} after the evening tide.</p></main></body></html>`;
    setTimeout(() => res.writeHead(200, { "content-type": "text/html" }).end(body), 150);
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve({ sitemap: `http://127.0.0.1:${(server.address() as AddressInfo).port}/sitemap.xml`, stop: () => new Promise((r) => server.close(() => r())) }),
    ),
  );
}

describe("the umbrella chart run as local processes", () => {
  const namespace = `charts-${randomBytes(3).toString("hex")}`;
  const loopback: Record<string, string> = {
    "nats:4222": new URL(process.env.TEST_NATS_URL!).host,
    "mongo:27017": new URL(process.env.TEST_MONGO_URL!).host,
    "typesense:8108": new URL(process.env.TEST_TYPESENSE_URL!).host,
  };
  const replicas: Replica[] = [];
  let resources: Resource[];
  let site: Awaited<ReturnType<typeof startSite>>;
  let owner: { token: string };

  /** Calls the API through the first gateway replica still running, as the gateway Service would. */
  const api: Api = (method, pathname, options) => {
    const gateway = replicas.find((r) => r.deployment === "ap-gateway" && r.process.child.exitCode === null && r.process.child.signalCode === null)!;
    return apiClient(`http://127.0.0.1:${gateway.ports.http}`)(method, pathname, options);
  };
  const call = (method: string, pathname: string, body?: unknown) => api(method, `/api/v1${pathname}`, { token: owner.token, body });

  async function ready(replica: Replica) {
    const url = `http://127.0.0.1:${replica.ports[replica.readiness.split(" ")[0]!]}${replica.readiness.split(" ")[1]}`;
    try {
      const exited = () => replica.process.child.exitCode !== null || replica.process.child.signalCode !== null;
      await until(async () => (exited() ? "exited" : (await fetch(url).catch(() => undefined))?.status), (status) => status === 200 || status === "exited", START_TIMEOUT_MS, `${replica.deployment} ready`);
      if (exited()) throw new Error(`${replica.deployment} exited before it was ready`);
    } catch (err) {
      throw new Error(`${(err as Error).message}\n${replica.process.output().slice(-3000)}`);
    }
  }

  beforeAll(async () => {
    resources = renderUmbrella({
      "global.moleculerNamespace": namespace,
      "global.env.TYPESENSE_COLLECTION": `${namespace.replace(/-/g, "_")}_chunks`,
      "secret.stringData.TYPESENSE_API_KEY": process.env.TEST_TYPESENSE_API_KEY ?? "",
    });
    const secret = resources.find((r) => r.kind === "Secret")!;
    const mongoUrl = secret.stringData!.MONGO_URL!.replace("mongo:27017", loopback["mongo:27017"]!);
    const conn = await mongoose.createConnection(mongoUrl).asPromise();
    await conn.dropDatabase();
    await conn.close();
    site = await startSite();

    const command = imageCommand();
    for (const deployment of resources.filter((r) => r.kind === "Deployment")) {
      const [container] = deployment.spec!.template.spec.containers;
      expect(container!.command ?? container!.args).toBeUndefined();
      for (let i = 0; i < (deployment.spec!.replicas ?? 1); i++) {
        // envFrom in order (later sources win), then env; each replica gets its own loopback port per container port.
        const env: Record<string, string> = {};
        for (const source of container!.envFrom) {
          const ref = source.configMapRef ?? source.secretRef;
          const kind = source.configMapRef ? "ConfigMap" : "Secret";
          const found = resources.find((r) => r.kind === kind && r.metadata.name === ref!.name);
          Object.assign(env, found!.data ?? found!.stringData);
        }
        for (const entry of container!.env ?? []) if (entry.value !== undefined) env[entry.name] = entry.value;
        const ports: Record<string, number> = {};
        for (const port of container!.ports) {
          ports[port.name] = await freePort();
          const variable = Object.keys(env).find((name) => /(^|_)PORT$/.test(name) && env[name] === String(port.containerPort));
          if (!variable) throw new Error(`${deployment.metadata.name}: no env variable gives container port ${port.name}`);
          env[variable] = String(ports[port.name]);
        }
        for (const [name, value] of Object.entries(env)) {
          env[name] = Object.entries(loopback).reduce((v, [service, address]) => v.replace(`//${service}`, `//${address}`), value);
        }
        const probe = container!.readinessProbe.httpGet;
        replicas.push({
          deployment: deployment.metadata.name,
          process: spawnProcess(command, { ...env, PATH: process.env.PATH }),
          ports,
          readiness: `${probe.port} ${probe.path}`,
        });
      }
    }
    await Promise.all(replicas.map(ready));
    // Readiness is each process's own: a gateway routes to a service once it has discovered it, so wait until
    // every service's routes answer (401 without credentials) instead of 404.
    await until(
      () => Promise.all(ROUTED.map(async (route) => (await api("GET", `/api/v1${route}`)).status)),
      (statuses) => statuses.every((status) => status !== 404),
      START_TIMEOUT_MS,
      "the gateway routing to every service",
    );
    owner = await signup(api, "chart-cluster");
  }, START_TIMEOUT_MS + 60_000);

  afterAll(async () => {
    await Promise.all(replicas.map((r) => r.process.kill()));
    await site?.stop();
  });

  it("starts every replica of every Deployment, each ready on its rendered probe", () => {
    const deployments = resources.filter((r) => r.kind === "Deployment");
    expect(deployments).toHaveLength(15);
    expect(replicas.length).toBe(deployments.reduce((n, d) => n + (d.spec!.replicas ?? 1), 0));
  });

  it("runs the REST smoke flow through the gateway", async () => {
    const agent = await call("POST", "/agents", { name: "Chart agent" });
    expect(agent.status).toBe(201);
    expect((await call("GET", `/agents/${agent.body.id}`)).body).toMatchObject({ id: agent.body.id, name: "Chart agent" });
    const team = await call("POST", "/teams", { name: "Chart team" });
    expect(team.status).toBe(201);
    expect((await call("GET", "/agents")).body.data.map((a: { id: number }) => a.id)).toEqual([agent.body.id]);
  });

  it("loads knowledge with one replica of every scaled Deployment killed mid-load, and loses nothing", async () => {
    const agentBefore = await call("POST", "/agents", { name: "Before the kill" });
    const source = await call("POST", "/knowledge", { name: "Harbour", data_type: "sitemap", paths: [site.sitemap] });
    expect(source.status).toBe(201);
    await until(async () => (await call("GET", `/knowledge/${source.body.id}`)).body, (s) => s.loading_urls_done >= 5, 120_000, "first pages loaded");

    const scaled = [...new Set(replicas.map((r) => r.deployment))].filter((d) => replicas.filter((r) => r.deployment === d).length > 1);
    expect(scaled.length).toBeGreaterThanOrEqual(14);
    await Promise.all(scaled.map((d) => replicas.find((r) => r.deployment === d)!.process.kill("SIGKILL")));
    const killedAt = Date.now();

    const loaded = await until(
      async () => (await call("GET", `/knowledge/${source.body.id}`).catch(() => ({ body: {} }))).body,
      (s) => ["loaded", "partial", "failed"].includes(s.loading_status),
      180_000,
      "load finished",
    );
    expect(loaded).toMatchObject({ loading_status: "loaded", document_count: SITE_PAGES, loading_urls_done: SITE_PAGES, loading_error: null });
    // Until the registry drops the killed replicas (heartbeatTimeout, 15 s), a call routed to one times out, as it
    // would on a cluster; the load itself rides that out with retries. Read the outcome once they are gone.
    await new Promise((r) => setTimeout(r, Math.max(0, killedAt + HEARTBEAT_TIMEOUT_MS + 5_000 - Date.now())));
    // On a busy machine the registry can take longer than that: a call still routed to a dead replica is retried.
    const documents = await until(() => call("GET", `/knowledge/${source.body.id}/documents?limit=100`).catch(() => ({ status: 0, body: {} })), (r) => r.status === 200, 60_000, "documents listed");
    expect(new Set(documents.body.documents.map((d: { url: string }) => d.url)).size).toBe(SITE_PAGES);
    await until(async () => (await call("GET", "/knowledge/documents/stats")).body, (s) => s.index_status === "ready", 180_000, "all chunks embedded");
    const found = await call("POST", "/knowledge/documents/search", { query: "pilot boats berth 17", mode: "hybrid" });
    expect(found.status).toBe(200);
    expect(found.body.results.length).toBeGreaterThan(0);

    // Writes before the kill are all there, and writes after it work.
    const agentAfter = await call("POST", "/agents", { name: "After the kill" });
    expect(agentAfter.status).toBe(201);
    const agents = await call("GET", "/agents?limit=100");
    expect(agents.body.data.map((a: { id: number }) => a.id)).toEqual(expect.arrayContaining([agentBefore.body.id, agentAfter.body.id]));
  }, 420_000);
});
