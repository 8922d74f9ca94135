#!/usr/bin/env bash
# The README as a new user runs it: `npm start` (its prestart builds the app and the bundled database), then the
# Quickstart block, pasted as written, against it. Only the addresses change: a free loopback port for the
# platform, and a page served on loopback for https://example.com/ (CI has no internet). Exits non-zero when any
# step fails; test/integration/readme.spec.ts checks the block's output in detail against a test cluster.
set -euo pipefail
cd "$(dirname "$0")/../.."
README_BASE=http://localhost:3000
README_PAGE=https://example.com/

work=$(mktemp -d)
server_pid= site_pid=
cleanup() {
  [ -n "$server_pid" ] && kill -- -"$server_pid" 2>/dev/null || true
  [ -n "$site_pid" ] && kill "$site_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

mkdir "$work/site"
cat > "$work/site/index.html" <<'HTML'
<!doctype html><html><head><title>Example Domain</title></head><body><h1>Example Domain</h1>
<p>This domain is for use in illustrative examples in documents.</p></body></html>
HTML
site_port=$(free_port)
python3 -m http.server --bind 127.0.0.1 --directory "$work/site" "$site_port" >/dev/null 2>&1 &
site_pid=$!

port=$(free_port)
# Its own process group, so the cleanup stops npm, node and the bundled database together.
PORT=$port MCP_PORT=0 DATA_DIR="$work/data" ALLOW_LOOPBACK_TARGETS=true setsid npm start >"$work/server.log" 2>&1 &
server_pid=$!
deadline=$((SECONDS + ${README_SMOKE_START_SECONDS:-600}))
until curl -fsS "http://127.0.0.1:$port/health" >/dev/null 2>&1; do
  if [ $SECONDS -ge $deadline ] || ! kill -0 "$server_pid" 2>/dev/null; then
    echo "readme smoke: npm start did not answer /health" >&2
    tail -50 "$work/server.log" >&2
    exit 1
  fi
  sleep 2
done

# The first ```sh block of the Quickstart section, as written.
awk '/^## Quickstart$/ { in_section = 1; next } in_section && /^## / { exit }
     in_section && /^```sh$/ { in_block = 1; next } in_block && /^```$/ { exit } in_block { print }' README.md >"$work/quickstart.sh"
grep -q "$README_BASE" "$work/quickstart.sh"
sed -i "s#$README_BASE#http://127.0.0.1:$port#g; s#$README_PAGE#http://127.0.0.1:$site_port/#g" "$work/quickstart.sh"
if ! output=$(timeout 300 bash -euo pipefail "$work/quickstart.sh" 2>&1); then
  echo "$output" >&2
  echo "readme smoke: the quickstart failed against npm start" >&2
  exit 1
fi
grep -q "loading_status: loaded" <<<"$output" || { echo "$output" >&2; echo "readme smoke: the source did not load" >&2; exit 1; }
grep -q '"title": "Example Domain"' <<<"$output" || { echo "$output" >&2; echo "readme smoke: the search did not find the page" >&2; exit 1; }
echo "readme smoke: npm start answered, and the quickstart's $(grep -c '^curl\|^[A-Z_]*=\$(curl' "$work/quickstart.sh") requests ran against it"
