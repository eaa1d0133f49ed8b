#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Install what oncebox needs to build and to run every test, on Debian 12
# (bookworm) or 13 (trixie) as root, and the packages given as arguments.
# Safe to run twice.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)

# g++ (in build-essential too): tests/cli/test_headers.sh compiles the
# public headers as C++.
# What differs between the releases: llhttp (Debian 12 ships its C sources
# in node-llhttp, Debian 13 a library, libllhttp-dev), the PostgreSQL server
# (15, 17) and clang's runtime (14, 19).
. /etc/os-release
case "${VERSION_CODENAME:-}" in
  bookworm) release_pkgs=(node-llhttp postgresql-15 libclang-rt-14-dev) ;;
  trixie)   release_pkgs=(libllhttp-dev postgresql-17 libclang-rt-19-dev) ;;
  *) echo "install-deps.sh: Debian 12 (bookworm) or 13 (trixie) expected," \
          "this is '${PRETTY_NAME:-unknown}'" >&2
     exit 2 ;;
esac
pkgs=(build-essential g++ cmake pkg-config
      libsqlite3-dev sqlite3 libuv1-dev libmbedtls-dev libcjson-dev
      libcmocka-dev
      openssl socat faketime ca-certificates
      debhelper dpkg-dev lintian fakeroot groff-base man-db systemd
      prometheus python3 jq curl zlib1g-dev diffoscope-minimal
      libpq-dev
      clang "${release_pkgs[@]}")
# (The Debian packaging: tests/packaging/deb.sh and test_deb.sh; groff-base
# and man-db for the man_pages test; systemd for systemd-analyze and the
# package's systemd-sysusers.) prometheus for promtool: tests/cli/
# test_prometheus.sh checks `stats --prometheus` with `promtool check metrics`
# (only promtool is used; the package brings the server and its web assets).
# python3: tests/cli/test_logs.sh parses every log line with its json module.
# jq: tests/hostile/test_hostile_cli.sh compares `failed show --json` bodies;
# curl: tests/hostile/canary.sh; zlib1g-dev: the static link of
# tests/packaging (Debian 13's sqlite3.pc names -lz). diffoscope-minimal:
# tests/packaging/reproducible.sh shows how two package builds differ;
# python3 also writes the packages' bills of materials (debian/sbom.py).
# libpq-dev and postgresql-15/17 (issue 20, docs/postgresql.md): libpq for the
# build's PostgreSQL support (ONCEBOX_POSTGRESQL=AUTO finds it), and the
# server programs the tests start in temporary directories (initdb, pg_ctl:
# tests/support/pg_server.c). The package's own cluster is not used; as
# root the tests run the server as the `postgres` user it creates.
# clang and its runtime: tests/run-all.sh builds the tree under clang with
# warnings as errors, and tests/fuzz/run_fuzzers.sh needs libFuzzer.
# More packages as arguments (tests/cross.sh: the cross compiler and the
# target's :ARCH libraries).
pkgs+=("$@")
# Node may come from elsewhere than Debian (it does on our machines).
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  pkgs+=(nodejs npm)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# JavaScript peers used by the interoperability tests (the AWS SDK's signer),
# and CycloneDX's validator for tests/packaging/sbom_check.mjs. Installed
# again when the lock file is newer than what npm last installed.
for d in "$here"/tests/interop; do
  if [ -f "$d/package-lock.json" ] && { [ ! -d "$d/node_modules" ] ||
       [ "$d/package-lock.json" -nt "$d/node_modules/.package-lock.json" ]; }; then
    (cd "$d" && npm ci --no-audit --no-fund --loglevel=error)
  fi
done
