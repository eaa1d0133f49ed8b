#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# exported_symbols.sh LIBONCEBOX.so INCLUDE_DIR...
# The dynamic symbols liboncebox.so defines must be exactly the functions
# and variables that INCLUDE_DIR/oncebox*.h (every INCLUDE_DIR: the tree
# keeps the modules' headers apart, an install puts them in one) declare
# OB_EXTERN: none missing,
# none extra (no llhttp_*, no internal ob_http_*, ob__*, ...).
# Exit 77 (skip) without nm or cc.
set -euo pipefail
lib=$1
shift
incs=("$@") iflags=()
for d in "${incs[@]}"; do iflags+=("-I$d"); done
for t in nm cc; do
  command -v "$t" >/dev/null || { echo "SKIP: $t not found"; exit 77; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Declared: preprocess each header as the library sees it (OB_BUILDING), so
# comments and conditionals are gone and OB_EXTERN has become the attribute;
# split into declarations; the identifier before the first '(' (a function)
# or at the end (a variable) of each one that carries the attribute.
for d in "${incs[@]}"; do
  for h in "$d"/oncebox*.h; do
    cc -E -P -DOB_BUILDING "${iflags[@]}" "$h"
  done
done | tr '\n' ' ' | tr ';{}' '\n\n\n' |
  grep -F '__attribute__((visibility("default"))) extern' |
  sed -e 's/.*visibility("default"))) extern//' -e 's/(.*//' \
      -e 's/\[.*//' -e 's/=.*//' |
  grep -oE '[A-Za-z_][A-Za-z0-9_]*[[:space:]]*$' | tr -d ' \t' |
  sort -u >"$tmp/declared"

# Exported: defined dynamic symbols (functions, data), less the ELF
# bookkeeping the linker adds and what a sanitizer build (OB_SANITIZE)
# instruments in (__asan_*, __odr_asan_gen_*, ...).
nm -D --defined-only "$lib" | awk '{print $NF}' | sed 's/@.*//' |
  grep -vxE '_init|_fini|__bss_start|_edata|_end' |
  grep -vE '^_*(asan|odr_asan|ubsan|sanitizer|lsan)' | sort -u >"$tmp/exported"

nd=$(wc -l <"$tmp/declared") ne=$(wc -l <"$tmp/exported")
missing=$(comm -23 "$tmp/declared" "$tmp/exported")
extra=$(comm -13 "$tmp/declared" "$tmp/exported")
echo "declared OB_EXTERN: $nd; exported by $(basename "$lib"): $ne"
rc=0
if [ -n "$missing" ]; then
  echo "FAIL: declared OB_EXTERN but not exported:"; echo "$missing" | sed 's/^/  /'; rc=1
fi
if [ -n "$extra" ]; then
  echo "FAIL: exported but not declared OB_EXTERN in a public header:"; echo "$extra" | sed 's/^/  /'; rc=1
fi
[ "$nd" -gt 0 ] || { echo "FAIL: no OB_EXTERN declaration found in ${incs[*]}"; rc=1; }
[ $rc -eq 0 ] && echo "exported_symbols: OK ($ne symbols, all declared)"
exit $rc
