#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every source file of the project carries its license line
# (docs/decisions/0016-license.md): SPDX-License-Identifier: Apache-2.0 in
# its first three lines. Usage: spdx.sh SOURCE_DIR
set -u
src=${1:?usage: spdx.sh SOURCE_DIR}
cd "$src" || exit 2
missing=0
while IFS= read -r f; do
  case "$f" in
    *node_modules/*|tests/fuzz/corpus/*|tests/fuzz/crashers/*) continue ;;
    *.c|*.h|*.mjs|*.sh|*CMakeLists.txt|*.cmake|*.cmake.in|.ci/run) ;;
    *) continue ;;
  esac
  if ! head -3 "$f" | grep -q 'SPDX-License-Identifier: Apache-2.0'; then
    echo "no SPDX line: $f"
    missing=$((missing + 1))
  fi
# Pruned: build directories (build*, and obj-<triplet>, debhelper's) and
# what a package build stages under debian/ (tmp/, the packages' trees).
done < <(find . \( -path ./build\* -o -path ./.git -o -path './obj-*' \
                   -o -path './debian/*' -type d \) -prune -o -type f -print |
         sed 's|^\./||')
[ "$missing" = 0 ] || { echo "$missing file(s) without the license line"; exit 1; }
echo "spdx: every source file carries SPDX-License-Identifier: Apache-2.0"
