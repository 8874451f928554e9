# Sourced by the security case files after compat-tests/lib/harness.sh: certificates, and a
# Strata broker started with a given set of config overrides and stopped when the file ends.
#
#   certs_dir                      -> prints the directory of this run's PEM files:
#        ca.pem ca.key             the CA every party trusts
#        broker.pem broker.key     the broker (SAN 127.0.0.1 and localhost), signed by the CA
#        alice.pem alice.key       a client, subject CN=alice,OU=eng,O=strata; signed by the CA
#        rogue-ca.pem rogue.pem rogue.key   a client signed by a CA nobody trusts
#        broker.keystore.pem alice.keystore.pem   key then certificate, for PEM keystores
#      (made once per run in $SECURITY_CERTS, shared read-only by case files running side by
#      side; a case that must change a certificate copies it first)
#   kcat_round_trip BOOTSTRAP TOPIC KCAT-ARG... -> 200 lines produced to partition 0 of TOPIC
#        and consumed back with kcat and those arguments; fails when they differ
#   start_broker NAME KEY=VALUE... -> starts target/release/strata with those overrides (data
#        dir and node id are filled in), waits for its first listener port, prints nothing;
#        the broker's log is $OUT/broker-NAME.log; every broker stops when the case file
#        ends. Call it at the top level of the case file, not inside a case function (those
#        run in subshells, which neither share SEC_PIDS nor run this file's EXIT trap).
SECLIB_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
STRATA_BIN="${STRATA_BIN:-$SECLIB_DIR/../../target/release/strata}"
SEC_PIDS=""
trap 'for p in $SEC_PIDS; do kill "$p" 2>/dev/null; done; wait 2>/dev/null' EXIT

certs_dir() {
  local d="${SECURITY_CERTS:-$OUT/certs}"
  if [ ! -s "$d/alice.keystore.pem" ]; then
    mkdir -p "$d"
    (
      cd "$d" || exit 1
      openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=strata-test-ca" \
        -keyout ca.key -out ca.pem 2>/dev/null
      openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=rogue-ca" \
        -keyout rogue-ca.key -out rogue-ca.pem 2>/dev/null
      issue() { # name subject ca-prefix [san]
        openssl req -newkey rsa:2048 -nodes -subj "$2" -keyout "$1.key" -out "$1.csr" 2>/dev/null
        # X.509 v3 with the usual leaf extensions: rustls (webpki) refuses v1 certificates.
        {
          echo "basicConstraints=CA:FALSE"
          echo "keyUsage=digitalSignature,keyEncipherment"
          echo "extendedKeyUsage=serverAuth,clientAuth"
          if [ -n "${4:-}" ]; then echo "subjectAltName=$4"; fi
        } >"$1.ext"
        openssl x509 -req -in "$1.csr" -CA "$3.pem" -CAkey "$3.key" -CAcreateserial -days 2 \
          -extfile "$1.ext" -out "$1.pem" 2>/dev/null
      }
      issue broker "/CN=broker" ca "DNS:localhost,IP:127.0.0.1"
      issue alice "/O=strata/OU=eng/CN=alice" ca
      issue rogue "/CN=rogue" rogue-ca
      cat broker.key broker.pem >broker.keystore.pem
      cat alice.key alice.pem >alice.keystore.pem
    ) || return 1
  fi
  echo "$d"
}

start_broker() {
  local name="$1"; shift
  local data="$OUT/data-$name" port="" arg
  rm -rf "$data"; mkdir -p "$data"
  # No admin listener: the suites run side by side and must not meet on its port.
  local args=(--override "log.dirs=$data" --override "strata.admin.listeners=")
  for arg in "$@"; do
    args+=(--override "$arg")
    if [ -z "$port" ] && [[ "$arg" == listeners=* ]]; then
      port=$(sed -E 's/^listeners=[^:]+:\/\/[^:]*:([0-9]+).*/\1/' <<<"$arg")
    fi
  done
  "$STRATA_BIN" "${args[@]}" >"$OUT/broker-$name.log" 2>&1 &
  local pid=$!
  SEC_PIDS="$SEC_PIDS $pid"
  for _ in $(seq 1 100); do
    [ -n "$port" ] && (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "broker $name did not start:" >&2
  tail -20 "$OUT/broker-$name.log" >&2
  return 1
}

kcat_round_trip() {
  local b="$1" t="$2"; shift 2
  for i in $(seq 1 200); do echo "line $i"; done >"$OUT/kcat-in.txt"
  kcat -b "$b" "$@" -P -t "$t" -p 0 <"$OUT/kcat-in.txt" || true
  # Auto-created on first produce may need a retry while the topic appears.
  if ! kcat -b "$b" "$@" -C -t "$t" -p 0 -e -o beginning -q >"$OUT/kcat-out.txt" 2>/dev/null \
     || ! cmp -s "$OUT/kcat-in.txt" "$OUT/kcat-out.txt"; then
    sleep 1
    kcat -b "$b" "$@" -P -t "$t" -p 0 <"$OUT/kcat-in.txt"
    kcat -b "$b" "$@" -C -t "$t" -p 0 -e -o beginning -q | tail -200 >"$OUT/kcat-out.txt"
  fi
  cmp "$OUT/kcat-in.txt" "$OUT/kcat-out.txt" || fail "kcat round trip differs"
}
