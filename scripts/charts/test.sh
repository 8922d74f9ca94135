#!/usr/bin/env bash
# Proves the Helm charts (npm run test:charts; test/charts/charts.spec.ts runs it as part of `npm test`):
#   1. vendors every chart's dependencies in a scratch copy of charts/ (scripts/charts/vendor.sh);
#   2. `helm lint --strict` of every chart, and of each chart with every values file of the matrix;
#   3. `helm template` of every case in test/charts/values/ (header `# chart: <name>`), at the oldest and the
#      newest supported Kubernetes, and of a version below kubeVersion, which must be refused;
#   4. `helm template` of every case in test/charts/fails/, which must fail with the message in its
#      `# fails: <message>` header (helm lint does not evaluate `fail`: this is where the guards are proven);
#   5. scripts/charts/validate.py: every rendered resource against the Kubernetes schemas (strict) at both
#      versions, the KEDA and Prometheus Operator objects against their CRDs.
# Tools come from scripts/charts/tools.sh (cached under .cache/). Every helm command names its Kubernetes version:
# a helm built with `go install` defaults to 1.20 (release builds stamp their own). Rendered manifests (YAML, and JSON per case)
# are left in OUT_DIR (default .cache/charts-test/out). Prints one line per check; exits 1 on any failure.
#
#   scripts/charts/test.sh [OUT_DIR]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
OUT="${1:-$ROOT/.cache/charts-test/out}"
OLDEST=1.25.0
NEWEST=1.37.0
RELEASE=ap
NAMESPACE=agent-platform

eval "$(bash "$ROOT/scripts/charts/tools.sh")"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
rm -rf "$OUT" && mkdir -p "$OUT"
failed=0
pass() { echo "ok   $*"; }
fail() { echo "FAIL $*"; failed=1; }
header() { sed -n "s/^# $1: //p" "$2" | head -1; }

HELM="$HELM" bash "$ROOT/scripts/charts/vendor.sh" "$WORK"
pass "dependencies vendored ($(ls -d "$WORK"/charts/*/charts | wc -l) charts)"

for dir in "$WORK"/charts/*/; do
  chart="$(basename "$dir")"
  if log="$("$HELM" lint --strict --kube-version "$NEWEST" "$dir" 2>&1)"; then pass "lint --strict $chart"; else fail "lint --strict $chart"; echo "$log"; fi
done

rendered=()
for case in "$ROOT"/test/charts/values/*.yaml; do
  name="$(basename "$case" .yaml)"
  chart="$(header chart "$case")"
  [ -d "$WORK/charts/$chart" ] || { fail "$name: no chart '$chart'"; continue; }
  if ! log="$("$HELM" lint --strict --kube-version "$NEWEST" "$WORK/charts/$chart" -f "$case" 2>&1)"; then fail "lint --strict $chart -f $name"; echo "$log"; continue; fi
  ok=1
  for version in "$OLDEST" "$NEWEST"; do
    if ! "$HELM" template "$RELEASE" "$WORK/charts/$chart" -f "$case" --namespace "$NAMESPACE" --kube-version "$version" \
      >"$OUT/$name-$version.yaml" 2>"$OUT/$name.err"; then
      fail "template $chart -f $name (Kubernetes $version)"; cat "$OUT/$name.err"; ok=0
    fi
  done
  [ "$ok" = 1 ] || continue
  # The rendering must not depend on the Kubernetes version; validate.py checks the one copy at both versions.
  if cmp -s "$OUT/$name-$OLDEST.yaml" "$OUT/$name-$NEWEST.yaml"; then
    mv "$OUT/$name-$OLDEST.yaml" "$OUT/$name.yaml" && rm -f "$OUT/$name-$NEWEST.yaml" "$OUT/$name.err"
    pass "lint + template $chart -f $name: $(grep -c '^kind:' "$OUT/$name.yaml") resources"
    rendered+=("$OUT/$name.yaml")
  else
    fail "template $chart -f $name renders differently at Kubernetes $OLDEST and $NEWEST"
  fi
done

below="1.24.0"
if log="$("$HELM" template "$RELEASE" "$WORK/charts/agent-platform" --kube-version "$below" 2>&1)"; then
  fail "template at Kubernetes $below was accepted (kubeVersion)"
elif grep -q "kubeVersion" <<<"$log"; then
  pass "template at Kubernetes $below refused: kubeVersion"
else
  fail "template at Kubernetes $below failed for another reason"; echo "$log"
fi

for case in "$ROOT"/test/charts/fails/*.yaml; do
  name="$(basename "$case" .yaml)"
  chart="$(header chart "$case")"
  message="$(header fails "$case")"
  [ -n "$message" ] || { fail "$name: no '# fails:' header"; continue; }
  if log="$("$HELM" template "$RELEASE" "$WORK/charts/$chart" -f "$case" --namespace "$NAMESPACE" --kube-version "$NEWEST" 2>&1)"; then
    fail "template $chart -f $name was accepted (expected: $message)"
  elif grep -qF -- "$message" <<<"$log"; then
    pass "template $chart -f $name refused: $message"
  else
    fail "template $chart -f $name failed without '$message'"; echo "$log"
  fi
done

if [ "${#rendered[@]}" -gt 0 ]; then
  "$PYTHON" "$ROOT/scripts/charts/validate.py" --kube "$OLDEST" --kube "$NEWEST" \
    --crds "$KEDA_CRDS" --crds "$PROMETHEUS_CRDS" --out "$OUT" "${rendered[@]}" || failed=1
fi
[ "$failed" = 0 ] && echo "charts: every check passed" || echo "charts: FAILED"
exit "$failed"
