#!/usr/bin/env bash
# Runs one of librdkafka's own tests (built by setup.sh from Debian's librdkafka source
# package) against the cluster at $BOOTSTRAP:   rdkafka_tests.sh 0129
# librdkafka's suite reads the brokers from a test.conf and gates features on the broker
# version it is told; Strata implements the protocol of Kafka 3.7+, so it is told 3.7.0.
# Tests that need ZooKeeper or Kafka's own scripts (KAFKA_PATH) are not run here.
set -euo pipefail
HERE="$(cd "$(dirname "$0")/.." && pwd)"
RDK="$HERE/.cache/librdkafka-tests"
[ -x "$RDK/tests/test-runner" ] || { echo "librdkafka test runner missing: run compat-tests/setup.sh" >&2; exit 1; }
work=$(mktemp -d /tmp/strata-rdk-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
printf 'bootstrap.servers=%s\n' "$BOOTSTRAP" >"$work/test.conf"
cd "$RDK/tests"
LD_LIBRARY_PATH="$RDK/src:$RDK/src-cpp" RDKAFKA_TEST_CONF="$work/test.conf" \
  TEST_KAFKA_VERSION=3.7.0 TESTS="$1" ./test-runner -E -S 2>&1 \
  | sed 's/\x1b\[[0-9;]*m//g'
