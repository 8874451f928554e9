#!/usr/bin/env bash
# Idempotent installer for the compat-test clients. Everything goes into
# compat-tests/.cache/ (git-ignored). Each step is skipped when already done.
#   .cache/kafka-libs/   Apache Kafka broker + tools + clients jars (one classpath dir)
#   .cache/kafka-libs-latest/  the same for KAFKA_LATEST_VERSION (the newest Kafka)
#   .cache/venv/         Python venv: confluent-kafka, kafka-python (+ codecs)
#   .cache/node_modules/ kafkajs (pinned by node/package-lock.json)
#   .cache/bin/franz-roundtrip  franz-go test program (pinned by franz-go/go.sum)
#   .cache/bin/kgo.test  franz-go's own pkg/kgo test binary (the franz-go version pinned in
#                        franz-go/go.mod; source from the Go module proxy, copied to
#                        .cache/franz-kgo/src; never committed)
#   kcat                 Debian package (system-wide, apt)
#   .cache/librdkafka-tests/   librdkafka's own test runner (tests/test-runner), built from
#                        Debian's source package of librdkafka (apt-get source; the deb-src
#                        entry is derived from the machine's own Debian sources); used by the
#                        cluster suite for librdkafka's transaction tests 0103 and 0129
#   chromium, chromedriver      Debian packages (system-wide, apt) for the web console case
#   .cache/browser/node_modules playwright-core (pinned by browser/package-lock.json), driving
#                        /usr/bin/chromium; it never downloads a browser of its own
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
CACHE="$HERE/.cache"
mkdir -p "$CACHE/bin"
source "$HERE/versions.env"
log() { printf '[setup] %s\n' "$*"; }
T0=$(date +%s)

# ---- 1. Java: Apache Kafka jars from Maven Central --------------------------
LIBS="$CACHE/kafka-libs"
POM_SUM=$(cat "$HERE/maven/pom.xml" "$HERE/versions.env" | sha256sum | cut -c1-16)
if [ "$(cat "$LIBS/.done" 2>/dev/null)" = "$POM_SUM" ]; then
  log "kafka-libs $KAFKA_VERSION: present ($(ls "$LIBS"/*.jar | wc -l) jars), skip"
else
  command -v java >/dev/null || { log "installing JDK 17 via apt"; apt-get update -qq; apt-get install -y -qq openjdk-17-jdk-headless; }
  command -v mvn  >/dev/null || { log "installing maven via apt"; apt-get update -qq; apt-get install -y -qq maven; }
  log "kafka-libs: mvn dependency:copy-dependencies kafka_2.13/kafka-tools/kafka-clients $KAFKA_VERSION -> $LIBS"
  rm -rf "$LIBS"; mkdir -p "$LIBS"
  mvn -B -q -Dstyle.color=never -f "$HERE/maven/pom.xml" -Dkafka.version="$KAFKA_VERSION" \
      dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$LIBS" 2>&1 \
    | sed 's/\x1b\[[0-9;]*m//g' | grep -v '^$' || true
  ls "$LIBS"/kafka_2.13-*.jar >/dev/null 2>&1 || { log "maven failed"; exit 1; }
  echo "$POM_SUM" > "$LIBS/.done"
  log "kafka-libs: $(ls "$LIBS"/*.jar | wc -l) jars"
fi

# ---- 1b. Java: the newest Kafka's jars, a classpath of their own --------------------
LATEST_LIBS="$CACHE/kafka-libs-latest"
LATEST_SUM=$(echo "$POM_SUM $KAFKA_LATEST_VERSION" | sha256sum | cut -c1-16)
if [ "$(cat "$LATEST_LIBS/.done" 2>/dev/null)" = "$LATEST_SUM" ]; then
  log "kafka-libs-latest $KAFKA_LATEST_VERSION: present, skip"
