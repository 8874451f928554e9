#!/usr/bin/env bash
# franz-go's own integration tests (pkg/kgo of the franz-go release pinned in franz-go/go.mod,
# compiled by setup.sh into .cache/bin/kgo.test) against the broker at $BOOTSTRAP, tag `kgo`.
# One case per top-level test named in franz-kgo/allowlist.txt; a case passes only when go
# reports PASS for that test and for every allow-listed subtest of it (a SKIP is a failure:
# an allow-listed test must really run). What does not pass is in franz-kgo/FINDINGS.md;
# a `!Test/sub` line keeps subtests of an allow-listed test from running at all (go -test.skip).
#
# Env: KGO_TEST_RECORDS (records per ETL test, default 10000; franz-go's own default is
# 500000), KGO_LOG_LEVEL (info), KGO_ALLOWLIST (another list file), KGO_TEST_RF (1: Strata is
# a single node), KGO_CASE_PREFIX (case names, default franz-kgo; the security suite runs the
# same list over TLS as franz-kgo-tls). All allow-listed tests take about 2 minutes here.
source "$(dirname "$0")/../lib/harness.sh"
KGO_TEST="$CACHE/bin/kgo.test"
ALLOWLIST="${KGO_ALLOWLIST:-$HERE/franz-kgo/allowlist.txt}"
export KGO_SEEDS="$BOOTSTRAP" KGO_TEST_RF="${KGO_TEST_RF:-1}"
export KGO_TEST_RECORDS="${KGO_TEST_RECORDS:-10000}" KGO_LOG_LEVEL="${KGO_LOG_LEVEL:-info}"

# kgo_case TEST: runs one top-level test; checks it and its allow-listed subtests passed.
kgo_case() {
  local test="$1" out rc=0
  [ -x "$KGO_TEST" ] || fail "$KGO_TEST missing: run ./setup.sh"
  out="$OUT/kgo-$test.out"
  # `!Test/sub/...` in the allow-list: subtests go must not run (known failures, FINDINGS.md),
  # passed on as -test.skip with the test name anchored.
  local skip
  skip=$(grep -E "^!${test}/" <<<"$NAMES" | head -1 | sed -e "s|^!${test}/|^${test}\$/|" || true)
  # The Go timeout fires before the harness watchdog, so a hang prints goroutine stacks.
  (cd "$HERE/.cache/franz-kgo/src/pkg/kgo" 2>/dev/null || cd "$OUT"
   "$KGO_TEST" -test.run "^${test}\$" ${skip:+-test.skip "$skip"} -test.v -test.count=1 \
     -test.timeout "$(( ${CASE_TIMEOUT:-180} - 10 ))s") >"$out" 2>&1 || rc=$?
  # Only go's own result lines; the client logs stay in $out.
  grep -E '^\s*--- (PASS|FAIL|SKIP)|^(PASS|FAIL|ok|panic)' "$out" || true
  local want
  for want in $(grep -E "^${test}(/|\$)" <<<"$NAMES"); do
    grep -qE "^\s*--- PASS: ${want} \(" "$out" \
      || fail "$want did not pass ($(grep -E "^\s*--- [A-Z]+: ${want} \(" "$out" | head -1 | xargs); go exit $rc; log $out)"
  done
  [ "$rc" -eq 0 ] || fail "go test exit $rc (log $out)"
}

NAMES=$(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$ALLOWLIST" | grep -v '^$')
for t in $(grep -v / <<<"$NAMES"); do
  eval "kgo_$t() { kgo_case $t; }"
  case_run kgo "${KGO_CASE_PREFIX:-franz-kgo}.$t" "kgo_$t"
done
case_summary
