#!/usr/bin/env bash
# Vendors the file:// dependencies of every chart, innermost first: each service chart gets
# charts/common-<v>.tgz, then the umbrella packages the service charts (with their common copy inside).
# Run again after editing any chart, before `helm lint|template|install` of the umbrella.
# The generated charts/*/charts/ directories and Chart.lock files are build output (gitignored).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
HELM="${HELM:-helm}"
for chart in */; do
  chart="${chart%/}"
  case "$chart" in common|agent-platform) continue ;; esac
  [ -f "$chart/Chart.yaml" ] || continue
  "$HELM" dependency update --skip-refresh "$chart" >/dev/null
  echo "deps: $chart"
done
"$HELM" dependency update --skip-refresh agent-platform >/dev/null
echo "deps: agent-platform"