else
  log "kafka-libs-latest: mvn dependency:copy-dependencies $KAFKA_LATEST_VERSION -> $LATEST_LIBS"
  rm -rf "$LATEST_LIBS"; mkdir -p "$LATEST_LIBS"
  mvn -B -q -Dstyle.color=never -f "$HERE/maven/pom.xml" -Dkafka.version="$KAFKA_LATEST_VERSION" \
      dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$LATEST_LIBS" 2>&1 \
    | sed 's/\x1b\[[0-9;]*m//g' | grep -v '^$' || true
  ls "$LATEST_LIBS"/kafka-clients-"$KAFKA_LATEST_VERSION".jar >/dev/null 2>&1 || { log "maven failed"; exit 1; }
  echo "$LATEST_SUM" > "$LATEST_LIBS/.done"
  log "kafka-libs-latest: $(ls "$LATEST_LIBS"/*.jar | wc -l) jars"
fi

# ---- 2. kcat / librdkafka (apt) ----------------------------------------------
if command -v kcat >/dev/null; then
  log "kcat: present ($(kcat -V 2>&1 | head -1)), skip"
else
  log "kcat: apt-get install kcat"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kcat >/dev/null
fi

# ---- 2b. libfuse2 (the power-loss test's file system, compat-tests/powerloss) -------
if ldconfig -p | grep -q 'libfuse\.so\.2'; then
  log "libfuse2: present, skip"
else
  log "libfuse2: apt-get install libfuse2 fuse"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libfuse2 fuse >/dev/null
fi

# ---- 2c. losetup and mkfs.ext4 (the power-loss test's disk-cache cases) ----------
if command -v losetup >/dev/null && command -v mkfs.ext4 >/dev/null; then
  log "losetup, mkfs.ext4: present, skip"
else
  log "losetup, mkfs.ext4: apt-get install mount e2fsprogs"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mount e2fsprogs >/dev/null
fi

# ---- 3. Python venv -----------------------------------------------------------
VENV="$CACHE/venv"
PYREQ="$HERE/requirements.txt"
if [ -x "$VENV/bin/python" ] && cmp -s "$PYREQ" "$VENV/.requirements.txt"; then
  log "python venv: present, skip"
