#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Install dependencies, build, and run every test: the normal build, then the
# whole suite again under AddressSanitizer + UndefinedBehaviorSanitizer (on
# Debian 12, in a Debian 13 root: both releases in one run).
#
# Each stage's time is printed when it ends, and all of them at the end (also
# when a stage fails), so a change sees what it costs CI (90 minutes at most;
# this run is kept under 60 by design, tests/README.md).
# Long campaigns are not here: the simulator's campaign (tests/sim/README.md,
# `ob-sim --campaign`), the mutants (tests/mutants/run.sh) and the benches
# (tests/bench/run-all.sh) run behind their own flags.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
jobs=$(nproc)

stage_names=()
stage_secs=()
stage_now=""
stage_t0=0
run_t0=$(date +%s)

stage_end() {
  [ -n "$stage_now" ] || return 0
  local s=$(( $(date +%s) - stage_t0 ))
  stage_names+=("$stage_now")
  stage_secs+=("$s")
  printf 'run-all: stage %s took %d min %02d s\n' "$stage_now" $((s / 60)) $((s % 60))
  stage_now=""
}

# stage NAME: ends the previous stage (printing its time) and starts NAME.
stage() {
  stage_end
  stage_now=$1
  stage_t0=$(date +%s)
  printf 'run-all: stage %s\n' "$stage_now"
}

summary() {
  local rc=$?
  local total=$(( $(date +%s) - run_t0 ))
  if [ -n "$stage_now" ] && [ "$rc" != 0 ]; then
    stage_now="$stage_now (failed)"
  fi
  stage_end
  printf 'run-all: stage times\n'
  for i in "${!stage_names[@]}"; do
    printf '  %-44s %3d min %02d s\n' "${stage_names[$i]}" \
      $((stage_secs[$i] / 60)) $((stage_secs[$i] % 60))
  done
  printf '  %-44s %3d min %02d s (exit %d)\n' "total" $((total / 60)) \
    $((total % 60)) "$rc"
}
trap summary EXIT

stage install
bash tests/install-deps.sh

stage "gcc build"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j"$jobs"
# The same tree under clang, warnings as errors: clang warns where gcc does
# not (-Wstring-concatenation, -Wformat-nonliteral through va_list), and the
# fuzz stage, the only other clang build, comes last.
if command -v clang >/dev/null 2>&1; then
  stage "clang build"
  CC=clang cmake -S . -B build-clang -DCMAKE_BUILD_TYPE=Debug
  cmake --build build-clang -j"$jobs"
fi

stage "ctest (gcc)"
ctest --test-dir build --output-on-failure -j"$jobs"

# The Debian packages (as root: it installs and purges them): built from a
# clean copy, lintian, what they link (only the terminal's libraries), their
# bills of materials validated, dpkg -i, examples/shop against
# liboncebox-dev, the systemd unit verified and its exposure score checked,
# and a second build compared byte for byte (docs/packaging.md).
if [ "$(id -u)" = 0 ]; then
  stage packaging
  bash tests/packaging/test_deb.sh
else
  echo "run-all: not root: skipping tests/packaging/test_deb.sh"
fi

# ARM terminals, cross-built and tested under qemu-user (docs/cross.md):
# arm64's unit and crash labels (the whole tree is built: the crash tests
# run programs other than ob-test-NAME), and its Debian packages; armhf's
# unit label (32-bit: off_t, time_t, size_t), whose build alone costs
# minutes. The integration and fuzz labels run natively on both releases
# (`bash tests/cross.sh arm64` alone runs all four). OB_CROSS=0 skips the
# ARM stages.
. /etc/os-release
if [ "${OB_CROSS:-1}" != 0 ] && [ "${VERSION_CODENAME:-}" != bookworm ]; then
  echo "run-all: the ARM stages cross-build from Debian 12 (docs/cross.md);" \
       "skipped on ${PRETTY_NAME:-this release}"
elif [ "${OB_CROSS:-1}" != 0 ]; then
  stage "arm64 (qemu-user: unit, crash; .deb)"
  bash tests/cross.sh arm64 -L 'unit|crash'
  stage "armhf (qemu-user, unit)"
  OB_CROSS_LABELS=unit bash tests/cross.sh armhf
fi

# The sanitizers, and the other Debian release. On Debian 12 as root, the
# sanitizer build and its suite run in a Debian 13 root made by mmdebstrap
# (cached by the hash of its inputs), where the Debian packages are also
# built and installed: one stage covers both releases and both the
# sanitizers (tests/release/README.md). PostgreSQL's label runs on Debian
# 12 only (above). Elsewhere (Debian 13, or not root, or OB_RELEASE_ROOT=0)
# the sanitizer suite runs on the host.
if [ "${VERSION_CODENAME:-}" = bookworm ] && [ "$(id -u)" = 0 ] \
   && [ "${OB_RELEASE_ROOT:-1}" != 0 ]; then
  stage "Debian 13 root (mmdebstrap, cached)"
  d13=$(bash tests/release/root.sh trixie)
  stage "Debian 13: ASan+UBSan build and ctest"
  bash tests/release/in-root.sh "$d13" -- bash -c \
    'cd /src && OB_ASAN_BUILD_DIR=build-d13-asan bash tests/sanitized-suite.sh -LE postgresql'
  stage "Debian 13: packaging"
  bash tests/release/in-root.sh "$d13" -- bash -c \
    'cd /src && bash tests/packaging/test_deb.sh'
else
  stage "ASan+UBSan build and ctest"
  bash tests/sanitized-suite.sh
fi

# A bounded libFuzzer run of every parser, where clang is installed: a fixed
# number of inputs from a fixed seed, so the run is reproducible (longer,
# time-based runs: tests/fuzz/run_fuzzers.sh -t 3600). The corpus and
# crasher replays already ran in both ctest passes above. Exits 1 on a
# finding.
if command -v clang >/dev/null 2>&1; then
  stage fuzz
  OB_FUZZ_RUNS=${OB_FUZZ_RUNS:-50000} bash tests/fuzz/run_fuzzers.sh -j 2
fi
