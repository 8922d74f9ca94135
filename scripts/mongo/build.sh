#!/usr/bin/env bash
# Builds the local MongoDB-compatible server (embedded FerretDB over SQLite,
# see main.go) into <repo>/.cache/mongo/ferretdb. Idempotent: skips the build
# when the binary is newer than its sources. Needs only Go and the Go module proxy.
set -euo pipefail

SRC_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT_DIR="$(cd "$SRC_DIR/../.." && pwd)"
OUT_DIR="$ROOT_DIR/.cache/mongo"
OUT="$OUT_DIR/ferretdb"
WORK_DIR="$OUT_DIR/build"
FERRETDB_MODULE="github.com/FerretDB/FerretDB"
SQLITE_MODULE="modernc.org/sqlite"
SOURCES=("$SRC_DIR/main.go" "$SRC_DIR/go.mod" "$SRC_DIR/go.sum" "$SRC_DIR/build.sh" "$SRC_DIR/patches/resource.go"
  "$SRC_DIR/patches/pushdown.patch" "$SRC_DIR/patches/speed.patch" "$SRC_DIR/patches/per-query.patch"
  "$SRC_DIR/patches/proxyless.patch" "$SRC_DIR/patches/modernc-sqlite.patch")

up_to_date() {
  [ -x "$OUT" ] || return 1
  local f
  for f in "${SOURCES[@]}"; do
    [ "$OUT" -nt "$f" ] || return 1
  done
}

if up_to_date; then
  echo "local mongo: up to date ($OUT)"
  exit 0
fi

# Serialize concurrent runs (they share $WORK_DIR) where flock exists; recheck after waiting.
mkdir -p "$OUT_DIR"
if command -v flock >/dev/null 2>&1; then
  exec 9>"$OUT_DIR/.build.lock"
  flock 9
  if up_to_date; then
    echo "local mongo: up to date ($OUT)"
    exit 0
  fi
fi

GO="$(command -v go || true)"
if [ -z "$GO" ] && [ -x /usr/local/go/bin/go ]; then
  GO=/usr/local/go/bin/go
fi
if [ -z "$GO" ]; then
  echo "local mongo: Go toolchain not found (install Go >= 1.24)" >&2
  exit 1
fi

start=$(date +%s)
# -mod=mod: resolve modules from go.mod/go.sum alone (no vendor dir);
# -buildvcs=false: the repo's git state must not affect (or break) the build.
export GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0
cd "$SRC_DIR"

# Copy the pinned FerretDB module out of the read-only module cache and patch it:
# FerretDB v1's $group hands one shared iterator to all accumulators, so every
# accumulator after the first one sees no documents ({n: {$sum: 1}, t: {$sum: "$x"}}
# returns t: 0). Give each accumulator its own iterator, and close it (accumulators
# don't, and FerretDB panics on iterators that get garbage-collected unclosed).
"$GO" mod download "$FERRETDB_MODULE"
version="$("$GO" list -m -f '{{.Version}}' "$FERRETDB_MODULE")"
module_dir="$("$GO" list -m -f '{{.Dir}}' "$FERRETDB_MODULE")"
if [ -z "$module_dir" ] || [ ! -d "$module_dir" ]; then
  echo "local mongo: could not download $FERRETDB_MODULE" >&2
  exit 1
fi
rm -rf "$WORK_DIR"
mkdir -p "$WORK_DIR"
cp -R "$module_dir" "$WORK_DIR/FerretDB"
chmod -R u+w "$WORK_DIR/FerretDB"
group_go="$WORK_DIR/FerretDB/internal/handler/common/aggregations/stages/group.go"
sed -i.orig 's/out, err := accumulation\.accumulator\.Accumulate(groupIter)$/accIter := iterator.Values(iterator.ForSlice(groupedDocument.documents)); out, err := accumulation.accumulator.Accumulate(accIter); accIter.Close()/' "$group_go"
if cmp -s "$group_go" "$group_go.orig"; then
  echo "local mongo: FerretDB \$group patch did not apply ($group_go)" >&2
  exit 1
fi

