#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every public header (core/include/oncebox*.h) compiles cleanly as C11 and
# as C++11 and C++17 with -Wall -Wextra -pedantic -Werror, all of them in
# one translation unit that uses OB_VTEXT and OB_VINT.
# Usage: test_headers.sh SOURCE_DIR. Skips (exit 77) without g++.
set -u
SRC=${1:?usage: test_headers.sh SOURCE_DIR}
T=$(mktemp -d "${TMPDIR:-/tmp}/oncebox-headers-XXXXXX")
trap 'rm -rf "$T"' EXIT
fail=0

{
  for h in "$SRC"/core/include/oncebox*.h; do
    echo "#include \"$(basename "$h")\""
  done
  cat <<'C'
int use_values(void);
int use_values(void) {
  ob_value_t t = OB_VTEXT("hello");
  ob_value_t i = OB_VINT(42);
  return (int)t.n + (int)i.i + (int)OB_VNULL.type;
}
int main(void) { return use_values() == 47 ? 0 : 1; }
C
} >"$T/all.c"
cp "$T/all.c" "$T/all.cpp"

build() {  # build NAME COMPILER ARGS...
  local name=$1
  shift
  if "$@" -Wall -Wextra -pedantic -Werror -I"$SRC/core/include" \
       -o "$T/$name" 2>"$T/err" && "$T/$name"; then
    echo "ok   $name"
  else
    fail=1
    echo "FAIL $name"
    sed 's/^/  /' "$T/err" | head -30
  fi
}

build c11 gcc -std=c11 "$T/all.c"
if ! command -v g++ >/dev/null; then
  echo "SKIP C++: g++ is not installed (Debian package g++)"
  [ "$fail" = 0 ] && exit 77
  exit 1
fi
build cxx11 g++ -std=c++11 "$T/all.cpp"
build cxx17 g++ -std=c++17 "$T/all.cpp"
exit "$fail"
