import type { Connection, Model } from "mongoose";
import { KNOWLEDGE_SOURCES_COLLECTION } from "../../lib/collections";
import { changeOf } from "../../lib/events";
import { EventsMixin, type EventsMethods } from "../../lib/events.mixin";
import { Errors, type ServiceSchema } from "moleculer";
import { configOf, type Config } from "../../lib/config";
import { MongoMixin } from "../../lib/mongo.mixin";
import { secretBox } from "../../lib/secrets";
import {
  claimJob,
  knowledgeSourceModel,
  loadJobModel,
  pendingJobs,
  releaseJob,
  renewLease,
  type KnowledgeSourceRecord,
  type LoadJobRecord,
} from "../knowledge";
import { runDeleteSource, runLoadWindow, type PageDoc, type PageReader, type RunnerDeps } from "./runner";
import { createSourceReader, urlListModel } from "./pages";
import { runRechunkWindow } from "./rechunk";
import { pageRegistryModel } from "./registry";
import { MAX_URLS_PER_CALL } from "../search";

/** Attempts of a search call after the first; delays 0.5, 1, 2, 4 s. */
const SEARCH_CALL_RETRIES = 4;

/**
 * A search call retried when Moleculer says the request never completed on a replica (its node dropped
 * out mid-call, or no replica is available for a moment): indexing a batch again is idempotent (unchanged
 * documents are skipped, half-written ones are redone), so a killed search replica loses no pages. A timeout is
 * retried only for a call that writes no chunks (`idempotent`: warming the embedding cache), though Moleculer
 * counts every timeout retryable: the replica may still be running the first call, and two writers of one
 * document's chunks would leave the loser's chunks unlisted.
 */
async function retryingSearchCall<T>(call: () => Promise<T>, { idempotent = false } = {}): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await call();
    } catch (err) {
      const timedOut = err instanceof Errors.RequestTimeoutError;
      if (!(err as { retryable?: boolean }).retryable || (timedOut && !idempotent) || attempt >= SEARCH_CALL_RETRIES) throw err;
      await new Promise((r) => setTimeout(r, 500 * 2 ** attempt));
    }
  }
}

interface Vars {
  db: Connection;
  models: {
    sources: Model<KnowledgeSourceRecord>;
    jobs: Model<LoadJobRecord>;
    urlLists: ReturnType<typeof urlListModel>;
    pages: ReturnType<typeof pageRegistryModel>;
  };
  reader: PageReader;
  loader: Config["loader"];
  running: boolean;
  loop?: Promise<void>;
  /** Jobs this loader is running, by id. */
  current: Map<string, LoadJobRecord>;
}
interface Methods extends EventsMethods {
  work(): Promise<void>;
  runJob(job: LoadJobRecord): Promise<void>;
  /** Accounts whose jobs fill their share of this loader's slots. */
  fullAccounts(): number[];
}

/**
 * Knowledge loaders: each replica runs up to LOAD_CONCURRENCY jobs at once, claimed from load_jobs (a lease per
 * job, renewed), a window of each, and re-queues the rest. Fair across accounts: an account with nothing running
 * is served first, and one account's jobs take at most LOAD_ACCOUNT_CONCURRENCY of a replica's slots, so
 * another account's load starts while one account's slow sources run. Scale replicas on the pending-job count
 * (metric knowledge_loader.jobs.pending, or KEDA's MongoDB scaler on the same query).
 */
