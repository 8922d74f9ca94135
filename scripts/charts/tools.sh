#!/usr/bin/env bash
# Obtains the chart checks' tools into <repo>/.cache/ (idempotent, registries only) and prints their locations as
# shell assignments (HELM=..., PYTHON=..., KEDA_CRDS=..., PROMETHEUS_CRDS=...):
#   helm       built from the Go module proxy (helm.sh/helm/v3), a few CPU minutes the first time;
#   kubernetes-validate and jsonschema from PyPI into a venv;
#   the KEDA CRDs from the github.com/kedacore/keda/v2 module (config/crd/bases), the Prometheus Operator's
#   (ServiceMonitor) from the github.com/prometheus-operator/prometheus-operator module (example/prometheus-operator-crd).
set -euo pipefail
HELM_VERSION=v3.22.0
VALIDATE_VERSION=1.37.0
JSONSCHEMA_VERSION=4.25.1
KEDA_VERSION=v2.21.0
PROMETHEUS_OPERATOR_VERSION=v0.80.1
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
CACHE="$ROOT/.cache"
BIN="$CACHE/bin"
HELM="$BIN/helm-$HELM_VERSION"
VENV="$CACHE/kubernetes-validate-$VALIDATE_VERSION"
mkdir -p "$BIN"

# Serialize concurrent first runs (jest workers, CI) where flock exists; each step rechecks after waiting.
if command -v flock >/dev/null 2>&1; then
  exec 9>"$CACHE/charts-tools.lock"
  flock 9
fi

if [ ! -x "$HELM" ]; then
  tmp="$(mktemp -d "$BIN/helm-build.XXXXXX")"
  GOBIN="$tmp" CGO_ENABLED=0 nice -n 10 go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" >&2
  mv "$tmp/helm" "$HELM"
  rmdir "$tmp"
fi

if [ ! -x "$VENV/bin/kubernetes-validate" ] || ! "$VENV/bin/python" -c "import jsonschema, yaml" 2>/dev/null; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check \
    "kubernetes-validate==$VALIDATE_VERSION" "jsonschema==$JSONSCHEMA_VERSION" pyyaml >&2
fi

module_dir() {
  go mod download -json "$1" | "$VENV/bin/python" -c 'import json,sys; print(json.load(sys.stdin)["Dir"])'
}

echo "HELM=$HELM"
echo "PYTHON=$VENV/bin/python"
echo "KEDA_CRDS=$(module_dir "github.com/kedacore/keda/v2@$KEDA_VERSION")/config/crd/bases"
echo "PROMETHEUS_CRDS=$(module_dir "github.com/prometheus-operator/prometheus-operator@$PROMETHEUS_OPERATOR_VERSION")/example/prometheus-operator-crd"
