#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# shop.sh SOURCE_DIR WORKDIR [PREFIX LIBDIR]: build examples/shop (the
# README's library example: its own table and migration, an end-to-end test
# on the public fake clock) against an installed oncebox, with pkg-config
# and with find_package + ctest, and run it. Without PREFIX: the system's
# (the Debian package, tests/packaging/test_deb.sh); with it: a private
# prefix (test_packaging.sh), PKG_CONFIG_PATH already pointing into it and
# LIBDIR for the pkg-config binary's LD_LIBRARY_PATH.
set -euo pipefail
# A cross build under qemu: the emulator that starts built programs (tests/cross.sh).
: "${OB_EMULATOR:=}"
src=$1 work=$2 prefix=${3:-} libdir=${4:-}
jobs=${OB_PACKAGING_JOBS:-2}
# A cross build's binaries run under $OB_EMULATOR (qemu-aarch64, ...).
emu=()
[ -n "${OB_EMULATOR:-}" ] && emu=("$OB_EMULATOR")
ex=$src/examples/shop
fail() { echo "FAIL: $*"; exit 1; }
mkdir -p "$work"
echo "== examples/shop: pkg-config"
# shellcheck disable=SC2046
cc -o "$work/shop-pc" "$ex/shop.c" "$ex/shop_test.c" $(pkg-config --cflags --libs oncebox) \
  || fail "examples/shop pkg-config build"
if [ -n "$libdir" ]; then
  LD_LIBRARY_PATH="$libdir" "${emu[@]}" "$work/shop-pc" || fail "examples/shop (pkg-config) failed"
else
  "${emu[@]}" "$work/shop-pc" || fail "examples/shop (pkg-config) failed"
fi
echo "== examples/shop: find_package + ctest"
cmake -S "$ex" -B "$work/b-shop" ${prefix:+-DCMAKE_PREFIX_PATH="$prefix"} \
  >"$work/b-shop.log" 2>&1 || { cat "$work/b-shop.log"; fail "examples/shop configure"; }
cmake --build "$work/b-shop" -j"$jobs" >>"$work/b-shop.log" 2>&1 \
  || { cat "$work/b-shop.log"; fail "examples/shop build"; }
(cd "$work/b-shop" && ctest --output-on-failure) || fail "examples/shop ctest"
