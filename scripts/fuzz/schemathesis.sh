#!/usr/bin/env bash
# Fuzzes a running platform from its served OpenAPI document with schemathesis (pinned, installed from PyPI into
# a venv under .cache/): its checks and the examples, fuzzing and stateful (links) phases, time-bounded. The
# coverage phase is off: on POST /agents' request schema it stops with a SystemError from CPython 3.11's ast
# module inside hypothesis ("AST constructor recursion depth mismatch"), a tool fault reported as a run error.
# Exits non-zero on any 5xx, any response outside its declared schema and any undeclared status.
#
#   scripts/fuzz/schemathesis.sh BASE_URL ACCESS_TOKEN [MAX_SECONDS]
#
# Four checks are off, for reasons of the interface rather than of the document: business rules
# beyond the schema (references to other records, cron expressions, time zones, identifiers that are not all
# digits) answer 422 to schema-valid requests (positive_data_acceptance); fastest-validator takes null for an
# optional field as "not given" (negative_data_rejection); and a static path under a parameter route (PUT
# /knowledge/search reaches PUT /knowledge/{id}) answers the route's 422, not 405 (unsupported_method); and the
# interface queues the deletion of knowledge sources and documents (200 DeletionResponse, "poll until 404"), so
# they answer 200 until a loader or search replica has removed them (use_after_free).
#
# test/integration/schemathesis.spec.ts runs it (part of `npm test`) against a platform it starts on loopback
# with a seeded account. DELETE /users/{user_id} is left out: small ids reach the seeded user itself, whose
# self-delete would end the token of the whole run (test/integration/security.spec.ts and the route fuzz test
# cover it). SCHEMATHESIS_WORKERS (default 2) and SCHEMATHESIS_SEED (fixed default) tune a run; SCHEMATHESIS_SEEDS
# names a TOML fragment appended to the config (the spec's seeded records, bound to path parameters).
set -euo pipefail
VERSION=4.32.5
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
VENV="$ROOT/.cache/schemathesis-$VERSION"
BASE_URL="${1:?base URL, e.g. http://127.0.0.1:3000}"
TOKEN="${2:?access token}"
MAX_SECONDS="${3:-180}"

if [ ! -x "$VENV/bin/schemathesis" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$VERSION"
fi

# schemathesis keeps its state (.schemathesis/) in the working directory: keep it under .cache/ too.
cd "$ROOT/.cache"
CONFIG="$ROOT/scripts/fuzz/schemathesis.toml"
if [ -n "${SCHEMATHESIS_SEEDS:-}" ]; then
  cat "$CONFIG" "$SCHEMATHESIS_SEEDS" > "$ROOT/.cache/schemathesis-run.toml"
  CONFIG="$ROOT/.cache/schemathesis-run.toml"
fi
# A fresh Idempotency-Key per request (scripts/fuzz/schemathesis_hooks.py says why).
# The interface's one documented 500 is allowed where it is documented (scripts/fuzz/schemathesis.toml).
SCHEMATHESIS_HOOKS="$ROOT/scripts/fuzz/schemathesis_hooks.py" exec "$VENV/bin/schemathesis" --config-file "$CONFIG" run "$BASE_URL/openapi.json" \
  --url "$BASE_URL" \
  --header "Authorization: Bearer $TOKEN" \
  --checks all \
  --exclude-checks positive_data_acceptance,negative_data_rejection,unsupported_method,use_after_free \
  --phases examples,fuzzing,stateful \
  --max-time "$MAX_SECONDS" \
  --workers "${SCHEMATHESIS_WORKERS:-2}" \
  --seed "${SCHEMATHESIS_SEED:-20261124}" \
  --request-timeout 20 \
  --suppress-health-check all \
  --exclude-operation-id users.remove \
  --no-color
