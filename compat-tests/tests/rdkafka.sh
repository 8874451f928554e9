#!/usr/bin/env bash
# The rdkafka Rust crate (librdkafka built from source by rdkafka-sys): built only here, with
# its own target dir cached under .cache, so the strata crate's builds never compile it.
source "$(dirname "$0")/../lib/harness.sh"
rdkafka_rt() {
  CARGO_TARGET_DIR="$CACHE/rdkafka-target" cargo build --release --quiet \
    --manifest-path "$HERE/rdkafka/Cargo.toml"
  "$CACHE/rdkafka-target/release/strata-compat-rdkafka" "$BOOTSTRAP" "$(topic rdkafka)"
}
case_run core rdkafka.crate.roundtrip rdkafka_rt
case_summary
