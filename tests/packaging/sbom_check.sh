#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# sbom_check.sh DEB_DIR [ARCH [CLOSURE]]: the bill of materials in each
# package of ARCH in DEB_DIR (/usr/share/doc/PACKAGE/sbom.ARCH.cdx.json,
# written by debian/sbom.py) validated with CycloneDX's own validator and
# compared with the link test's closure (sbom_check.mjs says what is
# checked). CLOSURE: linked_libs.sh's OB_LINKED_LIBS_OUT file of the same
# packages; without it, linked_libs.sh runs here (its verdict on the
# terminal's libraries is its own test: here only its closure is used).
# Needs node and tests/interop/node_modules (tests/install-deps.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:?usage: sbom_check.sh DEB_DIR [ARCH [CLOSURE]]}
arch=${2:-$(dpkg --print-architecture)}
closure=${3:-}
command -v node >/dev/null || { echo "FAIL: sbom_check.sh: node not found (tests/install-deps.sh)"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ob-sbom.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if [ -z "$closure" ]; then
  closure=$tmp/closure
  OB_LINKED_LIBS_OUT=$closure bash "$here/linked_libs.sh" "$dir" "$arch" >"$tmp/linked.log" 2>&1 || true
  [ -s "$closure" ] || { cat "$tmp/linked.log"; echo "FAIL: sbom_check.sh: no closure"; exit 1; }
fi
: >"$tmp/manifest"
shopt -s nullglob
for deb in "$dir"/*_"$arch".deb; do
  pkg=$(dpkg-deb -f "$deb" Package)
  case "$pkg" in *-dbgsym) continue ;; esac
  version=$(dpkg-deb -f "$deb" Version)
  bu=$(dpkg-deb -f "$deb" Built-Using | tr '\n' ' ')
  f=./usr/share/doc/$pkg/sbom.$arch.cdx.json
  out=$tmp/$pkg.cdx.json
  if dpkg-deb --fsys-tarfile "$deb" | tar -xOf - "$f" >"$out" 2>/dev/null && [ -s "$out" ]; then
    printf '%s\t%s\t%s\t%s\n' "$pkg" "$version" "$out" "$bu" >>"$tmp/manifest"
  else
    printf '%s\t%s\t-\t%s\n' "$pkg" "$version" "$bu" >>"$tmp/manifest"
  fi
done
[ -s "$tmp/manifest" ] || { echo "FAIL: sbom_check.sh: no *_$arch.deb in $dir"; exit 1; }
node "$here/sbom_check.mjs" "$tmp/manifest" "$closure"
