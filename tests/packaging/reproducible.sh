#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# reproducible.sh [FIRST_DEB_DIR]: the Debian packages built twice from the
# same tree are identical byte for byte (docs/packaging.md, "A build that
# reproduces").
#
# Both builds go through deb.sh (a fresh copy of the tree, dpkg-buildpackage)
# with SOURCE_DATE_EPOCH taken from the commit (git log -1 --format=%ct;
# deb.sh does the same, so a build of deb.sh's own counts as the first).
# The second one differs from the first in what must not matter:
#   - the folder: another TMPDIR, a longer path (/var/tmp/... instead of
#     /tmp/...);
#   - the time: later, and under faketime 77 hours ahead (+3d 5h) when
#     libfaketime is installed (the faketime package, tests/install-deps.sh);
#   - the time zone (Pacific/Kiritimati, UTC+14), the locale (C.UTF-8) and
#     the umask (0002).
# FIRST_DEB_DIR: the .debs of a build made by deb.sh from this same tree
# (test_deb.sh passes its own), so that only one more build is needed;
# without it, the first build is made here too (in ${TMPDIR:-/tmp}).
# Every .deb (the -dbgsym packages too) is compared with cmp; where two
# differ, diffoscope (Debian's diffoscope-minimal) shows how, and the test
# fails. OB_REPRO_FAKETIME=0 builds the second one without faketime.
# Prints the time each build took.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
arch=$(dpkg --print-architecture)
t0=$(date +%s)
step() { echo "== [$(( $(date +%s) - t0 ))s] $*"; }
if [ -z "${SOURCE_DATE_EPOCH:-}" ] && sde=$(git -C "$src" log -1 --format=%ct 2>/dev/null) \
   && [ -n "$sde" ]; then
  export SOURCE_DATE_EPOCH=$sde
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/ob-repro.XXXXXX")
second=/var/tmp/ob-repro-second.$$/a/longer/path/to/build/in
trap 'rm -rf "$work" "/var/tmp/ob-repro-second.$$"' EXIT
mkdir -p "$second"

first=${1:-}
if [ -z "$first" ]; then
  first=$work/first
  s=$(date +%s)
  step "first build (TMPDIR=${TMPDIR:-/tmp}, SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-from debian/changelog})"
  bash "$src/tests/packaging/deb.sh" "$arch" "$first" >"$work/first.log" 2>&1 \
    || { tail -40 "$work/first.log"; echo "FAIL: reproducible.sh: the first build"; exit 1; }
  echo "   first build: $(( $(date +%s) - s ))s"
else
  echo "   first build: $first"
fi

fake=()
if [ "${OB_REPRO_FAKETIME:-1}" != 0 ] && command -v faketime >/dev/null; then
  fake=(faketime -f '+77h')
fi
s=$(date +%s)
step "second build (TMPDIR=$second, TZ=Pacific/Kiritimati, LC_ALL=C.UTF-8, umask 0002${fake:+, ${fake[*]}})"
TMPDIR=$second TZ=Pacific/Kiritimati LC_ALL=C.UTF-8 \
  "${fake[@]}" bash -c 'umask 0002; echo "   the second build'"'"'s clock: $(date -u +%FT%TZ)"; exec bash "$1" "$2" "$3"' _ \
  "$src/tests/packaging/deb.sh" "$arch" "$work/second" >"$work/second.log" 2>&1 \
  || { tail -40 "$work/second.log"; echo "FAIL: reproducible.sh: the second build"; exit 1; }
grep "the second build's clock" "$work/second.log" || true
echo "   second build: $(( $(date +%s) - s ))s"

step "compare"
rc=0
n=0
shopt -s nullglob
for a in "$first"/*.deb; do
  b=$work/second/$(basename "$a")
  n=$((n + 1))
  if [ ! -f "$b" ]; then
    echo "   $(basename "$a"): not in the second build"; rc=1; continue
  fi
  if cmp -s "$a" "$b"; then
    echo "   $(basename "$a"): identical ($(sha256sum <"$a" | cut -c1-16))"
  else
    rc=1
    echo "   $(basename "$a"): DIFFERS"
    if command -v diffoscope >/dev/null; then
      diffoscope --text - --max-report-size 200000 "$a" "$b" 2>&1 | head -300 || true
    else
      echo "   (no diffoscope: apt-get install diffoscope-minimal)"
    fi
  fi
done
for b in "$work/second"/*.deb; do
  [ -f "$first/$(basename "$b")" ] || { echo "   $(basename "$b"): only in the second build"; rc=1; }
done
[ $n -gt 0 ] || { echo "FAIL: reproducible.sh: no .deb in $first"; exit 1; }
if [ $rc = 0 ]; then
  step "reproducible.sh: OK: $n packages identical"
else
  step "reproducible.sh: FAILED: the packages differ"
fi
exit $rc
