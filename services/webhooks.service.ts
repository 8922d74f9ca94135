import type { ServiceSchema } from "moleculer";

/** Placeholder: being built (see issues). */
const Service: ServiceSchema = { name: "webhooks" };

export default Service;
