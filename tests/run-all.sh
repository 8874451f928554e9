#!/usr/bin/env bash
# Runs every test Strata has: unit and integration tests (cargo test), then the compat-tests
# with real Kafka clients against a freshly built release broker, then each fuzz target for a
# bounded time. Installs what it needs (Rust toolchain components, Java tools from Maven
# Central, kcat, Python and Node clients, franz-go, cargo-fuzz) on first use and caches it
# under compat-tests/.cache.
#
# The compat-tests are three suites that share no port: the single-broker one
# (compat-tests/run.sh, 127.0.0.1:19092 or STRATA_TEST_PORT), the 3-process cluster one
# (compat-tests/cluster/run.sh: chaos and Kafka's admin tools, ports 19401-19433 or
# CLUSTER_PORT_BASE, followed by the power-loss test on 19480) and the security one (compat-tests/security/run.sh: secured brokers of its
# own from port 19500). They run side by side, each printing its output when it ends
# (STRATA_SERIAL_SUITES=1 runs them one after the other); the exit status is non-zero if any
# step fails. The last line totals every step.
#
# Time on two cores: the client installer (compat-tests/setup.sh, mostly downloads) runs while
# cargo compiles the tests, and the tests themselves run after both, with the machine to
# themselves, because several are timing-sensitive. The fuzz targets are built (at nice 19)
# while the single-broker suite finishes alone, and run FUZZ_JOBS (2) at a time after it.
#
#   tests/run-all.sh            everything
#   tests/run-all.sh --unit     only cargo test
#   tests/run-all.sh --compat   only the compat-tests (all three suites)
#   tests/run-all.sh --cluster  only the cluster suite
#   tests/run-all.sh --fuzz     only the bounded fuzz runs (fuzz/run-bounded.sh: every target
#                               FUZZ_SECONDS (25) each; fails without nightly unless
#                               STRATA_FUZZ_OPTIONAL=1)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
mode=${1:-all}
T0=$(date +%s)

step() { printf '\n==> %s (%ss)\n' "$*" "$(( $(date +%s) - T0 ))"; }
want() { [ "$mode" = all ] || [ "$mode" = "$1" ]; }

