/*
 * The teams service's public face (docs/adr/0052-service-boundaries.md): the only file of services/teams/ another
 * service may import. The teams and domains collections have one writer, this service.
 */

/** The teams collection: its model, for reads (tasks check and render their team). */
export { teamModel } from "./model";
