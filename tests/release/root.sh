#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A Debian root for another release, built with mmdebstrap from Debian's
# packages and cached by the hash of what goes into it:
#   bash tests/release/root.sh trixie        # prints the root's path
#
# The root holds a minimal Debian (variant apt) plus everything
# tests/install-deps.sh installs there, so a cached root starts the tests at
# once; a change to install-deps.sh or to this script makes a new one. The
# cache is $OB_ROOT_CACHE (default /var/cache/oncebox-ci); roots of older
# hashes are deleted. Runs as root (mmdebstrap, chroot); about 3 minutes the
# first time, a second when cached.
set -euo pipefail
suite=${1:?usage: tests/release/root.sh SUITE (trixie, bookworm)}
here=$(cd "$(dirname "$0")/../.." && pwd)
cache=${OB_ROOT_CACHE:-/var/cache/oncebox-ci}
mirror=${OB_DEBIAN_MIRROR:-http://deb.debian.org/debian}

key=$(cat "$here/tests/release/root.sh" "$here/tests/install-deps.sh" \
        "$here/tests/interop/package-lock.json" | sha256sum | cut -c1-16)
root="$cache/$suite-$key"
if [ -f "$root/.oncebox-root-ready" ]; then
  echo "$root"
  exit 0
fi

command -v mmdebstrap >/dev/null || {
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    mmdebstrap >&2
}
mkdir -p "$cache"
rm -rf "$cache/$suite"-* "$root.tmp"
echo "release/root.sh: building the $suite root (mmdebstrap)" >&2
# ca-certificates and the release's keyring: apt inside the root works later.
mmdebstrap --variant=apt --include=ca-certificates "$suite" "$root.tmp" \
  "$mirror" >&2

# The host's own certificate authorities (a proxy's, a company's): npm
# inside the root reaches the registry the way the host does.
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  mkdir -p "$root.tmp/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$root.tmp/usr/local/share/ca-certificates/"
  chroot "$root.tmp" update-ca-certificates >&2
fi

# Everything the tests need, installed the way a user would: the README's
# install script, run inside the root, with the tree's npm lock.
mkdir -p "$root.tmp/src/tests/interop"
cp "$here/tests/install-deps.sh" "$root.tmp/src/tests/"
cp "$here/tests/interop/package.json" "$here/tests/interop/package-lock.json" \
  "$root.tmp/src/tests/interop/"
OB_ROOT_WRITE=1 bash "$here/tests/release/in-root.sh" "$root.tmp" -- \
  bash -c 'cd /src && bash tests/install-deps.sh' >&2
# node_modules stays in the cache, keyed by the lock.
mkdir -p "$root.tmp/opt/oncebox-ci"
mv "$root.tmp/src/tests/interop/node_modules" "$root.tmp/opt/oncebox-ci/"
rm -rf "$root.tmp/src"
mkdir -p "$root.tmp/src"
touch "$root.tmp/.oncebox-root-ready"
mv "$root.tmp" "$root"
echo "$root"
