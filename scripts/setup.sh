#!/usr/bin/env bash
# Prepares a fresh Debian machine for orderly and installs its npm packages.
#
#   bash scripts/setup.sh
#
# 1. Installs the Debian packages that @confluentinc/kafka-javascript needs to
#    build its bundled librdkafka against the system libraries, plus Java and
#    Maven for the local Kafka broker (tools/kafka/broker.ts), and chromium for
#    the lab page's browser tests (test/lab). apt-get runs only when something
#    is missing.
# 2. Runs `CKJS_LINKING=dynamic npm ci` in the repository root, unless
#    node_modules was already installed from the same package-lock.json with
#    the same Node.js.
# 3. Compiles the TypeScript (`npm run build`), so ./bin/orderly runs.
#
# Idempotent: a second run does nothing. Runs as root, or through sudo.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STAMP="$ROOT/node_modules/.orderly-setup-stamp"

# Libraries that librdkafka links against when CKJS_LINKING=dynamic.
LIB_PACKAGES=(pkg-config zlib1g-dev libssl-dev libzstd-dev libcurl4-openssl-dev libsasl2-dev liblz4-dev)

log() { printf 'setup: %s\n' "$*"; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }

# Prints each Debian package of the arguments that is not installed.
missing_debs() {
  local pkg
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || echo "$pkg"
  done
}

# Prints the Debian packages to install: missing libraries, and tool packages
# for commands that are not on PATH (whatever installed them).
wanted_debs() {
  missing_debs "${LIB_PACKAGES[@]}"
  { command -v cc && command -v c++ && command -v make; } >/dev/null || echo build-essential
  command -v python3 >/dev/null || echo python3
  command -v java >/dev/null || echo openjdk-17-jre-headless
  command -v mvn >/dev/null || echo maven
  # The lab tests launch this very path (playwright-core, no browser download).
  [ -x /usr/bin/chromium ] || echo chromium
}

# Runs a command as root: directly, or through sudo.
as_root() {
  if [ "$(id -u)" -eq 0 ]; then
    "$@"
  elif command -v sudo >/dev/null; then
    sudo "$@"
  else
    die "need root to run: $*  (run this script as root, or install sudo)"
  fi
}

install_debs() {
  local wanted
  mapfile -t wanted < <(wanted_debs)
  if [ "${#wanted[@]}" -eq 0 ]; then
    log "Debian packages: all present"
    return
  fi
  command -v apt-get >/dev/null || die "apt-get not found; install these packages by hand: ${wanted[*]}"
  log "installing Debian packages: ${wanted[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${wanted[@]}"
}

# Identifies what node_modules was built from: the lock file and the Node.js ABI.
install_fingerprint() {
  printf '%s node-%s\n' "$(sha256sum "$ROOT/package-lock.json" | cut -d' ' -f1)" "$(node -p process.versions.modules)"
}

install_npm() {
  command -v node >/dev/null || die "node not found; install Node.js 20 or newer"
  [ -f "$ROOT/package-lock.json" ] || die "no package-lock.json in $ROOT"
  local fingerprint
  fingerprint="$(install_fingerprint)"
  if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$fingerprint" ]; then
    log "node_modules: up to date with package-lock.json"
    return
  fi
  log "running npm ci (builds @confluentinc/kafka-javascript from source; about a minute or two)"
  (cd "$ROOT" && CKJS_LINKING=dynamic npm ci)
  printf '%s\n' "$fingerprint" > "$STAMP"
}

install_debs
install_npm
log "compiling (npm run build)"
(cd "$ROOT" && npm run -s build)
log "done"
