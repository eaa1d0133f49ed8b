#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# deb.sh [ARCH] [OUTDIR]: build the Debian packages (docs/packaging.md,
# "Debian package") from a clean copy of the source tree, check them with
# lintian, and collect them into OUTDIR (default build-deb/ARCH).
#   ARCH    the host architecture (default: this machine's, e.g. amd64);
#           another one is a cross build: -aARCH -Pcross,nocheck (needs
#           crossbuild-essential-ARCH and the :ARCH -dev packages)
# The copy is the tracked and untracked-but-not-ignored files (git), or the
# tree without build*/ and .git when it is not a git checkout: nothing from
# a build directory lying around reaches the package.
# DEB_BUILD_OPTIONS defaults to "nocheck parallel=2" (the test suite runs
# in CI, not in the package build); set it to build and run the unit tests.
# OB_KEEP=1 keeps the temporary directory. Exit non-zero on any failure,
# lintian errors and warnings included. Prints the .deb paths last.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
host=$(dpkg --print-architecture)
arch=${1:-$host}
out=${2:-$src/build-deb/$arch}
for t in dpkg-buildpackage dh lintian; do
  command -v "$t" >/dev/null || { echo "deb.sh: $t not found (apt-get install debhelper dpkg-dev lintian)"; exit 2; }
done
version=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)
# A native package: debian/changelog's version is the project's.
project=$(sed -n 's/^project(oncebox VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
[ "$version" = "$project" ] || { echo "deb.sh: debian/changelog says $version, CMakeLists.txt $project: add a changelog entry (dch -v $project)"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ob-deb.XXXXXX")
if [ "${OB_KEEP:-0}" = 1 ]; then echo "keeping $tmp"; else trap 'rm -rf "$tmp"' EXIT; fi
t0=$(date +%s)
step() { echo "== [$(( $(date +%s) - t0 ))s] $*"; }

# Reproducible (tests/packaging/reproducible.sh): the time stamped in the
# packages (file dates, the bill of materials) is the commit's, not the
# clock's, unless SOURCE_DATE_EPOCH is set; outside git, debian/changelog's
# date (dpkg-buildpackage's own default).
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
  sde=$(git -C "$src" log -1 --format=%ct 2>/dev/null) || sde=""
  [ -n "$sde" ] || sde=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Timestamp)
  export SOURCE_DATE_EPOCH=$sde
fi

tree=$tmp/oncebox-$version
mkdir -p "$tree"
step "clean copy of $src into $tree"
if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  (cd "$src" && git ls-files -z --cached --others --exclude-standard |
     grep -zv -E '^(build[^/]*|node_modules)/|/node_modules/' |
     xargs -0 -I{} sh -c 'test -e "{}" && printf "%s\0" "{}"' _ |
     tar --null -T - -cf -) | tar -C "$tree" -xf -
else
  tar -C "$src" --exclude='./build*' --exclude='./.git' --exclude='node_modules' -cf - . |
    tar -C "$tree" -xf -
fi

# Every file of the copy dated SOURCE_DATE_EPOCH: dpkg-deb clamps newer
# dates to it but keeps older ones, so a file the package takes from the
# tree as it is (a header, a conffile, the copyright) would otherwise carry
# the checkout's date, which differs between two checkouts of one commit.
find "$tree" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +

args=(-us -uc -b)
if [ "$arch" != "$host" ]; then args+=("-a$arch" -Pcross,nocheck); fi
export DEB_BUILD_OPTIONS=${DEB_BUILD_OPTIONS-nocheck parallel=2}
step "dpkg-buildpackage ${args[*]} (DEB_BUILD_OPTIONS=$DEB_BUILD_OPTIONS${SOURCE_DATE_EPOCH:+ SOURCE_DATE_EPOCH=$SOURCE_DATE_EPOCH})"
(cd "$tree" && dpkg-buildpackage "${args[@]}") >"$tmp/build.log" 2>&1 || {
  tail -60 "$tmp/build.log"; echo "FAIL: dpkg-buildpackage (log: $tmp/build.log)"
  trap - EXIT; exit 1; }

changes=$(ls "$tmp"/oncebox_"${version}"_"$arch".changes)
mkdir -p "$out"
rm -f "$out"/*.deb "$out"/*.changes "$out"/*.buildinfo
cp "$tmp"/*.deb "$tmp"/*.buildinfo "$changes" "$out"/
cp "$tmp/build.log" "$out/build.log"

for d in "$out"/*.deb; do
  step "$(basename "$d"): $(stat -c %s "$d") bytes"
  dpkg-deb -c "$d" | awk '{print "   ", $1, $3, $6, $7, $8}'
done

# lintian on the .changes: the packages and the buildinfo. Errors and
# warnings fail; overrides (with their reasons) are in debian/*.lintian-overrides*.
step "lintian $(basename "$changes")"
lintian --fail-on error,warning --display-info --tag-display-limit 0 \
  "$out/$(basename "$changes")" || { echo "FAIL: lintian"; exit 1; }
step "deb.sh: OK ($arch)"
ls -1 "$out"/*.deb
