#!/usr/bin/env bash
# kcat (librdkafka) produce/consume/metadata. kcat -C without -G uses plain
# partition assignment (no group.id), so these are core cases.
source "$(dirname "$0")/../lib/harness.sh"

kcat_keys_roundtrip() {
  local t; t=$(topic kcat-keys)
  create_topic "$t" 1
  for i in $(seq 1 1000); do echo "key$i:value $i"; done > "$OUT/kin.txt"
  kcat -b "$BOOTSTRAP" -P -t "$t" -p 0 -K: -z snappy < "$OUT/kin.txt"
  kcat -b "$BOOTSTRAP" -C -t "$t" -p 0 -e -o beginning -q -f '%k:%s\n' > "$OUT/kout.txt"
  cmp "$OUT/kin.txt" "$OUT/kout.txt" || fail "round trip differs ($(wc -l < "$OUT/kout.txt") lines)"
  # offsets and partition reported per message
  kcat -b "$BOOTSTRAP" -C -t "$t" -p 0 -e -o 990 -q -f '%p/%o\n' > "$OUT/offs.txt"
  [ "$(head -1 "$OUT/offs.txt")" = "0/990" ] && [ "$(tail -1 "$OUT/offs.txt")" = "0/999" ] \
    || fail "offset listing wrong: $(tr '\n' ' ' < "$OUT/offs.txt")"
}

kcat_headers_tail() {
  local t; t=$(topic kcat-hdr)
  create_topic "$t" 1
  printf 'one\ntwo\nthree\n' | kcat -b "$BOOTSTRAP" -P -t "$t" -p 0 -H h1=a -H h1=b -H h2=c
  kcat -b "$BOOTSTRAP" -C -t "$t" -p 0 -e -o -2 -q -f '%o %h %s\n' > "$OUT/out.txt"
  cat "$OUT/out.txt"
  # -o -2 = two from the end (ListOffsets latest, then fetch)
  [ "$(cat "$OUT/out.txt")" = "$(printf '1 h1=a,h1=b,h2=c two\n2 h1=a,h1=b,h2=c three')" ] || fail "unexpected output"
}

kcat_metadata() {
  local t; t=$(topic kcat-md)
  create_topic "$t" 3
  kcat -b "$BOOTSTRAP" -L > "$OUT/md.txt"; cat "$OUT/md.txt"
  grep -q "broker [0-9]* at " "$OUT/md.txt" || fail "no broker line"
  grep -q "topic \"$t\" with 3 partitions" "$OUT/md.txt" || fail "topic with 3 partitions missing"
  kcat -b "$BOOTSTRAP" -L -t "$t" -J > "$OUT/md.json"
  "$PY" - "$OUT/md.json" "$t" <<'PY'
import json, sys
md = json.load(open(sys.argv[1])); t = sys.argv[2]
tops = [x for x in md["topics"] if x["topic"] == t]
assert tops and len(tops[0]["partitions"]) == 3, tops
assert all(p["leader"] >= 0 and p["replicas"] for p in tops[0]["partitions"]), tops
assert md["brokers"], md
PY
}

kcat_query_offsets() {
  local t; t=$(topic kcat-q)
  create_topic "$t" 1
  seq 1 50 | kcat -b "$BOOTSTRAP" -P -t "$t" -p 0
  # -Q: offsets for timestamp (ListOffsets with a timestamp); -1 = end offset
  kcat -b "$BOOTSTRAP" -Q -t "$t:0:-1" | tee "$OUT/q.txt"
  grep -q "offset 50" "$OUT/q.txt" || fail "end offset is not 50"
}

case_run core kcat.produce-consume-keys kcat_keys_roundtrip
case_run core kcat.headers-tail kcat_headers_tail
case_run core kcat.metadata kcat_metadata
case_run core kcat.query-offsets kcat_query_offsets
case_summary
