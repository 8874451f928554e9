#!/usr/bin/env bash
# RSS per idle connection of one Strata binary: starts it on a temp dir, opens N connections
# that each send one ApiVersions (benches/compare.py idle_connections), prints the result.
#   benches/idle_conns.sh [BIN=target/release/strata] [PORT=29392] [N=2000]
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
BIN=${1:-$HERE/../target/release/strata}; PORT=${2:-29392}; N=${3:-2000}
D=$(mktemp -d)
"$BIN" --override listeners=PLAINTEXT://127.0.0.1:$PORT --override log.dirs="$D" --override strata.admin.listeners= \
  --override max.connections=100000 >"$D.log" 2>&1 &
P=$!
trap 'kill $P 2>/dev/null; wait $P 2>/dev/null; rm -rf "$D" "$D.log"' EXIT
sleep 0.5
"$HERE/../compat-tests/.cache/venv/bin/python" -c "
import sys; sys.path.insert(0, '$HERE')
import compare
class B: pass
b = B(); b.pid = $P; b.port = $PORT
print(compare.idle_connections(b, $N))
"
