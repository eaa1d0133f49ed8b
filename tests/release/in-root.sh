#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs a command inside a Debian root made by tests/release/root.sh, with
# this tree at /src (bind mount, read-write: builds go to /src/build-*):
#   bash tests/release/in-root.sh ROOT -- COMMAND [ARGS...]
#
# A chroot with /proc, /sys, /dev, /dev/pts and /dev/shm of the host, the
# host's resolv.conf (apt and npm reach Debian's and npm's registries), and
# /tmp of its own, over an overlay of the root that is dropped at the end
# (below). Everything is unmounted when the command ends, also on failure.
# As root.
set -euo pipefail
root=${1:?usage: tests/release/in-root.sh ROOT -- COMMAND...}
shift
[ "${1:-}" = "--" ] && shift
here=$(cd "$(dirname "$0")/../.." && pwd)

mounted=()
scratch=""
made_nm=0
cleanup() {
  local i
  for (( i=${#mounted[@]}-1; i>=0; i-- )); do
    umount -l "${mounted[$i]}" 2>/dev/null || true
  done
  if [ -n "$scratch" ]; then rm -rf "$scratch"; fi
  if [ "$made_nm" = 1 ]; then rmdir "$here/tests/interop/node_modules" 2>/dev/null || true; fi
}
trap cleanup EXIT
bind() {  # bind SOURCE TARGET-IN-ROOT
  mkdir -p "$root$2"
  mount --bind "$1" "$root$2"
  mounted+=("$root$2")
}
# The command sees the root through an overlay whose changes are dropped
# at the end, so the cached root stays as root.sh made it whatever a run
# installs or leaves behind (test_deb.sh installs and purges packages).
# OB_ROOT_WRITE=1 writes to the root itself (root.sh, while making it).
# Either way the root is a mount point of its own: tests that unshare
# their mounts make / private first (mount --make-rprivate /).
if [ "${OB_ROOT_WRITE:-0}" = 1 ]; then
  mount --bind "$root" "$root"
  mounted+=("$root")
else
  scratch=$(mktemp -d "${TMPDIR:-/var/tmp}/ob-root.XXXXXX")
  mkdir -p "$scratch/upper" "$scratch/work" "$scratch/root"
  mount -t overlay overlay \
    -o "lowerdir=$root,upperdir=$scratch/upper,workdir=$scratch/work" \
    "$scratch/root"
  root=$scratch/root
  mounted+=("$root")
fi
bind /proc /proc
bind /sys /sys
bind /dev /dev
bind /dev/pts /dev/pts
mkdir -p "$root/dev/shm"
[ -d /dev/shm ] && { mount -t tmpfs -o mode=1777 tmpfs "$root/dev/shm"; mounted+=("$root/dev/shm"); }
mkdir -p "$root/tmp"
mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"
mounted+=("$root/tmp")
# This tree at /src, unless the root has a /src of its own (root.sh puts
# the install script there while it makes the root).
mkdir -p "$root/src"
if [ -z "$(ls -A "$root/src")" ]; then bind "$here" /src; fi
# The shared test data (SigV4 vectors) beside the tree, as on the host.
if [ -d "$here/../shared" ]; then
  bind "$(cd "$here/../shared" && pwd)" /shared
fi
cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
# node_modules from the cache, where the tree has none of its own.
if [ -d "$root/opt/oncebox-ci/node_modules" ] && [ -d "$root/src/tests/interop" ] \
   && [ ! -e "$here/tests/interop/node_modules" ]; then
  mkdir "$here/tests/interop/node_modules"
  made_nm=1  # an empty mount point in the tree, removed at the end
  bind "$root/opt/oncebox-ci/node_modules" /src/tests/interop/node_modules
fi
# Node reads the system's authorities only when told (npm: tests/interop).
chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" \
  NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt \
  npm_config_cafile=/etc/ssl/certs/ca-certificates.crt "$@"
