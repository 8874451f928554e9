#!/usr/bin/env bash
# Runs every fuzz target listed in fuzz/Cargo.toml for a bounded time each (CI: a crash fails
# the run). Needs a nightly toolchain and cargo-fuzz (installed on first use into
# compat-tests/.cache/cargo). Each target starts from its committed seed corpus
# (fuzz/corpus/<target>/, read-only here); what libFuzzer finds goes to a scratch dir, and a
# crash leaves its input in fuzz/artifacts/<target>/ (add it to the corpus with its fix).
#
#   fuzz/run-bounded.sh                 every target, FUZZ_SECONDS (default 25) each, FUZZ_JOBS
#                                       (default: the core count) at a time
#   fuzz/run-bounded.sh raft_rpc        only the targets named
#   FUZZ_BUILD_ONLY=1 fuzz/run-bounded.sh   install cargo-fuzz and build the targets, run none
#                                       (tests/run-all.sh builds while the last suite runs)
#
# Without nightly or cargo-fuzz the script says so and FAILS (exit 2): a CI run that fuzzed
# nothing must not look green. Set STRATA_FUZZ_OPTIONAL=1 to turn that into a loud skip
# (exit 0) on machines that cannot fuzz.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SECONDS_EACH=${FUZZ_SECONDS:-25}
CACHE=$ROOT/compat-tests/.cache/cargo
export PATH="$CACHE/bin:$PATH"

unavailable() {
  printf '\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n' >&2
  printf '!!! FUZZING NOT RUN: %s\n' "$1" >&2
  printf '!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n\n' >&2
  if [ "${STRATA_FUZZ_OPTIONAL:-0}" = 1 ]; then
    echo "STRATA_FUZZ_OPTIONAL=1: skipping" >&2
    exit 0
  fi
  exit 2
}

if ! cargo +nightly --version >/dev/null 2>&1; then
  unavailable "no nightly toolchain (rustup toolchain install nightly)"
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "installing cargo-fuzz into $CACHE"
  cargo install cargo-fuzz --locked --root "$CACHE" >&2 ||
    unavailable "cargo-fuzz could not be installed"
fi

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  # The [[bin]] names of fuzz/Cargo.toml, which is what `cargo fuzz list` reads.
  mapfile -t targets < <(cd fuzz && cargo fuzz list)
fi
[ ${#targets[@]} -gt 0 ] || unavailable "no fuzz targets found in fuzz/Cargo.toml"

echo "building ${#targets[@]} fuzz targets (nightly, release, address sanitizer)"
# The ASan release build is the run's largest compile; a build that fails once (the last CI run
# on record failed here beside the security suite, a build that passes alone) is tried again
# with one job, which needs less memory; a second failure fails the run.
if ! (cd fuzz && cargo +nightly fuzz build); then
  echo "fuzz build failed; trying again with one job" >&2
  (cd fuzz && CARGO_BUILD_JOBS=1 cargo +nightly fuzz build) ||
    { echo "fuzz targets do not build" >&2; exit 1; }
fi

if [ "${FUZZ_BUILD_ONLY:-0}" = 1 ]; then
  echo "fuzz targets built"
  exit 0
fi

scratch=$(mktemp -d /tmp/strata-fuzz.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
# One target's bounded run; its summary goes to $scratch/$t.out and its verdict to .status.
fuzz_one() {
  local t=$1 log="$scratch/$1.log"
  mkdir -p "fuzz/corpus/$t" "$scratch/$t"
  {
    echo "==> fuzz $t for ${SECONDS_EACH}s (seeds: $(ls "fuzz/corpus/$t" | wc -l))"
    # New inputs go to the scratch dir (first); the committed corpus is only read.
    # libFuzzer prints a line per new input: keep it in a log, show its end.
    if (cd fuzz && cargo +nightly fuzz run "$t" "$scratch/$t" "corpus/$t" -- \
        -max_total_time="$SECONDS_EACH" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1) \
        >"$log" 2>&1; then
      grep -E '^(Done|stat::number_of_executed_units|stat::peak_rss_mb)' "$log" || tail -3 "$log"
      echo ok >"$scratch/$t.status"
    else
      tail -60 "$log"
      echo failed >"$scratch/$t.status"
    fi
  } >"$scratch/$t.out" 2>&1
}
# libFuzzer uses one core per run: FUZZ_JOBS targets at a time (default: the core count), each
# still for its full SECONDS_EACH.
jobs_max=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}
running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$jobs_max" ]; then wait -n || true; running=$((running - 1)); fi
  fuzz_one "$t" &
  running=$((running + 1))
done
wait
failed=()
for t in "${targets[@]}"; do
  cat "$scratch/$t.out"
  [ "$(cat "$scratch/$t.status" 2>/dev/null)" = ok ] || failed+=("$t")
done
echo "fuzz: $(( ${#targets[@]} - ${#failed[@]} )) passed, ${#failed[@]} failed"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzzing FAILED for: ${failed[*]} (inputs in fuzz/artifacts/<target>/)" >&2
  exit 1
fi
echo "fuzzing: ${#targets[@]} targets ran ${SECONDS_EACH}s each without a crash"
