#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_packaging.sh SOURCE_DIR BUILD_DIR [SANITIZE]
# The library as a vendor gets it (docs/packaging.md):
#   1. cmake --install BUILD_DIR (already built) into a temporary prefix;
#      the layout; the SONAME (docs/versioning.md); the exported symbols
#      (exported_symbols.sh against the installed headers);
#   2. consumer/main.c built against the installed package with pkg-config
#      (shared, and static with --static) and with find_package(oncebox)
#      (oncebox::oncebox, oncebox::oncebox_static), and run;
#   3. the same consumer building oncebox from source with add_subdirectory
#      and with FetchContent (URL of a file:// tarball of SOURCE_DIR: no
#      network), where OB_TESTS must default to OFF.
# Exit 77 (skip) when a tool it needs is missing. OB_KEEP=1 keeps the
# temporary directory.
set -euo pipefail
src=$(cd "$1" && pwd) bld=$(cd "$2" && pwd)
case "${3:-OFF}" in
  ON|1|TRUE|YES)
    echo "SKIP: a sanitizer build (OB_SANITIZE=ON): its installed library needs the"
    echo "      sanitizer runtime in every consumer; the packaging test checks a normal build"
    exit 77 ;;
esac
for t in cmake cc pkg-config readelf nm tar; do
  command -v "$t" >/dev/null || { echo "SKIP: packaging test needs $t (not found)"; exit 77; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ob-packaging.XXXXXX")
if [ "${OB_KEEP:-0}" = 1 ]; then echo "keeping $tmp"; else trap 'rm -rf "$tmp"' EXIT; fi
jobs=${OB_PACKAGING_JOBS:-2}
t0=$(date +%s)
step() { echo "== [$(( $(date +%s) - t0 ))s] $*"; }
fail() { echo "FAIL: $*"; exit 1; }

# 1. Install.
prefix=$tmp/prefix
step "cmake --install $bld --prefix $prefix"
cmake --install "$bld" --prefix "$prefix" >"$tmp/install.log" || { cat "$tmp/install.log"; fail "install"; }
# The library directory as GNUInstallDirs chose it (lib, lib64, ...).
libdir=$(dirname "$(find "$prefix" -name oncebox.pc | head -1)")
libdir=${libdir%/pkgconfig}
[ -d "$libdir" ] || fail "no oncebox.pc installed"
for f in include/oncebox.h "${libdir#"$prefix"/}/liboncebox.a" "${libdir#"$prefix"/}/liboncebox.so" \
         "${libdir#"$prefix"/}/cmake/oncebox/onceboxConfig.cmake" \
         "${libdir#"$prefix"/}/cmake/oncebox/onceboxConfigVersion.cmake" bin/oncebox \
         share/doc/oncebox/LICENSE share/doc/oncebox/NOTICE share/man/man1/oncebox.1 share/man/man3/oncebox.3; do
  [ -e "$prefix/$f" ] || fail "not installed: $f"
done
for h in "$src"/core/include/oncebox*.h "$src"/modules/*/include/oncebox*.h; do
  cmp -s "$h" "$prefix/include/$(basename "$h")" || fail "header not installed: $(basename "$h")"
done
soname=$(readelf -d "$libdir/liboncebox.so" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
# docs/versioning.md: .so.0.MINOR before 1.0, .so.MAJOR after.
want=$(sed -n 's/^project(oncebox VERSION \([0-9]*\)\.\([0-9]*\)\..*/\1 \2/p' "$src/CMakeLists.txt")
set -- $want
if [ "$1" = 0 ]; then want=liboncebox.so.0.$2; else want=liboncebox.so.$1; fi
[ "$soname" = "$want" ] || fail "SONAME is '$soname', want $want"
[ -e "$libdir/$want" ] || fail "no $want link"
echo "SONAME $soname; $(basename "$(readlink -f "$libdir/liboncebox.so")")"
bash "$src/tests/packaging/exported_symbols.sh" "$libdir/liboncebox.so" "$prefix/include"

run() { # run NAME BINARY: the consumer in its own temporary directory
  # (binaries CMake built find their liboncebox.so by RUNPATH; the
  # pkg-config one needs LD_LIBRARY_PATH as any non-system prefix does)
  mkdir -p "$tmp/run-$1"
  "$2" "$tmp/run-$1" || fail "consumer ($1) failed"
}
needs_so() { # needs_so NAME BINARY yes|no: dynamically linked to liboncebox?
  if readelf -d "$2" | grep -q 'liboncebox\.so'; then got=yes; else got=no; fi
  [ "$got" = "$3" ] || fail "consumer ($1): NEEDED liboncebox.so: $got, want $3"
}

# 2a. pkg-config.
export PKG_CONFIG_PATH=$libdir/pkgconfig
c=$src/tests/packaging/consumer
step "pkg-config (shared): cc main.c \$(pkg-config --cflags --libs oncebox)"
# shellcheck disable=SC2046
cc -o "$tmp/c-pc" "$c/main.c" $(pkg-config --cflags --libs oncebox) || fail "pkg-config build"
needs_so pkg-config "$tmp/c-pc" yes
LD_LIBRARY_PATH="$libdir" run pkg-config "$tmp/c-pc"
step "pkg-config (static): liboncebox.a + \$(pkg-config --static --libs oncebox)"
# shellcheck disable=SC2046
cc -o "$tmp/c-pcs" "$c/main.c" $(pkg-config --cflags oncebox) "$libdir/liboncebox.a" \
   $(pkg-config --static --libs oncebox | sed 's/-loncebox\b//') || fail "pkg-config --static build"
needs_so pkg-config-static "$tmp/c-pcs" no
run pkg-config-static "$tmp/c-pcs"

# 2b. find_package.
for how in package static; do
  step "find_package(oncebox) ($how)"
  cmake -S "$c" -B "$tmp/b-$how" -DOB_CONSUME=$how -DCMAKE_PREFIX_PATH="$prefix" \
    >"$tmp/b-$how.log" 2>&1 || { cat "$tmp/b-$how.log"; fail "configure ($how)"; }
  cmake --build "$tmp/b-$how" -j"$jobs" >>"$tmp/b-$how.log" 2>&1 || { cat "$tmp/b-$how.log"; fail "build ($how)"; }
  if [ $how = package ]; then needs_so $how "$tmp/b-$how/consumer" yes; else needs_so $how "$tmp/b-$how/consumer" no; fi
  run $how "$tmp/b-$how/consumer"
done

# 2c. examples/shop, the README's library example, both ways (shop.sh,
# which tests/packaging/test_deb.sh runs against the Debian package too).
step "examples/shop"
bash "$src/tests/packaging/shop.sh" "$src" "$tmp/shop" "$prefix" "$libdir" || fail "examples/shop"

# 3. From source: add_subdirectory and FetchContent (builds only what the
# consumer needs: the library).
tar -C "$src" -czf "$tmp/oncebox-src.tar.gz" --transform 's,^\.,oncebox,' \
  --exclude='./build*' --exclude='./.git' --exclude='node_modules' .
for how in subdirectory fetch; do
  step "$how"
  cmake -S "$c" -B "$tmp/b-$how" -DOB_CONSUME=$how -DOB_SOURCE_DIR="$src" \
    -DOB_SOURCE_URL="file://$tmp/oncebox-src.tar.gz" \
    >"$tmp/b-$how.log" 2>&1 || { cat "$tmp/b-$how.log"; fail "configure ($how)"; }
  grep -qx 'OB_TESTS=OFF' "$tmp/b-$how/ob_tests.txt" || fail "$how: OB_TESTS not OFF by default"
  cmake --build "$tmp/b-$how" -j"$jobs" --target consumer >>"$tmp/b-$how.log" 2>&1 \
    || { cat "$tmp/b-$how.log"; fail "build ($how)"; }
  run $how "$tmp/b-$how/consumer"
done
step "packaging: OK in $(( $(date +%s) - t0 ))s"
