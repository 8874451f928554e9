#!/usr/bin/env bash
# Runs every test Strata has: unit and integration tests (cargo test), then the compat-tests
# with real Kafka clients against a freshly built release broker. Installs what it needs
# (Rust toolchain components, Java tools from Maven Central, kcat, Python and Node clients,
# franz-go) on first use and caches it under compat-tests/.cache.
#
# The compat-tests are two suites: the single-broker one (compat-tests/run.sh) and the
# 3-process cluster one (compat-tests/cluster/run.sh: chaos and Kafka's admin tools, ports
# 19401-19413 or CLUSTER_PORT_BASE); the exit status is non-zero if either fails.
#
#   tests/run-all.sh            everything
#   tests/run-all.sh --unit     only cargo test
#   tests/run-all.sh --compat   only the compat-tests (both suites)
#   tests/run-all.sh --cluster  only the cluster suite
#   tests/run-all.sh --fuzz     only the bounded fuzz run (fuzz/run-bounded.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
mode=${1:-all}

step() { printf '\n==> %s\n' "$*"; }

if [ "$mode" = all ] || [ "$mode" = --unit ]; then
  step "cargo test (unit and integration tests)"
  cargo test --all-targets --no-fail-fast 2>&1 | tee /tmp/strata-cargo-test.log
fi

if [ "$mode" = all ] || [ "$mode" = --compat ] || [ "$mode" = --cluster ]; then
  step "compat-tests: installing clients (cached in compat-tests/.cache)"
  bash compat-tests/setup.sh
  step "building the release broker"
  cargo build --release --bin strata
fi

status=0
if [ "$mode" = all ] || [ "$mode" = --compat ]; then
  port=${STRATA_TEST_PORT:-19092}
  data=$(mktemp -d /tmp/strata-compat.XXXXXX)
  if (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; then
    echo "error: 127.0.0.1:$port is already in use; set STRATA_TEST_PORT to a free port" >&2
    exit 1
  fi
  step "starting strata on 127.0.0.1:$port (data in $data)"
  ./target/release/strata --override "listeners=PLAINTEXT://127.0.0.1:$port" --override "log.dirs=$data" \
    >"$data.log" 2>&1 &
  pid=$!
  trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true' EXIT
  for _ in $(seq 1 100); do
    (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break
    sleep 0.1
  done
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "error: strata exited at start-up:" >&2
    cat "$data.log" >&2
    exit 1
  fi
  step "compat-tests against strata"
  BOOTSTRAP=127.0.0.1:$port bash compat-tests/run.sh || status=$?
  if [ $status -ne 0 ]; then
    echo "--- broker log (last 50 lines) ---"
    tail -50 "$data.log" || true
  fi
  # The cluster suite needs the cores: stop the single broker first.
  kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true
  trap - EXIT
fi

if [ "$mode" = all ] || [ "$mode" = --compat ] || [ "$mode" = --cluster ]; then
  step "compat-tests: 3-process cluster (chaos, Kafka admin tools)"
  cluster_status=0
  bash compat-tests/cluster/run.sh || cluster_status=$?
  [ $cluster_status -eq 0 ] || status=$cluster_status
fi
# Fuzzing: every target of fuzz/Cargo.toml for FUZZ_SECONDS (25) each; fails without nightly
# (STRATA_FUZZ_OPTIONAL=1 skips loudly instead). Also alone: tests/run-all.sh --fuzz.
if [ "$mode" = all ] || [ "$mode" = --fuzz ]; then
  step "fuzz targets, ${FUZZ_SECONDS:-25}s each (fuzz/run-bounded.sh)"
  fuzz_status=0
  bash fuzz/run-bounded.sh || fuzz_status=$?
  [ $fuzz_status -eq 0 ] || status=$fuzz_status
fi
exit $status
