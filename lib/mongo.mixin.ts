import type { Connection } from "mongoose";
import type { ServiceSchema } from "moleculer";
import { configOf } from "./config";
import { connectDatabase } from "./db";

/**
 * Connects the service to MongoDB when it starts and builds its models on that connection, so a service
 * never touches the database before it is reachable (Kubernetes restarts it until it is).
 */
export function MongoMixin<M>(defineModels: (db: Connection) => M): Partial<ServiceSchema> {
  return {
    async started() {
      this.db = await connectDatabase(configOf(this).mongoUrl);
      this.models = defineModels(this.db);
      // Indexes (unique identifiers per account) must exist before the first write relies on them.
      await Promise.all(
        Object.values(this.models as Record<string, { init(): Promise<unknown> }>).map((m) => m.init()),
      );
    },
  };
}
