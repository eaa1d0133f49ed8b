#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Install dependencies, build, and run every test: the normal build, then the
# whole suite again under AddressSanitizer + UndefinedBehaviorSanitizer.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
bash tests/install-deps.sh
jobs=$(nproc)

cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j"$jobs"
# The same tree under clang, warnings as errors: clang warns where gcc does
# not (-Wstring-concatenation, -Wformat-nonliteral through va_list), and the
# fuzz stage, the only other clang build, comes last.
if command -v clang >/dev/null 2>&1; then
  CC=clang cmake -S . -B build-clang -DCMAKE_BUILD_TYPE=Debug
  cmake --build build-clang -j"$jobs"
fi
ctest --test-dir build --output-on-failure -j"$jobs"

# The Debian packages (as root: it installs and purges them): built from a
# clean copy, lintian, dpkg -i, examples/shop against liboncebox-dev, the
# systemd unit verified and its exposure score checked (docs/packaging.md).
if [ "$(id -u)" = 0 ]; then
  bash tests/packaging/test_deb.sh
else
  echo "run-all: not root: skipping tests/packaging/test_deb.sh"
fi

# ARM terminals, cross-built and tested under qemu-user (docs/cross.md):
# arm64's unit, integration, crash and fuzz-replay labels, and its Debian
# packages; armhf's unit label (32-bit: off_t, time_t, size_t), whose build
# alone costs minutes. OB_CROSS=0 skips them.
if [ "${OB_CROSS:-1}" != 0 ]; then
  bash tests/cross.sh arm64
  OB_CROSS_LABELS=unit bash tests/cross.sh armhf
fi

cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DOB_SANITIZE=ON
cmake --build build-asan -j"$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j"$jobs"

# A bounded libFuzzer run of every parser, where clang is installed: a fixed
# number of inputs from a fixed seed, so the run is reproducible (longer,
# time-based runs: tests/fuzz/run_fuzzers.sh -t 3600). The corpus and
# crasher replays already ran in both ctest passes above. Exits 1 on a
# finding.
if command -v clang >/dev/null 2>&1; then
  OB_FUZZ_RUNS=${OB_FUZZ_RUNS:-100000} bash tests/fuzz/run_fuzzers.sh -j 2
fi
