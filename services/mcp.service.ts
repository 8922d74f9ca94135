import type { ServiceSchema } from "moleculer";

/** Placeholder: being built (see issues). */
const Service: ServiceSchema = { name: "mcp" };

export default Service;