# Lookups, updates and deletes by _id compare the expression _ferretdb_sjson->'$._id', but the unique _id index is
# built on _ferretdb_sjson->"_id"; SQLite uses an index only for the identical expression, so every one of
# them scanned the table. Spell the column the way the index does.
metadata_go="$WORK_DIR/FerretDB/internal/backends/sqlite/metadata/metadata.go"
cp "$metadata_go" "$metadata_go.orig"
perl -pi -e 's/IDColumn = DefaultColumn \+ "->\x27\$\._id\x27"/IDColumn = DefaultColumn + `->"_id"`/' "$metadata_go"
if cmp -s "$metadata_go" "$metadata_go.orig"; then
  echo "local mongo: FerretDB _id column patch did not apply ($metadata_go)" >&2
  exit 1
fi

# The SQLite backend narrows a query in SQL only when the filter is exactly {_id: <string or ObjectId>}; every
# other query reads and decodes the whole collection, so a request's cost grew with every account's data.
# patches/pushdown.patch (against the tree as patched above):
# - secondary indexes are built on the field's SQL value (metadata.FieldExpr, numbers ordered numerically);
#   indexes built the old way are rebuilt when the server opens the database;
# - a filter's top-level equalities, $in and ranges on strings, numbers, booleans, dates and ObjectIDs become a
#   WHERE clause on those expressions, exact per MongoDB's rules (type checks on the sjson schema for fields that
#   ever held another type, element matching for fields that ever held an array); the handler re-applies the filter;
# - when the whole filter is in SQL, find's sort, skip and limit follow it (ORDER BY on the indexed expressions),
#   and countDocuments ($match + $group {$sum: 1}) runs count(*) without decoding documents;
# - a long $in list of _ids next to a condition that leads an index holding _id is compared through that index
#   (probing the _id index made SQLite parse every record found to check the other condition).
# - a short list of _ids (at most 50) is looked up through the _id index, the other conditions kept off theirs:
#   without statistics SQLite preferred any equality's index and read, for a claim of 50 items, the whole backlog.
#
# patches/speed.patch (against the tree as patched above) removes per-document costs that dominated reads:
# - sjson.Unmarshal decodes in one pass with the document's schema parsed once per shape (cached by its text),
#   about 10x faster than encoding/json's several passes; anything unusual goes to the old decoder, so results
#   are identical (a differential test compares both on random and corrupted documents);
# - a find with an inclusion projection of top-level fields, and a pipeline of $match and $group, decode only the
#   fields they read (the filter's, the sort's, the projection's, those the $group references; distinct: its key
#   and the filter's), skipping the rest;
# - find no longer evaluates the filter again on documents the backend selected with the whole filter in SQL (for
#   $in, a pass over the whole list per document); without a projection it no longer copies every document twice,
#   and an inclusion projection of top-level fields copies each value once instead of the document once per field;
# - replies are no longer decoded again to look for NaNs (stored documents cannot hold one; requests still are);
# - $group looks a document's group up among the groups whose IDs could compare equal (a bucket key) instead of
#   comparing with every group: linear instead of quadratic in the number of groups.
#
# patches/per-query.patch (against the tree as patched above) removes fixed costs every query paid:
# - queries read a table's field types (pushdown.go) as an immutable snapshot instead of copying them under one
#   global lock; writers replace the snapshot, and a table's first scan after a start (about 1 s per 30k records)
#   runs under that table's own lock, so queries on other tables are no longer held up by it;
# - a command's parameters are read with each struct's `ferretdb` tags parsed once, not on every command (~10% of
#   a find by _id), and debug log records (SQL statements, find's parameters, cursors) are formatted only when debug
#   logging is on (~7%);
# - a document's column is decoded from the driver's string in place instead of a []byte copy database/sql made
#   of every document (the decoder only reads its input): ~9% of a 200-row page;
# - a document whose schema has the same bytes as the last one read takes that schema after one comparison, instead
#   of finding the schema's end bracket by bracket and hashing it to look it up (~7% of a 200-row page).
#
# patches/proxyless.patch (against the tree as patched above) lets clients talk to FerretDB directly (they went
# through a wire proxy in main.go, a loopback hop per message, ~8-12% of a find by _id) and does in FerretDB what
# that proxy did:
# - write commands (insert, update, delete, findAndModify, create/drop of collections and indexes, ...) run one at a
#   time in the process: FerretDB v1 runs findAndModify and update as a read, then a write, without a lock, so
#   concurrent `$inc`s on one document lost updates (id counters repeated); reads stay concurrent;
# - a write's InternalError for SQLite's "UNIQUE constraint failed" (an update setting a uniquely indexed field)
#   answers MongoDB's DuplicateKey error (code 11000, "E11000 duplicate key error collection: <db>.<coll>");
# - a request with moreToCome gets no reply, and endSessions sent that way (drivers do on close) is skipped;
# - on shutdown, connections close at once instead of after 3 seconds.

