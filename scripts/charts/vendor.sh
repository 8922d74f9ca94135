#!/usr/bin/env bash
# Copies charts/ to DIR (a scratch copy: concurrent runs never share vendored dependencies) and vendors every
# chart's file:// dependencies there with charts/deps.sh. HELM names the helm binary (scripts/charts/tools.sh).
#
#   HELM=... scripts/charts/vendor.sh DIR
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
DIR="${1:?target directory}"
mkdir -p "$DIR"
cp -r "$ROOT/charts" "$DIR/charts"
rm -rf "$DIR"/charts/*/charts "$DIR"/charts/*/Chart.lock
HELM="${HELM:?helm binary}" bash "$DIR/charts/deps.sh" >/dev/null