# Build outputs and installed clients live outside the checkout, in STRATA_CACHE
# (~/.cache/strata), so a fresh clone (as CI makes) reuses compiled dependencies, cargo's
# incremental data and the downloaded clients instead of rebuilding them: `target`,
# `fuzz/target` and `compat-tests/.cache` become links into it when the checkout has none of
# its own. Everything is still checked by fingerprint (cargo) or pin (setup.sh), so nothing
# stale is used. The cache is emptied when it outgrows STRATA_CACHE_MAX_GB (40).
# STRATA_CACHE= (empty) keeps everything in the checkout.
cache=${STRATA_CACHE-$HOME/.cache/strata}
if [ -n "$cache" ] && mkdir -p "$cache" 2>/dev/null; then
  if [ "$(du -s --block-size=1G "$cache" 2>/dev/null | cut -f1)" -gt "${STRATA_CACHE_MAX_GB:-40}" ]; then
    echo "cache $cache is over ${STRATA_CACHE_MAX_GB:-40} GB: emptying it"
    rm -rf "${cache:?}"/*
  fi
  for link in target:target fuzz/target:fuzz-target compat-tests/.cache:compat-tests; do
    path=${link%%:*}
    if [ ! -e "$path" ] && [ ! -L "$path" ]; then
      mkdir -p "$cache/${link#*:}"
      ln -s "$cache/${link#*:}" "$path"
      echo "using the build cache: $path -> $cache/${link#*:}"
    fi
  done
fi

status=0
passed=0
failed=0
# Adds a suite's closing "N passed, M failed" line (from its log) to the totals.
tally() {
  local line
  line=$(grep -E '^([a-z]+: )?[0-9]+ passed, [0-9]+ failed' "$1" | tail -1 || true)
  line=${line#*: }
  if [ -n "$line" ]; then
    passed=$(( passed + $(echo "$line" | cut -d' ' -f1) ))
    failed=$(( failed + $(echo "$line" | cut -d' ' -f3) ))
  fi
}

setup_pid=""
setup_log=/tmp/strata-setup.log
if want --compat || [ "$mode" = --cluster ]; then
  if [ "$mode" = all ] && [ "${STRATA_SERIAL_SUITES:-0}" != 1 ]; then
    step "compat-tests: installing clients in the background while cargo compiles (log: $setup_log)"
    bash compat-tests/setup.sh >"$setup_log" 2>&1 &
    setup_pid=$!
  fi
fi

if want --unit; then
  step "cargo test: compiling"
  cargo test --all-targets --no-run 2>&1 | tail -3 || true
fi
if [ -n "$setup_pid" ]; then
  setup_status=0
  wait "$setup_pid" || setup_status=$?
  step "compat-tests: client installer output"
  cat "$setup_log"
  if [ $setup_status -ne 0 ]; then
    echo "error: compat-tests/setup.sh failed (exit $setup_status)" >&2
    exit 1
  fi
fi
if want --unit; then
  step "cargo test (unit and integration tests)"
  cargo test --all-targets --no-fail-fast 2>&1 | tee /tmp/strata-cargo-test.log || status=1
  passed=$(( passed + $(grep -oE 'test result: .* ([0-9]+) passed' /tmp/strata-cargo-test.log \
    | grep -oE '[0-9]+ passed' | awk '{s+=$1} END {print s+0}') ))
  failed=$(( failed + $(grep -oE '[0-9]+ failed;' /tmp/strata-cargo-test.log \
    | awk '{s+=$1} END {print s+0}') ))
fi

if want --compat || [ "$mode" = --cluster ]; then
  if [ -z "$setup_pid" ]; then
    step "compat-tests: installing clients (cached in compat-tests/.cache)"
    bash compat-tests/setup.sh
  fi
  step "building the release broker"
  cargo build --release --bin strata
fi

single_pid=""
single_log=""
if want --compat; then
  port=${STRATA_TEST_PORT:-19092}
  data=$(mktemp -d /tmp/strata-compat.XXXXXX)
  single_log="$data.suite"
  if (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; then
    echo "error: 127.0.0.1:$port is already in use; set STRATA_TEST_PORT to a free port" >&2
    exit 1
  fi
  # Its own admin port: the security and cluster suites run beside it with theirs off.
  admin_port=${STRATA_TEST_ADMIN_PORT:-19644}
  step "starting strata on 127.0.0.1:$port, admin on 127.0.0.1:$admin_port (data in $data)"
  ./target/release/strata --override "listeners=PLAINTEXT://127.0.0.1:$port" --override "log.dirs=$data" \
    --override "strata.admin.listeners=http://127.0.0.1:$admin_port" \
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
  single_suite() {
    local s=0
    BOOTSTRAP=127.0.0.1:$port STRATA_ADMIN=127.0.0.1:$admin_port bash compat-tests/run.sh || s=$?
    if [ $s -ne 0 ]; then
      echo "--- broker log (last 50 lines) ---"
      tail -50 "$data.log" || true
    fi
    kill $pid 2>/dev/null || true
    return $s
  }
  if [ "${STRATA_SERIAL_SUITES:-0}" = 1 ]; then
    step "compat-tests against strata (single broker)"
    single_suite 2>&1 | tee "$single_log" || status=1
  else
    step "compat-tests against strata (single broker), beside the others"
    single_suite >"$single_log" 2>&1 &
    single_pid=$!
  fi
fi

security_pid=""
if want --compat; then
  security_log=$(mktemp /tmp/strata-security-suite.XXXXXX)
  if [ "${STRATA_SERIAL_SUITES:-0}" = 1 ]; then
    step "compat-tests: security (TLS, SASL, ACLs, quotas; own ports from 19500)"
    bash compat-tests/security/run.sh 2>&1 | tee "$security_log" || status=1
    tally "$security_log"
  else
    step "compat-tests: security (TLS, SASL, ACLs, quotas; own ports from 19500), beside the others"
    bash compat-tests/security/run.sh >"$security_log" 2>&1 &
    security_pid=$!
  fi
fi

if want --compat || [ "$mode" = --cluster ]; then
  step "compat-tests: 3-process cluster (chaos, Kafka admin tools)"
  cluster_log=$(mktemp /tmp/strata-cluster-suite.XXXXXX)
  bash compat-tests/cluster/run.sh 2>&1 | tee "$cluster_log" || status=1
  tally "$cluster_log"
  # Durable acknowledgements under a power cut (a FUSE file system that drops unsynced data;
  # port 19480): after the cluster suite, beside the single-broker and security ones.
  step "compat-tests: power loss (durable acknowledgements; port 19480)"
  powerloss_log=$(mktemp /tmp/strata-powerloss.XXXXXX)
  compat-tests/.cache/venv/bin/python compat-tests/powerloss/run.py 2>&1 | tee "$powerloss_log" || status=1
  tally "$powerloss_log"
fi
if [ -n "$security_pid" ]; then
  security_status=0
  wait "$security_pid" || security_status=$?
  step "compat-tests: security suite output"
  cat "$security_log"
  [ $security_status -eq 0 ] || status=1
  tally "$security_log"
fi

# The fuzz targets' build (cargo-fuzz and an ASan release build, the run's last big compile)
# starts once the cluster and security suites are done, at the lowest CPU priority, while the
# single-broker suite finishes; the bounded runs themselves wait for it.
fuzz_build_pid=""
fuzz_build_log=""
if want --fuzz && [ -n "$single_pid" ]; then
  fuzz_build_log=$(mktemp /tmp/strata-fuzz-build.XXXXXX)
  step "fuzz targets: building beside the single-broker suite (nice 19; log: $fuzz_build_log)"
  FUZZ_BUILD_ONLY=1 nice -n 19 bash fuzz/run-bounded.sh >"$fuzz_build_log" 2>&1 &
  fuzz_build_pid=$!
fi

if [ -n "$single_pid" ]; then
  single_status=0
  wait "$single_pid" || single_status=$?
  step "compat-tests against strata (single broker): output"
  cat "$single_log"
  [ $single_status -eq 0 ] || status=1
fi
if [ -n "$single_log" ]; then
  tally "$single_log"
  kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true
  trap - EXIT
fi

if want --fuzz; then
  if [ -n "$fuzz_build_pid" ]; then
    # A failed early build is not final: run-bounded.sh below builds (and retries) again.
    wait "$fuzz_build_pid" || true
    step "fuzz targets: build output"
    tail -5 "$fuzz_build_log"
  fi
  step "fuzz targets, each for a bounded time"
  fuzz_log=$(mktemp /tmp/strata-fuzz.XXXXXX)
  bash fuzz/run-bounded.sh 2>&1 | tee "$fuzz_log" || status=1
  tally "$fuzz_log"
fi

step "done"
echo "total: $passed passed, $failed failed"
exit $status
