#!/usr/bin/env bash
# Generates a Python client of a running platform with openapi-python-client (pinned, default configuration,
# installed from PyPI into a venv under .cache/ the first time), from its served OpenAPI document.
#
#   scripts/clients/python.sh BASE_URL OUTPUT_DIR
#
# test/integration/clients.spec.ts runs it (part of `npm test`) and fails on any error or warning it prints.
set -euo pipefail
VERSION=0.29.1
# The generator formats its output with ruff (its post hooks), which must be on PATH: the venv's own.
RUFF_VERSION=0.17.6
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
VENV="$ROOT/.cache/openapi-python-client-$VERSION"
BASE_URL="${1:?base URL, e.g. http://127.0.0.1:3000}"
OUTPUT="${2:?output directory}"

if [ ! -x "$VENV/bin/openapi-python-client" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "openapi-python-client==$VERSION" "ruff==$RUFF_VERSION"
fi

PATH="$VENV/bin:$PATH" exec "$VENV/bin/openapi-python-client" generate --url "$BASE_URL/openapi.json" --output-path "$OUTPUT" --overwrite