const KnowledgeLoaderService: ServiceSchema<Record<string, never>, Methods, Vars> = {
  name: "knowledge-loader",
  mixins: [
    EventsMixin({ records: { [KNOWLEDGE_SOURCES_COLLECTION]: function (this: Vars, source: Record<string, unknown>) { return knowledgeSourceModel(this.db).hydrate(source).toJSON(); } } }),
    MongoMixin((db) => ({ sources: knowledgeSourceModel(db), jobs: loadJobModel(db), urlLists: urlListModel(db), pages: pageRegistryModel(db) })),
  ],
  settings: {},
  dependencies: ["search"],

  actions: {
    /** Pending load and deletion jobs across all accounts (operators, autoscalers). */
    pending: {
      visibility: "public",
      handler() {
        return pendingJobs(this.models.jobs);
      },
    },
  },

  methods: {
    async work() {
      const slots = new Set<Promise<void>>();
      const idle = () => new Promise((r) => setTimeout(r, this.loader.pollMs));
      while (this.running) {
        if (slots.size >= this.loader.concurrency) {
          await Promise.race(slots);
          continue;
        }
        const job = await claimJob(this.models.jobs, this.broker.nodeID, this.loader.leaseSeconds * 1000, ["load", "delete-source", "rechunk"], this.fullAccounts()).catch((err) => {
          this.logger.warn("Claiming a job failed", err);
          return null;
        });
        this.broker.metrics.set("knowledge_loader.jobs.pending", await pendingJobs(this.models.jobs).catch(() => 0));
        if (!job) {
          // A slot that frees up may let an account's next job in: look again then, or after the poll interval.
          await Promise.race([idle(), ...slots]);
          continue;
        }
        const slot: Promise<void> = this.runJob(job)
          .catch((err) => this.logger.error(`Job ${job._id} failed`, err))
          .finally(() => slots.delete(slot));
        slots.add(slot);
      }
      await Promise.all(slots);
    },

    fullAccounts() {
      const perAccount = new Map<number, number>();
      for (const job of this.current.values()) perAccount.set(job.account_id, (perAccount.get(job.account_id) ?? 0) + 1);
      return [...perAccount].filter(([, n]) => n >= this.loader.accountConcurrency).map(([account]) => account);
    },

    async runJob(job) {
      const owner = this.broker.nodeID;
      const leaseMs = this.loader.leaseSeconds * 1000;
      let holdsLease = true;
      this.current.set(job._id, job);
      const heartbeat = setInterval(() => {
        renewLease(this.models.jobs, job, owner, leaseMs)
          .then((held) => (holdsLease &&= held))
          .catch((err) => this.logger.warn("Lease renewal failed", err));
      }, leaseMs / 3);
      const call = <T>(action: string, params: object, timeout?: number, idempotent = false) =>
        retryingSearchCall(() => this.broker.call<T, object>(action, params, timeout ? { timeout } : {}), { idempotent });
      // A re-chunk's calls embed or re-index many chunks: they may take up to a window.
      const long = this.loader.windowSeconds * 1000;
      const deps: RunnerDeps = {
        sources: this.models.sources,
        jobs: this.models.jobs,
        reader: this.reader,
        index: async (accountId, sourceId, documents: PageDoc[], chunking) => void (await call("search.indexDocuments", { accountId, sourceId, documents, chunking })),
        warmChunking: (accountId, sourceId, chunking, after, limit) => call("search.warmChunking", { accountId, sourceId, chunking, after, limit }, long, true),
        switchChunking: async (accountId, sourceId, chunking) => void (await call("search.switchChunking", { accountId, sourceId, chunking }, long)),
        count: (accountId, sourceId) => call<number>("search.countDocuments", { accountId, sourceId }),
        deleteSourceDocuments: async (accountId, sourceId) => void (await call("search.deleteSourceDocuments", { accountId, sourceId })),
        documentUrls: async (accountId, sourceId) => {
          const urls: string[] = [];
          for (;;) {
            const page = await call<string[]>("search.sourceDocumentUrls", { accountId, sourceId, offset: urls.length, limit: MAX_URLS_PER_CALL });
            urls.push(...page);
            if (page.length < MAX_URLS_PER_CALL) return urls;
          }
        },
        removeDocuments: async (accountId, sourceId, urls) => {
          let removed = 0;
          for (let i = 0; i < urls.length; i += MAX_URLS_PER_CALL) {
            removed += await call<number>("search.removeDocuments", { accountId, sourceId, urls: urls.slice(i, i + MAX_URLS_PER_CALL) });
          }
          return removed;
        },
        recordSourceChange: async (job, type, write) => {
          const record = { _id: job.knowledge_source_id, account_id: job.account_id };
          await this.recordChange(changeOf(type, KNOWLEDGE_SOURCES_COLLECTION, record), async () => {
            await write();
            if (type.endsWith(".deleted")) return { id: record._id };
            return (await this.models.sources.findOne(record))?.toJSON() ?? { id: record._id };
          });
        },
        owner,
        windowMs: this.loader.windowSeconds * 1000,
        maxWindows: this.loader.maxWindows,
        batchSize: this.loader.batchSize,
        holdsLease: () => holdsLease && this.running,
      };
      try {
        if (job.kind === "delete-source") await runDeleteSource(deps, job);
        else if (job.kind === "rechunk") this.logger.info(`Re-chunk job ${job._id} window ${job.window}: ${await runRechunkWindow(deps, job)}`);
        else {
          const result = await runLoadWindow(deps, job);
          this.logger.info(`Load job ${job._id} window ${job.window}: ${result}`);
        }
      } finally {
        clearInterval(heartbeat);
        this.current.delete(job._id);
      }
    },
  },

  created() {
    this.broker.metrics.register({ type: "gauge", name: "knowledge_loader.jobs.pending", description: "Load and deletion jobs waiting for a loader" });
  },

  started() {
    const config = configOf(this);
    this.loader = config.loader;
    this.reader = createSourceReader(this.models.urlLists, this.models.pages, { ...config.loader, addressPolicy: config.addressPolicy }, secretBox(config.secretsKey));
    this.running = true;
    this.current = new Map();
    this.loop = this.work();
  },

  async stopped() {
    this.running = false;
    // Hand unfinished jobs back at once instead of making another loader wait for their leases to expire.
    await Promise.all([...this.current.values()].map((job) => releaseJob(this.models.jobs, job, this.broker.nodeID).catch(() => undefined)));
    await this.loop;
  },
};

export default KnowledgeLoaderService;
