import type { ServiceSchema } from "moleculer";

/** Placeholder: being built (see issues). */
const Service: ServiceSchema = { name: "tasks" };

export default Service;
