#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_deb.sh: the Debian packages on this machine, as root (CI: a fresh
# Debian 12, after the ctest pass of tests/run-all.sh):
#   1. build the amd64 (host) .debs from a clean copy with deb.sh (lintian
#      included); what their binaries link (linked_libs.sh: the terminal's
#      packages only the allowed libraries, the head office's printed
#      beside); their bills of materials (sbom_check.sh: valid CycloneDX,
#      the same libraries as linked_libs.sh);
#   2. dpkg -i oncebox, liboncebox0.1 and liboncebox-dev (apt-get install -f
#      for missing dependencies); `oncebox --version`; the service user; a
#      PostgreSQL connection string without the oncebox-postgresql package
#      (exit 4, the package named) and with it (the plugin loads);
#   3. examples/shop built against the installed -dev package with
#      pkg-config and find_package (shop.sh, shared with test_packaging.sh);
#   4. systemd-analyze verify on the installed unit, and systemd-analyze
#      security --offline=yes: the exposure score printed, and a failure
#      above OB_EXPOSURE_MAX (2.0 by default; docs/systemd.md has the score
#      and why each directive is there);
#   5. a second package build, in another folder, at another time, compared
#      with the first byte for byte (reproducible.sh; OB_REPRO=0 skips it);
#   6. purge the packages, the dependencies apt pulled in for them and the
#      service user if this run created it: the machine is left as found.
# Exit 77 (skip) when not root or without the tools. About 2.5 minutes on 2
# cores (most of it the two package builds). OB_KEEP=1 keeps the temp dir.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
max=${OB_EXPOSURE_MAX:-2.0}
[ "$(id -u)" = 0 ] || { echo "SKIP: test_deb.sh installs packages: run it as root"; exit 77; }
for t in dpkg-buildpackage lintian systemd-analyze cmake cc pkg-config; do
  command -v "$t" >/dev/null || { echo "SKIP: $t not found (tests/install-deps.sh)"; exit 77; }
done
pkgs=(oncebox liboncebox0.1 liboncebox-dev)
for p in "${pkgs[@]}"; do
  if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "installed"; then
    echo "FAIL: $p is already installed; test_deb.sh would not leave it as it was"
    exit 1
  fi
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ob-test-deb.XXXXXX")
t0=$(date +%s)
step() { echo "== [$(( $(date +%s) - t0 ))s] $*"; }
fail() { echo "FAIL: $*"; exit 1; }

dpkg-query -W -f='${Package}:${Architecture}\n' | sort >"$tmp/before"
had_user=0
getent passwd oncebox >/dev/null && had_user=1
cleanup() {
  local rc=$?
  step "purge"
  dpkg --purge "${pkgs[@]}" >"$tmp/purge.log" 2>&1 || cat "$tmp/purge.log"
  dpkg-query -W -f='${Package}:${Architecture}\n' | sort >"$tmp/after"
  extra=$(comm -13 "$tmp/before" "$tmp/after" | tr '\n' ' ')
  if [ -n "$extra" ]; then
    echo "   purging what was pulled in for them: $extra"
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq $extra >/dev/null 2>&1 || true
  fi
  if [ $had_user = 0 ] && getent passwd oncebox >/dev/null; then
    userdel oncebox 2>/dev/null || true
    getent group oncebox >/dev/null && groupdel oncebox 2>/dev/null || true
  fi
  dpkg-query -W -f='${Package}:${Architecture}\n' | sort >"$tmp/final"
  if ! cmp -s "$tmp/before" "$tmp/final"; then
    echo "FAIL: the installed packages differ from before:"; diff "$tmp/before" "$tmp/final" || true
    rc=1
  fi
  if [ "${OB_KEEP:-0}" = 1 ]; then echo "kept $tmp"; else rm -rf "$tmp"; fi
  step "test_deb.sh: $([ $rc = 0 ] && echo OK || echo FAILED) in $(( $(date +%s) - t0 ))s"
  exit $rc
}
trap cleanup EXIT

# 1. Build. SOURCE_DATE_EPOCH is the commit's (as deb.sh would take it),
# fixed here so the second build of step 5 takes the same one.
if [ -z "${SOURCE_DATE_EPOCH:-}" ] && sde=$(git -C "$src" log -1 --format=%ct 2>/dev/null) \
   && [ -n "$sde" ]; then
  export SOURCE_DATE_EPOCH=$sde
fi
arch=$(dpkg --print-architecture)
step "deb.sh $arch"
bash "$src/tests/packaging/deb.sh" "$arch" "$tmp/debs" >"$tmp/deb.log" 2>&1 \
  || { cat "$tmp/deb.log"; fail "deb.sh"; }
grep -E '^== .*\.deb: [0-9]+ bytes' "$tmp/deb.log" | sed 's/^== \[[0-9]*s\] /   /'
version=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)
debs=()
for p in "${pkgs[@]}"; do
  debs+=("$tmp/debs/${p}_${version}_${arch}.deb")
  [ -f "${debs[-1]}" ] || fail "no ${p}_${version}_${arch}.deb"
done

# What the packages link, and their bills of materials.
step "linked_libs.sh (what the terminal links)"
OB_LINKED_LIBS_OUT=$tmp/closure bash "$src/tests/packaging/linked_libs.sh" "$tmp/debs" "$arch" \
  | sed 's/^/   /' || fail "linked_libs.sh: the terminal's packages link libraries outside their set"
step "sbom_check.sh (the bills of materials)"
bash "$src/tests/packaging/sbom_check.sh" "$tmp/debs" "$arch" "$tmp/closure" || fail "sbom_check.sh"

