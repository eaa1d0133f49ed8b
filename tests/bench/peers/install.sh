#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Install the peers of tests/bench/bench_peers.c (docs/performance.md,
# "Peers"), on
# Debian 12 as root. Safe to run twice; tests/bench/run-all.sh runs it.
# Not part of CI: the benchmarks are run by hand.
#   - Symfony Messenger with its Doctrine transport, from Debian:
#     php-cli, php-sqlite3, php-symfony-messenger,
#     php-symfony-doctrine-messenger and php-doctrine-dbal (DBAL 3: the
#     transport needs it and Debian does not pull it in; without it the peer
#     died on a missing Doctrine/DBAL/autoload.php);
#   - plainjob and better-sqlite3 (pinned in package.json / the lock file),
#     from npm. better-sqlite3 12 needs Node >= 20; its prebuilt binary is
#     downloaded from outside the registry, which these machines cannot
#     reach, so it is built from source (make, g++, python3 and Node's
#     headers, found under the prefix of the running node).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

pkgs=(php-cli php-sqlite3 php-symfony-messenger php-symfony-doctrine-messenger
      php-doctrine-dbal
      build-essential python3 strace)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "peers/install.sh: missing ${missing[*]} (run as root)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "peers/install.sh: node and npm are needed (tests/install-deps.sh)" >&2
  exit 1
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
  echo "peers/install.sh: node $(node --version) is too old for better-sqlite3 12 (>= 20)" >&2
  exit 1
fi
if [ ! -f "$here/node_modules/better-sqlite3/build/Release/better_sqlite3.node" ] ||
   [ ! -d "$here/node_modules/plainjob" ]; then
  # Node's headers: <prefix>/include/node/node_version.h next to the node
  # binary (Debian's and nodesource's layout), else node-gyp would download
  # them.
  prefix=$(cd "$(dirname "$(readlink -f "$(command -v node)")")/.." && pwd)
  if [ -f "$prefix/include/node/node_version.h" ]; then
    export npm_config_nodedir="$prefix"
  fi
  (cd "$here" && npm_config_build_from_source=true \
     npm ci --no-audit --no-fund --loglevel=error)
fi
echo "peers: node $(node --version), plainjob $(node -p "require('$here/node_modules/plainjob/package.json').version"), better-sqlite3 $(node -p "require('$here/node_modules/better-sqlite3/package.json').version"), $(php -r 'echo "php ", PHP_VERSION;'), symfony/messenger $(dpkg-query -W -f='${Version}' php-symfony-messenger)"
