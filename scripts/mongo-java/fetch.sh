#!/usr/bin/env bash
# Fetches mongo-java-server (pom.xml: the server and its in-memory backend) from Maven Central into
# <repo>/.cache/mongo-java/lib and compiles SecondOpinion.java into .cache/mongo-java/classes. Needs Java 17+
# and Maven. Idempotent: skips when the compiled runner is newer than its sources.
set -euo pipefail

SRC_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT_DIR="$(cd "$SRC_DIR/../.." && pwd)"
OUT_DIR="$ROOT_DIR/.cache/mongo-java"
RUNNER="$OUT_DIR/classes/SecondOpinion.class"

up_to_date() {
  [ -f "$RUNNER" ] || return 1
  local f
  for f in "$SRC_DIR/SecondOpinion.java" "$SRC_DIR/pom.xml" "$SRC_DIR/fetch.sh"; do
    [ "$RUNNER" -nt "$f" ] || return 1
  done
}

# Test runs in several checkouts may share .cache: the whole script runs under one lock (where flock exists).
mkdir -p "$OUT_DIR"
if [ -z "${MONGO_JAVA_FETCH_LOCKED:-}" ] && command -v flock >/dev/null 2>&1; then
  exec env MONGO_JAVA_FETCH_LOCKED=1 flock "$OUT_DIR/.fetch.lock" bash "$0" "$@"
fi

if up_to_date; then
  echo "mongo-java-server: up to date ($OUT_DIR)"
  exit 0
fi

for tool in java javac mvn; do
  command -v "$tool" >/dev/null 2>&1 || { echo "mongo-java-server: $tool is needed (Java 17+ and Maven)" >&2; exit 1; }
done

echo "mongo-java-server: fetching from Maven Central"
rm -rf "$OUT_DIR/lib" "$OUT_DIR/classes"
mvn -q -B -Dstyle.color=never -f "$SRC_DIR/pom.xml" dependency:copy-dependencies -DoutputDirectory="$OUT_DIR/lib" -DincludeScope=runtime
javac -d "$OUT_DIR/classes" -cp "$OUT_DIR/lib/*" "$SRC_DIR/SecondOpinion.java"
echo "mongo-java-server: ready ($OUT_DIR)"
