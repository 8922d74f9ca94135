/**
 * Service boundaries, checked on every `npm test` (test/unit/boundaries.spec.ts) and by `npm run lint:boundaries`.
 * Decision and reasons: docs/adr/0052-service-boundaries.md.
 *
 * - A service's folder is its own: another service, lib/ or a root file imports services/<x>/ only through its
 *   public face, services/<x>/index.ts (types, model registration, the owner's functions) or calls its actions.
 * - The composition root, services/index.ts, imports each service's schema (services/<x>/<x>.service.ts) and
 *   nothing else of it.
 * - lib/ is shared by every service and imports none.
 * Type-only imports count too (tsPreCompilationDeps). test/ and bench/ are not checked: they exercise internals.
 */
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-other-service-internals",
      comment:
        "A service imports another service only through its public face, services/<x>/index.ts (docs/adr/0052-service-boundaries.md).",
      severity: "error",
      from: { path: "^services/([^/]+)/" },
      to: { path: "^services/[^/]+/.", pathNot: ["^services/$1/", "^services/[^/]+/index\\.ts$"] },
    },
    {
      name: "no-service-internals-from-outside",
      comment: "Code outside services/ reaches a service only through services/<x>/index.ts (docs/adr/0052-service-boundaries.md).",
      severity: "error",
      from: { pathNot: "^services/" },
      to: { path: "^services/[^/]+/.", pathNot: "^services/[^/]+/index\\.ts$" },
    },
    {
      name: "registry-imports-service-schemas-only",
      comment: "The composition root (services/index.ts) imports each service's schema, services/<x>/<x>.service.ts, and nothing else of it.",
      severity: "error",
      from: { path: "^services/index\\.ts$" },
      to: { path: "^services/[^/]+/.", pathNot: ["^services/([^/]+)/\\1\\.service\\.ts$", "^services/[^/]+/index\\.ts$"] },
    },
    {
      name: "lib-imports-no-service",
      comment: "lib/ is what every service shares; it never imports services/ (docs/architecture.md).",
      severity: "error",
      from: { path: "^lib/" },
      to: { path: "^services/" },
    },
  ],
  options: {
    includeOnly: "^(services|lib)/|^[^/]+\\.ts$",
    exclude: { path: "(^|/)(node_modules|dist|dist-bench|test|bench)/" },
    doNotFollow: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { exportsFields: ["exports"], conditionNames: ["import", "require", "node", "default"] },
  },
};
