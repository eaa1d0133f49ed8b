#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# linked_libs.sh DEB_DIR [ARCH]: what the terminal's packages link
# (docs/packaging.md, "What the terminal links").
#
# For every .deb of ARCH in DEB_DIR (default ARCH: this machine's; -dbgsym
# packages skipped), extracts it (dpkg-deb -x), reads the NEEDED entries
# (readelf -d) of each of its ELF files and follows them through their own
# NEEDED entries, resolving each soname in ARCH's library directories
# (/lib/<triplet>, /usr/lib/<triplet>: for a cross build, the :ARCH
# libraries tests/cross.sh installs). Then:
#   - the terminal's packages (every package whose name does not contain
#     "postgresql": oncebox, liboncebox<soversion>, liboncebox-dev) may
#     reach only the allowed libraries below; any other library fails the
#     test, a forbidden one (OpenSSL, GnuTLS, Kerberos, LDAP, SASL, libpq)
#     named with the binary that pulled it in and the chain through which;
#   - the head-office packages (name containing "postgresql") have their
#     closure printed beside, not checked.
# OB_LINKED_LIBS_OUT=FILE also writes "PACKAGE SONAME" lines, the closure of
# every package (sbom_check.mjs compares the bill of materials with it).
# Exit 0 when the terminal's packages link only what is allowed, 1 when
# not, 2 on a usage or tool error.
set -euo pipefail
dir=${1:?usage: linked_libs.sh DEB_DIR [ARCH]}
arch=${2:-$(dpkg --print-architecture)}
for t in readelf dpkg-deb dpkg-architecture; do
  command -v "$t" >/dev/null || { echo "linked_libs.sh: $t not found (binutils, dpkg-dev)"; exit 2; }
done
triplet=$(dpkg-architecture -a"$arch" -qDEB_HOST_MULTIARCH 2>/dev/null)
libdirs=("/lib/$triplet" "/usr/lib/$triplet" /lib /usr/lib)

# The allowed set, by soname without its version (docs/packaging.md has
# why): what the terminal needs, libc, SQLite, libuv, mbedTLS (tls, x509,
# crypto), cJSON and, where Debian ships it as a library (13), llhttp; and
# what those need in turn, read from Debian 12's and 13's libraries on
# amd64 and arm64: libsqlite3 needs libm and libc, mbedTLS's three need
# each other and libc, libuv, libcjson and libllhttp need libc, libc and
# libm need the dynamic loader (ld-linux-x86-64.so.2, ld-linux-aarch64.so.1,
# ld-linux-armhf.so.3). Nothing on either release needs libgcc_s,
# libpthread, libdl or librt (glibc 2.34 folded the last three into libc).
# Anything else, forbidden or merely new, fails: adding a library to the
# terminal is a decision, taken here.
allowed_re='^(libc|libm|ld-linux(-[a-z0-9_-]+)?|libsqlite3|libuv|libmbedtls|libmbedx509|libmbedcrypto|libcjson|libllhttp)\.so(\.[0-9]+)*$'
# Named forbidden, by library name (the package names differ between
# releases): the PostgreSQL client and the stacks it drags in, OpenSSL,
# GnuTLS, Kerberos, LDAP (libldap-2.5 on 12, libldap on 13), SASL. The
# terminal must not map them even by accident.
forbidden_re='^(libpq|libssl|libcrypto|libgnutls|libkrb5|libkrb5support|libk5crypto|libgssapi_krb5|libldap|libldap_r|liblber|libsasl2)(-[0-9.]+)?\.so(\.[0-9]+)*$'

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ob-linked.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
out=${OB_LINKED_LIBS_OUT:-}
[ -z "$out" ] || : >"$out"

declare -A path_of   # soname -> resolved file ("" when not found)
resolve() {  # soname -> path in ARCH's library directories
  local so=$1 d
  if [ -z "${path_of[$so]+x}" ]; then
    path_of[$so]=""
    for d in "${libdirs[@]}"; do
      if [ -e "$d/$so" ]; then path_of[$so]=$d/$so; break; fi
    done
  fi
  printf '%s' "${path_of[$so]}"
}
needed() {  # file -> its NEEDED sonames, one a line
  readelf -d "$1" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'
}

