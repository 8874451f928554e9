#!/usr/bin/env bash
# Builds librdkafka's own load tool, `rdkafka_performance`, from the librdkafka sources that the
# `rdkafka-sys` crate ships (crates.io is reachable here; GitHub is not), into
# compat-tests/.cache/bin/rdkafka_performance. Idempotent: does nothing if the binary exists.
# Takes ~30 s of two cores (the library without SSL/SASL/curl/zstd, then the one example).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CACHE="$ROOT/compat-tests/.cache"
OUT="$CACHE/bin/rdkafka_performance"
PROBE="$CACHE/bin/latency_probe"
BUILD="$CACHE/librdkafka-build"
# benches/latency_probe.c (tail_latency.py's fixed-rate generator) links the same library.
build_probe() {
  [ -x "$PROBE" ] && [ "$PROBE" -nt "$ROOT/benches/latency_probe.c" ] && return 0
  # shellcheck disable=SC2046
  gcc -O2 -Wall -o "$PROBE" "$ROOT/benches/latency_probe.c" -I"$BUILD/src" "$BUILD/src/librdkafka.a" \
    $(grep '^LIBS+\?=' "$BUILD/Makefile.config" | sed 's/^LIBS+\?=//' | tr '\n' ' ') -lpthread -lm >&2
}
[ -x "$OUT" ] && { build_probe; echo "$OUT"; exit 0; }
# The rdkafka crate version pinned by compat-tests/rdkafka decides the librdkafka version.
cargo fetch --quiet --manifest-path "$ROOT/compat-tests/rdkafka/Cargo.toml" >&2
SRC=$(cargo metadata --format-version 1 --manifest-path "$ROOT/compat-tests/rdkafka/Cargo.toml" \
  | python3 -c 'import json,sys,os; d=json.load(sys.stdin); print([os.path.dirname(p["manifest_path"]) for p in d["packages"] if p["name"]=="rdkafka-sys"][0])')
rm -rf "$BUILD" && cp -r "$SRC/librdkafka" "$BUILD"
cd "$BUILD"
./configure --disable-ssl --disable-gssapi --disable-curl --disable-zstd --disable-lz4-ext \
  --no-download >"$BUILD/strata-configure.log" 2>&1 || { tail -20 "$BUILD/strata-configure.log" >&2; exit 1; }
make -j"$(nproc)" -C src >"$BUILD/strata-make.log" 2>&1 || { tail -20 "$BUILD/strata-make.log" >&2; exit 1; }
make -C examples rdkafka_performance >>"$BUILD/strata-make.log" 2>&1 || { tail -20 "$BUILD/strata-make.log" >&2; exit 1; }
mkdir -p "$CACHE/bin"
cp examples/rdkafka_performance "$OUT"
build_probe
echo "$OUT"
