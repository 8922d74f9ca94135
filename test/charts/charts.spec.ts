/**
 * The Helm charts, proven on every run: scripts/charts/test.sh lints every chart, renders the values matrix of
 * test/charts/values/ at the oldest and newest supported Kubernetes, checks that every case of test/charts/fails/
 * is refused with its message, and validates every rendered resource (Kubernetes schemas, KEDA and Prometheus
 * Operator CRDs). The tests below then read what was rendered for what no schema can say.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";

const ROOT = path.resolve(__dirname, "..", "..");
const CHARTS = path.join(ROOT, "charts");
const OUT = mkdtempSync(path.join(os.tmpdir(), "charts-"));

interface Resource {
  apiVersion: string;
  kind: string;
  metadata: { name: string; annotations?: Record<string, string> };
  spec?: any;
  data?: Record<string, string>;
}

let output = "";
let exitCode: number | null = null;

beforeAll(async () => {
  await new Promise<void>((resolve) => {
    // The first run on a fresh clone builds helm (a few CPU minutes); .ci/run obtains the tools before the tests.
    execFile("bash", [path.join(ROOT, "scripts/charts/test.sh"), OUT], { maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      output = stdout + stderr;
      exitCode = err ? ((err as { code?: number }).code ?? 1) : 0;
      resolve();
    });
  });
  console.log(output);
}, 30 * 60_000);

afterAll(() => rmSync(OUT, { recursive: true, force: true }));

/** The resources rendered for one case of test/charts/values/. */
function rendered(caseName: string): Resource[] {
  return JSON.parse(readFileSync(path.join(OUT, `${caseName}.json`), "utf8")) as Resource[];
}
const ofKind = (resources: Resource[], kind: string) => resources.filter((r) => r.kind === kind);
const container = (deployment: Resource) => deployment.spec.template.spec.containers[0];
const configMapOf = (resources: Resource[], deployment: Resource) =>
  resources.find((r) => r.kind === "ConfigMap" && r.metadata.name === container(deployment).envFrom[0].configMapRef.name)!;

const SERVICE_CHARTS = readdirSync(CHARTS).filter((c) => !["common", "agent-platform"].includes(c) && !c.includes("."));

it("passes helm lint --strict, the values matrix, the refusals and the schema validation (scripts/charts/test.sh)", () => {
  expect({ exitCode, failures: output.split("\n").filter((line) => line.startsWith("FAIL") || line.startsWith("     ")) }).toEqual({
    exitCode: 0,
    failures: [],
  });
  // Every values file and every refusal was exercised.
  for (const dir of ["values", "fails"]) {
    for (const file of readdirSync(path.join(__dirname, dir))) expect(output).toContain(`-f ${file.replace(/\.yaml$/, "")}`);
  }
  expect(output).toContain("refused: kubeVersion");
});

it("declares the supported Kubernetes versions on every chart", () => {
  for (const chart of readdirSync(CHARTS).filter((c) => !c.includes("."))) {
    expect([chart, /^kubeVersion: ">=1\.25\.0-0"$/m.test(readFileSync(path.join(CHARTS, chart, "Chart.yaml"), "utf8"))]).toEqual([chart, true]);
  }
});

it("probes every process on its probe server: startup and liveness /health/live, readiness /health/ready", () => {
  const resources = rendered("umbrella-defaults");
  const deployments = ofKind(resources, "Deployment");
  expect(deployments).toHaveLength(SERVICE_CHARTS.length);
  for (const deployment of deployments) {
    const c = container(deployment);
    const healthPort = c.ports.find((p: { name: string }) => p.name === "health");
    expect(String(healthPort.containerPort)).toBe(configMapOf(resources, deployment).data!.HEALTH_PORT);
    expect([c.startupProbe.httpGet, c.livenessProbe.httpGet, c.readinessProbe.httpGet]).toEqual([
      { path: "/health/live", port: "health" },
      { path: "/health/live", port: "health" },
      { path: "/health/ready", port: "health" },
    ]);
  }
});

it("exposes every process's metrics port with scrape annotations, and none when metrics are off", () => {
  const resources = rendered("umbrella-defaults");
  for (const deployment of ofKind(resources, "Deployment")) {
    const metricsPort = container(deployment).ports.find((p: { name: string }) => p.name === "metrics");
    expect(metricsPort?.containerPort).toBe(3002);
    expect(configMapOf(resources, deployment).data!.METRICS_PORT).toBe("3002");
    expect(deployment.spec.template.metadata.annotations).toMatchObject({
      "prometheus.io/scrape": "true",
      "prometheus.io/port": "3002",
      "prometheus.io/path": "/metrics",
    });
  }
  const off = rendered("umbrella-metrics-off");
  for (const deployment of ofKind(off, "Deployment")) {
    expect(container(deployment).ports.map((p: { name: string }) => p.name)).not.toContain("metrics");
    expect(configMapOf(off, deployment).data!.METRICS_PORT).toBeUndefined();
    expect(deployment.spec.template.metadata.annotations["prometheus.io/scrape"]).toBeUndefined();
  }
  expect(ofKind(resources, "ServiceMonitor")).toHaveLength(0);
});

it("adds a ServiceMonitor per service, selecting a Service on the metrics port", () => {
  const resources = rendered("umbrella-servicemonitor");
  const monitors = ofKind(resources, "ServiceMonitor");
  expect(monitors).toHaveLength(SERVICE_CHARTS.length);
  for (const monitor of monitors) {
    const selected = ofKind(resources, "Service").filter((s) =>
      Object.entries(monitor.spec.selector.matchLabels).every(([k, v]) => (s.metadata as { labels?: Record<string, string> }).labels?.[k] === v),
    );
    expect(selected.map((s) => s.spec.ports.map((p: { targetPort: string }) => p.targetPort))).toEqual([["metrics"]]);
    expect(monitor.spec.endpoints).toEqual([{ port: "metrics", path: "/metrics", interval: "30s" }]);
  }
});

it("scales the loaders with KEDA only on triggers that work: MongoDB's pending load_jobs or the loaders' own gauge", () => {
  const [mongo] = ofKind(rendered("umbrella-keda-mongodb"), "ScaledObject");
  expect(mongo!.spec.triggers.map((t: { type: string }) => t.type)).toEqual(["mongodb"]);
  expect(mongo!.spec.minReplicaCount).toBe(0);
  const [prometheus] = ofKind(rendered("umbrella-keda-prometheus"), "ScaledObject");
  expect(prometheus!.spec.triggers[0]).toMatchObject({
    type: "prometheus",
    metadata: { query: 'max(knowledge_loader_jobs_pending{namespace="agent-platform"})', threshold: "5" },
  });
  const names = readdirSync(OUT).filter((f) => f.endsWith(".json"));
  for (const name of names) expect([name, readFileSync(path.join(OUT, name), "utf8").includes("nats-jetstream")]).toEqual([name, false]);
});

it("scales search past one replica only over Typesense", () => {
  const alone = ofKind(rendered("search-alone"), "Deployment");
  expect(alone.map((d) => [d.spec.replicas, d.spec.strategy.type])).toEqual([[1, "Recreate"]]);
  const scaled = ofKind(rendered("search-alone-typesense"), "Deployment");
  expect(scaled.map((d) => d.spec.replicas)).toEqual([3]);
  const production = rendered("umbrella-production");
  const search = ofKind(production, "Deployment").find((d) => d.metadata.name === "ap-search")!;
  expect(configMapOf(production, search).data!.TYPESENSE_URL).toMatch(/^http:\/\/typesense/);
});
