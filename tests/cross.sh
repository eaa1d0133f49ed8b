#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Cross build for an ARM terminal and its tests under qemu-user, on Debian 12
# as root:  bash tests/cross.sh arm64|armhf [ctest arguments...]
#
# Adds the architecture, installs the cross compiler, the target's -dev
# libraries and qemu-user-static, registers qemu through binfmt_misc, builds
# with cmake/toolchain/<triplet>.cmake into build-<arch>, and runs ctest
# there (by default the unit, integration, crash and fuzz labels; set
# OB_CROSS_LABELS to change it, or pass ctest arguments). Direct tests run
# through CMAKE_CROSSCOMPILING_EMULATOR; programs the tests start
# indirectly (sh -c, execv, scripts) through $OB_EMULATOR, so the run also
# works where binfmt_misc cannot be registered. Prints the stripped size of
# the oncebox program (docs/performance.md, footprint). For arm64, then
# builds the Debian packages (tests/packaging/deb.sh arm64) and runs the
# packaged program under qemu.
set -euo pipefail
arch=${1:?usage: tests/cross.sh arm64|armhf [ctest args...]}
shift
case "$arch" in
  arm64) triplet=aarch64-linux-gnu qemu=aarch64 ;;
  armhf) triplet=arm-linux-gnueabihf qemu=arm ;;
  *) echo "cross.sh: unknown architecture '$arch' (arm64 or armhf)" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
build=${OB_CROSS_BUILD_DIR:-build-$arch}

# What the native tests need (node, fauxqs, openssl, faketime...) runs on
# the host: the ARM test programs start them as host programs.
dpkg --print-foreign-architectures | grep -qx "$arch" || {
  dpkg --add-architecture "$arch"
  apt-get update -qq
}
bash tests/install-deps.sh crossbuild-essential-"$arch" qemu-user-static \
  libsqlite3-dev:"$arch" libuv1-dev:"$arch" libmbedtls-dev:"$arch" \
  libcjson-dev:"$arch" libcmocka-dev:"$arch" libfaketime:"$arch" \
  pkgconf:"$arch"  # <triplet>-pkg-config, for the package's cross build

# binfmt_misc: lets the kernel start ARM programs through qemu wherever they
# are exec'd. Without it (a container that may not mount it) the run goes
# on through $OB_EMULATOR alone.
bfm=/proc/sys/fs/binfmt_misc
if [ ! -e "$bfm/register" ]; then
  mount -t binfmt_misc binfmt_misc "$bfm" 2>/dev/null || true
fi
if [ -e "$bfm/register" ] && [ ! -e "$bfm/qemu-$qemu" ]; then
  cat "/usr/lib/binfmt.d/qemu-$qemu.conf" > "$bfm/register" 2>/dev/null || true
fi
if [ -e "$bfm/qemu-$qemu" ]; then
  echo "cross.sh: qemu-$qemu registered with binfmt_misc"
else
  echo "cross.sh: binfmt_misc not available; programs run through \$OB_EMULATOR only"
fi

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_TOOLCHAIN_FILE="$here/cmake/toolchain/$triplet.cmake"
if [ -n "${OB_CROSS_LABELS:-}" ] && [ $# -eq 0 ]; then
  # Only what the chosen labels run: each test NAME's ob-test-NAME, the
  # program and the clock probe (a missing one shows as "Not Run": loud).
  targets=(oncebox-cli ob-test-now)
  all=$(cmake --build "$build" --target help | sed -n 's/^\.\.\. //p' | cut -d' ' -f1)
  while read -r t; do
    grep -qx "ob-test-$t" <<<"$all" && targets+=("ob-test-$t")
  done < <(ctest --test-dir "$build" -N -L "$OB_CROSS_LABELS" |
           sed -n 's/^ *Test *#[0-9]*: //p')
  cmake --build "$build" -j"$(nproc)" --target "${targets[@]}"
else
  cmake --build "$build" -j"$(nproc)"
fi

cp "$build/oncebox" "$build/oncebox.stripped"
"$triplet-strip" "$build/oncebox.stripped"
echo "cross.sh: $arch stripped oncebox: $(stat -c %s "$build/oncebox.stripped") bytes"

export OB_EMULATOR=/usr/bin/qemu-$qemu-static
export OB_FAKETIME_LIB=/usr/lib/$triplet/faketime/libfaketime.so.1
# The fault-injection loops (tests/crash/test_faults.c) try every I/O and
# allocation point; emulated, every 5th keeps them under their timeout.
export OB_FAULTS_STRIDE=${OB_FAULTS_STRIDE:-5}
# The crash campaigns likewise: a quarter of their cycles, same seeds (the
# mutants are still killed in that many, except sync-normal, which keeps all
# its cycles: tests/crash/CMakeLists.txt; CI checks it on every run).
export OB_CAMPAIGN_CYCLES_PERCENT=${OB_CAMPAIGN_CYCLES_PERCENT:-25}
# And the fence's random SIGKILL run: 100 orders instead of 300.
export OB_FENCE_ORDERS=${OB_FENCE_ORDERS:-100}
if [ $# -eq 0 ]; then
  set -- -L "${OB_CROSS_LABELS:-unit|integration|crash|fuzz}"
fi
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" "$@"

# arm64's Debian packages, through the same cross toolchain (debhelper
# passes it to cmake): built from a clean copy, lintian-checked, what they
# link checked against the terminal's set (linked_libs.sh, resolving in
# /usr/lib/aarch64-linux-gnu: the :arm64 libraries installed above), their
# bills of materials checked (sbom_check.sh), their program run under qemu.
# OB_CROSS_DEB=0 skips it.
if [ "$arch" = arm64 ] && [ "${OB_CROSS_DEB:-1}" != 0 ]; then
  bash tests/packaging/deb.sh arm64
  OB_LINKED_LIBS_OUT=build-deb/arm64/closure.txt \
    bash tests/packaging/linked_libs.sh build-deb/arm64 arm64
  bash tests/packaging/sbom_check.sh build-deb/arm64 arm64 build-deb/arm64/closure.txt
  deb=$(ls build-deb/arm64/oncebox_*_arm64.deb)
  x=$(mktemp -d)
  dpkg-deb -x "$deb" "$x"
  "$OB_EMULATOR" "$x/usr/bin/oncebox" --version
  rm -rf "$x"
fi