# 2. Install.
step "dpkg -i ${pkgs[*]}"
if ! dpkg -i "${debs[@]}" >"$tmp/install.log" 2>&1; then
  echo "   dpkg -i left dependencies missing: apt-get install -f"
  DEBIAN_FRONTEND=noninteractive apt-get install -f -y -qq >>"$tmp/install.log" 2>&1 \
    || { cat "$tmp/install.log"; fail "install"; }
fi
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" | grep -q "install ok installed" || { cat "$tmp/install.log"; fail "$p not installed"; }
done
got=$(oncebox --version)
echo "   $got"
[ "$got" = "oncebox $version" ] || fail "oncebox --version: '$got', want 'oncebox $version'"
unit=/lib/systemd/system/oncebox.service
[ -f "$unit" ] || fail "no $unit"
[ -f /etc/default/oncebox ] || fail "no /etc/default/oncebox"
if command -v systemd-sysusers >/dev/null; then
  getent passwd oncebox >/dev/null || fail "the package did not create the oncebox user"
  echo "   user: $(getent passwd oncebox)"
fi
# The daemon from the package, briefly, outside systemd: it must run, not exit.
mkdir -p "$tmp/run"
oncebox --db "$tmp/run/db" run >"$tmp/run/log" 2>&1 &
pid=$!
sleep 1
kill -0 $pid 2>/dev/null || { cat "$tmp/run/log"; fail "oncebox run exited on its own"; }
kill -TERM $pid
wait $pid || fail "oncebox run: exit $? after SIGTERM"

# 2b. The head office's dialect is a package of its own (decision 0025):
# without it a connection string exits 4 naming the package; installed, the
# program loads its plugin from the package's folder (the server named does
# not exist: the failure is the connection's, and it names the database).
pg_uri='postgresql://u:s3cr3t@/x?host=/nonexistent-oncebox-dir'
step "oncebox --db postgresql://... without and with oncebox-postgresql"
set +e
(cd "$tmp/run" && oncebox --db "$pg_uri" init) >"$tmp/pg.out" 2>&1
rc=$?
set -e
[ $rc = 4 ] || { cat "$tmp/pg.out"; fail "without the plugin: exit $rc, want 4"; }
grep -q "install the package oncebox-postgresql" "$tmp/pg.out" || { cat "$tmp/pg.out"; fail "without the plugin: the package is not named"; }
sed 's/^/   /' "$tmp/pg.out"
pg_deb="$tmp/debs/oncebox-postgresql_${version}_${arch}.deb"
if [ -f "$pg_deb" ]; then
  pkgs+=(oncebox-postgresql)
  dpkg -i "$pg_deb" >>"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; fail "dpkg -i oncebox-postgresql"; }
  set +e
  oncebox --db "$pg_uri" init >"$tmp/pg.out" 2>&1
  rc=$?
  set -e
  grep -q "not installed" "$tmp/pg.out" && { cat "$tmp/pg.out"; fail "with oncebox-postgresql: the plugin was not found"; }
  grep -q "dbname=x" "$tmp/pg.out" || { cat "$tmp/pg.out"; fail "with oncebox-postgresql: the failure does not name the database"; }
  grep -q "s3cr3t" "$tmp/pg.out" && fail "with oncebox-postgresql: the password was printed"
  echo "   with the plugin: exit $rc: $(head -1 "$tmp/pg.out")"
else
  echo "   no oncebox-postgresql package in this build (a cross build or the nopostgresql profile)"
fi

# 3. The library example against the installed -dev package.
step "examples/shop against liboncebox-dev"
bash "$src/tests/packaging/shop.sh" "$src" "$tmp/shop" || fail "examples/shop"

# 4. The unit.
# verify also runs `man oncebox(1)` for Documentation=; a minimal image
# (Docker's debian:12 has path-exclude=/usr/share/man/* in
# /etc/dpkg/dpkg.cfg.d) drops man pages at install: then the page is
# checked in the .deb instead.
dpkg-deb -c "${debs[0]}" | grep -q '/usr/share/man/man1/oncebox\.1\.gz$' || fail "no oncebox.1 in the package"
man=yes
if [ ! -e /usr/share/man/man1/oncebox.1.gz ]; then
  echo "   the man page was not installed (dpkg path-exclude?): verify --man=no"
  man=no
fi
step "systemd-analyze verify --man=$man $unit"
systemd-analyze verify --man=$man "$unit" >"$tmp/verify.log" 2>&1 || { cat "$tmp/verify.log"; fail "systemd-analyze verify"; }
[ -s "$tmp/verify.log" ] && { cat "$tmp/verify.log"; fail "systemd-analyze verify printed warnings"; }
step "systemd-analyze security --offline=yes $unit"
systemd-analyze security --offline=yes --no-pager "$unit" >"$tmp/security.log" 2>&1 || true
grep '✗' "$tmp/security.log" | sed 's/^/   /' || true
score=$(sed -n 's/.*Overall exposure level for oncebox.service: \([0-9.]*\).*/\1/p' "$tmp/security.log")
[ -n "$score" ] || { cat "$tmp/security.log"; fail "no exposure score"; }
echo "   exposure $score (threshold $max)"
awk -v s="$score" -v m="$max" 'BEGIN { exit !(s <= m) }' || fail "exposure $score is above $max"

# 5. The same packages again, in another folder at another time: identical.
if [ "${OB_REPRO:-1}" != 0 ]; then
  step "reproducible.sh (a second build)"
  bash "$src/tests/packaging/reproducible.sh" "$tmp/debs" || fail "reproducible.sh: the two builds differ"
fi
