#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The whole suite again under AddressSanitizer + UndefinedBehaviorSanitizer:
#   bash tests/sanitized-suite.sh [ctest arguments...]
# Builds build-asan (Debug, OB_SANITIZE=ON) and runs ctest there. On a
# Debian 12 host tests/run-all.sh runs it inside a Debian 13 root, so the
# sanitizers also cover the other release's libraries (mbedTLS 3.6, llhttp
# 9, SQLite 3.46) at no extra stage: tests/release/README.md.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
build=${OB_ASAN_BUILD_DIR:-build-asan}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DOB_SANITIZE=ON
cmake --build "$build" -j"$(nproc)"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir "$build" --output-on-failure -j"$(nproc)" "$@"
