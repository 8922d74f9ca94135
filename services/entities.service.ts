import type { ServiceSchema } from "moleculer";

/** Placeholder: being built. Answers the agents service's collected-data questions with "none". */
const EntitiesService: ServiceSchema = {
  name: "entities",
  actions: {
    countForAgent: { visibility: "public", params: { agentId: "number" }, handler: () => 0 },
    deleteForAgent: { visibility: "public", params: { agentId: "number" }, handler: () => 0 },
  },
};

export default EntitiesService;
