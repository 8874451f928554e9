#!/usr/bin/env bash
# kafkajs 2.2.4 (pure JS, non-flexible protocol versions only).
source "$(dirname "$0")/../lib/harness.sh"
kjs() { node "$HERE/tests/kafkajs_clients.js" "$@"; }
kjs_none() { kjs roundtrip none; }; case_run core kafkajs.roundtrip.none kjs_none
kjs_gzip() { kjs roundtrip gzip; }; case_run core kafkajs.roundtrip.gzip kjs_gzip
kjs_group() { kjs group; };         case_run groups kafkajs.groups.consumer-run kjs_group
case_summary