else
  log "python venv: creating $VENV and installing $(tr '\n' ' ' < "$PYREQ")"
  [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q -r "$PYREQ"
  cp "$PYREQ" "$VENV/.requirements.txt"
fi

# ---- 4. kafkajs (npm) ---------------------------------------------------------
# npm_ci PACKAGE PINS_DIR DEST: `npm ci` of PINS_DIR's package.json and lock file into DEST,
# skipped when DEST has PACKAGE installed from the same lock file.
npm_ci() {
  if [ -d "$3/node_modules/$1" ] && cmp -s "$2/package-lock.json" "$3/package-lock.json"; then
    log "$1: present, skip"; return
  fi
  command -v npm >/dev/null || { apt-get update -qq; apt-get install -y -qq nodejs npm; }
  log "$1: npm ci into $3"
  mkdir -p "$3"
  cp "$2/package.json" "$2/package-lock.json" "$3/"
  (cd "$3" && npm ci --no-audit --no-fund --loglevel=error)
}
NODEDIR="$CACHE/node"
npm_ci kafkajs "$HERE/node" "$NODEDIR"
# .cache/node_modules as asked; node resolves modules relative to the script, so
# kafkajs tests run with NODE_PATH pointing here.
ln -sfn "$NODEDIR/node_modules" "$CACHE/node_modules"

# ---- 5. franz-go program --------------------------------------------------------
FRANZ="$CACHE/bin/franz-roundtrip"
SRC_SUM=$(cat "$HERE"/franz-go/*.go "$HERE"/franz-go/go.mod "$HERE"/franz-go/go.sum | sha256sum | cut -c1-16)
if [ -x "$FRANZ" ] && [ "$(cat "$FRANZ.src" 2>/dev/null)" = "$SRC_SUM" ]; then
  log "franz-go: present, skip"
else
  command -v go >/dev/null || { log "go toolchain missing: install Go >= 1.22"; exit 1; }
  log "franz-go: go build -> $FRANZ"
  (cd "$HERE/franz-go" && go build -mod=readonly -o "$FRANZ" .)
  echo "$SRC_SUM" > "$FRANZ.src"
fi

# ---- 6. franz-go's own kgo test suite (tests/franz_kgo.sh) ------------------------
# The module source comes from the Go module proxy (go mod download, checksummed against
# sum.golang.org), is copied to a writable dir, and its pkg/kgo tests are compiled once.
# The version is the one the roundtrip program pins (franz-go/go.mod).
FRANZ_KGO_VERSION=$(awk '$1 == "github.com/twmb/franz-go" { print $2 }' "$HERE/franz-go/go.mod")
[ -n "$FRANZ_KGO_VERSION" ] || { log "no github.com/twmb/franz-go pin in franz-go/go.mod"; exit 1; }
KGO_TEST="$CACHE/bin/kgo.test"
KGO_STAMP="franz-go@$FRANZ_KGO_VERSION $(go version 2>/dev/null)"
if [ -x "$KGO_TEST" ] && [ "$(cat "$KGO_TEST.src" 2>/dev/null)" = "$KGO_STAMP" ]; then
  log "franz-go kgo tests $FRANZ_KGO_VERSION: present, skip"
else
  command -v go >/dev/null || { log "go toolchain missing: install Go >= 1.26 (franz-go's go.mod asks for it)"; exit 1; }
  log "franz-go kgo tests: go mod download github.com/twmb/franz-go@$FRANZ_KGO_VERSION"
  MODDIR=$(cd "$CACHE" && go mod download -json "github.com/twmb/franz-go@$FRANZ_KGO_VERSION" \
    | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -n "$MODDIR" ] && [ -d "$MODDIR/pkg/kgo" ] || { log "go mod download failed"; exit 1; }
  SRC="$CACHE/franz-kgo/src"
  rm -rf "$SRC"; mkdir -p "$(dirname "$SRC")"
  cp -r "$MODDIR" "$SRC"; chmod -R u+w "$SRC"
  log "franz-go kgo tests: go test -c ./pkg/kgo -> $KGO_TEST"
  (cd "$SRC" && go test -mod=readonly -c -o "$KGO_TEST" ./pkg/kgo)
  echo "$KGO_STAMP" > "$KGO_TEST.src"
fi

# ---- 7. librdkafka's own test runner (cluster suite: tests 0103, 0129) ------------------
RDK_TESTS="$CACHE/librdkafka-tests"
if [ -x "$RDK_TESTS/tests/test-runner" ]; then
  log "librdkafka test runner: present, skip"
else
  SRC_LIST=/etc/apt/sources.list.d/strata-deb-src.sources
  if [ ! -e "$SRC_LIST" ] && [ -e /etc/apt/sources.list.d/debian.sources ]; then
    log "librdkafka test runner: enabling Debian source packages ($SRC_LIST)"
    sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources >"$SRC_LIST"
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dpkg-dev libssl-dev libsasl2-dev \
    zlib1g-dev libzstd-dev liblz4-dev >/dev/null
  WORK=$(mktemp -d /tmp/strata-rdk-src.XXXXXX)
  log "librdkafka test runner: apt-get source librdkafka, build (a few minutes)"
  (cd "$WORK" && apt-get source -qq librdkafka >/dev/null 2>&1)
  SRCDIR=$(find "$WORK" -maxdepth 1 -type d -name 'librdkafka-*' | head -1)
  [ -n "$SRCDIR" ] || { log "apt-get source librdkafka failed"; exit 1; }
  (cd "$SRCDIR" && ./configure --disable-gssapi --disable-curl >/dev/null \
    && make -j"$(nproc)" libs >/dev/null 2>&1 && make -j"$(nproc)" -C tests build >/dev/null 2>&1) \
    || { log "librdkafka test runner build failed"; exit 1; }
  rm -rf "$RDK_TESTS"; mv "$SRCDIR" "$RDK_TESTS"; rm -rf "$WORK"
  log "librdkafka test runner: $RDK_TESTS/tests/test-runner"
fi

# ---- 8. headless Chromium + playwright-core (the web console case) -------------------
if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then
  log "chromium: present ($(/usr/bin/chromium --version 2>/dev/null | head -1)), skip"
else
  log "chromium: apt-get install chromium chromium-driver"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
fi
# The system Chromium is the browser: playwright-core never downloads builds of its own.
PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm_ci playwright-core "$HERE/browser" "$CACHE/browser"

log "done in $(( $(date +%s) - T0 ))s"