# apply_patch <dir> <patch file>: fails (set -e) when the patch does not apply.
apply_patch() {
  if command -v patch >/dev/null 2>&1; then
    patch -s -p1 -d "$1" < "$2"
  else
    (cd "$1" && git apply -p1 "$2")
  fi
}
for p in pushdown speed per-query proxyless; do
  apply_patch "$WORK_DIR/FerretDB" "$SRC_DIR/patches/$p.patch"
done

# FerretDB's resource tracker panics from a finalizer when any iterator is garbage-collected unclosed, which
# takes the whole server down on a leak in a code path we do not control; our build makes tracking a no-op.
cp "$SRC_DIR/patches/resource.go" "$WORK_DIR/FerretDB/internal/util/resource/resource.go"

# The SQLite driver (modernc.org/sqlite, the version in go.mod), copied and patched the same way;
# patches/modernc-sqlite.patch:
# - connections open in SQLite's multi-thread mode (SQLITE_OPEN_NOMUTEX) instead of serialized (FULLMUTEX):
#   database/sql never uses a connection from two goroutines at once, and every SQLite call paid for locking
#   a Go mutex found through a global map (~7% of a 200-row page's CPU);
# - a row's TEXT columns no longer look up the column's declared type (sqlite3_column_decltype) for every row
#   (once per statement), and a TEXT value is copied once instead of twice;
# - a query of one statement reuses the connection's prepared statement of the same text (reset when its rows are
#   closed; up to 32 per connection) instead of parsing and planning the SQL again (~10% of a find by _id).
#   SQLite re-prepares a statement by itself after a schema change; stmt_cache_test.go checks both;
# - the mutexes SQLite still takes (page cache, memory) are found without the lock of the driver's mutex pool,
#   which every connection contended for on every such call (~2% of a 200-row page).
"$GO" mod download "$SQLITE_MODULE"
sqlite_dir="$("$GO" list -m -f '{{.Dir}}' "$SQLITE_MODULE")"
if [ -z "$sqlite_dir" ] || [ ! -d "$sqlite_dir" ]; then
  echo "local mongo: could not download $SQLITE_MODULE" >&2
  exit 1
fi
cp -R "$sqlite_dir" "$WORK_DIR/sqlite"
chmod -R u+w "$WORK_DIR/sqlite"
rm -rf "$WORK_DIR/sqlite/testdata" # 87 MB the build does not read
apply_patch "$WORK_DIR/sqlite" "$SRC_DIR/patches/modernc-sqlite.patch"

# Build against the patched copies through a scratch go.mod, leaving ours untouched.
cp go.mod go.sum "$WORK_DIR/"
"$GO" mod edit -modfile="$WORK_DIR/go.mod" -replace="$FERRETDB_MODULE=$WORK_DIR/FerretDB" \
  -replace="$SQLITE_MODULE=$WORK_DIR/sqlite"
TMP="$OUT.tmp.$$"
trap 'rm -f "$TMP"' EXIT
# ferretdb_no_postgresql: only the SQLite backend is used, skip pgx.
"$GO" build -modfile="$WORK_DIR/go.mod" -trimpath -tags ferretdb_no_postgresql -ldflags "-s -w" -o "$TMP" .
mv -f "$TMP" "$OUT"
echo "local mongo: built $OUT ($FERRETDB_MODULE $version, patched) in $(( $(date +%s) - start ))s"
