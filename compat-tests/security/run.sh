#!/usr/bin/env bash
# The security suite: TLS, SASL, ACLs and quotas with real clients (issue 13). Each file in
# cases/ is a harness script (compat-tests/lib/harness.sh) that starts the secured broker(s) it
# needs with lib.sh's `start_broker`, on ports of its own: case file number i (in name order)
# gets SECURITY_PORT_BASE + 20*i .. +19 (base default 19500), so no two case files and no other
# suite share a port. Certificates (a CA, the broker, clients, a second CA nobody trusts) are
# made once per run by lib.sh with openssl (before any case file starts). SECURITY_JOBS (2)
# case files run at a time.
#
#   compat-tests/security/run.sh                 every case file
#   compat-tests/security/run.sh --filter tls    only cases whose name matches (grep -E)
#   compat-tests/security/run.sh --files "tls"   only these case files (cases/<name>.sh)
#
# Prints one PASS/FAIL line per case and finally exactly "N passed, M failed".
set -uo pipefail
SECDIR="$(cd "$(dirname "$0")" && pwd)"
FILES=""
while [ $# -gt 0 ]; do
  case "$1" in
    --filter) export CASE_FILTER="$2"; shift 2 ;;
    --files) FILES="$2"; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
export RUN_ID="${RUN_ID:-$(date +%H%M%S)-$RANDOM}"
export OUT="$SECDIR/../out/$RUN_ID/security"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
export UNDER_RUN_SH=1
export SECURITY_PORT_BASE="${SECURITY_PORT_BASE:-19500}"
SUMMARY="$OUT/security-summary.txt"
: >"$SUMMARY"
echo "# security run $RUN_ID; logs in $OUT"
# The certificates first, so case files running side by side do not race to make them.
export SECURITY_CERTS="$OUT/certs"
(source "$SECDIR/../lib/harness.sh" >/dev/null 2>&1; source "$SECDIR/lib.sh"; certs_dir >/dev/null) \
  || { echo "could not make the test certificates" >&2; exit 1; }
T0=$(date +%s)
# Case files run SECURITY_JOBS (default 2) at a time, each on its own ports; each one's output
# is printed whole, in name order, when it is done.
jobs_max=${SECURITY_JOBS:-2}
running=0
files=()
i=0
for f in "$SECDIR"/cases/*.sh; do
  [ -e "$f" ] || continue
  name=$(basename "$f" .sh)
  i=$((i + 1))
  if [ -n "$FILES" ] && ! grep -qw "$name" <<<"$FILES"; then continue; fi
  if [ "$running" -ge "$jobs_max" ]; then wait -n || true; running=$((running - 1)); fi
  # Each case file has its own log dir: their file names may repeat.
  mkdir -p "$OUT/$name"
  (
    OUT="$OUT/$name" CASE_PORT_BASE=$((SECURITY_PORT_BASE + 20 * i)) bash "$f" \
      >"$OUT/$name.cases" 2>&1
    echo $? >"$OUT/$name.rc"
  ) &
  running=$((running + 1))
  files+=("$name")
done
wait
for name in "${files[@]}"; do
  # A case file that stops before its cases report (a broker that does not start) fails too.
  if [ "$(cat "$OUT/$name.rc" 2>/dev/null)" != 0 ] && ! grep -q '^FAIL ' "$OUT/$name.cases"; then
    echo "FAIL [security] $name: the case file exited $(cat "$OUT/$name.rc" 2>/dev/null)" \
      >>"$OUT/$name.cases"
  fi
  tee -a "$SUMMARY" <"$OUT/$name.cases"
done
P=$(grep -c '^PASS ' "$SUMMARY"); F=$(grep -c '^FAIL ' "$SUMMARY")
echo "# $(( $(date +%s) - T0 ))s"
echo "$P passed, $F failed"
[ "$F" -eq 0 ]