rc=0
shopt -s nullglob
all=("$dir"/*_"$arch".deb)
[ ${#all[@]} -gt 0 ] || { echo "linked_libs.sh: no *_$arch.deb in $dir"; exit 2; }
# Extract them all first: a library of one of these packages (liboncebox's,
# for a plugin that links it) resolves in its package, before the system's.
# The terminal's packages first, the head office's printed after them.
terminal=() head=()
for deb in "${all[@]}"; do
  pkg=$(dpkg-deb -f "$deb" Package)
  case "$pkg" in
    *-dbgsym) continue ;;
    *postgresql*) head+=("$pkg") ;;
    *) terminal+=("$pkg") ;;
  esac
  dpkg-deb -x "$deb" "$tmp/$pkg"
  libdirs=("$tmp/$pkg/lib/$triplet" "$tmp/$pkg/usr/lib/$triplet" "${libdirs[@]}")
done
for pkg in "${terminal[@]}" "${head[@]}"; do
  head_office=0
  case "$pkg" in *postgresql*) head_office=1 ;; esac
  x=$tmp/$pkg
  # The package's ELF files: regular files starting with \177ELF.
  elfs=()
  while IFS= read -r -d '' f; do
    [ "$(head -c4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ] && elfs+=("$f")
  done < <(find "$x" -type f -print0 | sort -z)
  if [ ${#elfs[@]} -eq 0 ]; then
    echo "$pkg ($arch): no ELF files"
    continue
  fi
  # Breadth-first from each ELF file; via[soname] is the chain that first
  # reached it (file -> soname -> ...).
  declare -A via=()
  queue=()
  for f in "${elfs[@]}"; do
    rel=/${f#"$x"/}
    while read -r so; do
      [ -n "$so" ] || continue
      if [ -z "${via[$so]+x}" ]; then via[$so]="$rel -> $so"; queue+=("$so"); fi
    done < <(needed "$f")
  done
  i=0
  missing=()
  while [ $i -lt ${#queue[@]} ]; do
    so=${queue[$i]}; i=$((i + 1))
    p=$(resolve "$so")
    if [ -z "$p" ]; then missing+=("$so"); continue; fi
    while read -r dep; do
      [ -n "$dep" ] || continue
      if [ -z "${via[$dep]+x}" ]; then via[$dep]="${via[$so]} -> $dep"; queue+=("$dep"); fi
    done < <(needed "$p")
  done
  mapfile -t closure < <(printf '%s\n' "${queue[@]}" | sort)
  if [ $head_office = 1 ]; then
    echo "$pkg ($arch, head office: printed, not checked): ${#closure[@]} libraries"
  else
    echo "$pkg ($arch): ${#closure[@]} libraries"
  fi
  bad=0
  for so in "${closure[@]}"; do
    [ -z "$out" ] || echo "$pkg $so" >>"$out"
    mark=""
    if [ $head_office = 0 ]; then
      if [[ $so =~ $forbidden_re ]]; then mark="  FORBIDDEN"; bad=1
      elif ! [[ $so =~ $allowed_re ]]; then mark="  NOT ALLOWED"; bad=1
      fi
    fi
    where=$(resolve "$so")
    case "$where" in "$tmp"/*) where="${where#"$tmp"/} (this build)" ;; esac
    printf '   %-28s %s%s\n' "$so" "$where" "$mark"
  done
  for so in "${missing[@]}"; do
    echo "   $so: not found in ${libdirs[*]} (needed by ${via[$so]})"
    bad=1
  done
  if [ $head_office = 0 ] && [ $bad = 1 ]; then
    rc=1
    echo "FAIL: $pkg links libraries outside the terminal's set:"
    for so in "${closure[@]}"; do
      if [[ $so =~ $forbidden_re ]]; then
        echo "   forbidden $so: ${via[$so]}"
      elif ! [[ $so =~ $allowed_re ]]; then
        echo "   not allowed $so: ${via[$so]}"
      fi
    done
  fi
  unset via
done
if [ $rc = 0 ]; then
  echo "linked_libs.sh: OK ($arch): the terminal's packages link only the allowed libraries"
else
  echo "linked_libs.sh: FAILED ($arch)"
fi
exit $rc
