#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# man_pages.sh SOURCE_DIR: every page of docs/man renders without a warning,
# through groff -man -ww -z and, where man-db is installed, man --warnings
# (which also runs its preprocessors and checks line lengths at 80
# columns). A warning on stderr fails the test. Exit 77 without groff.
set -u
src=${1:?usage: man_pages.sh SOURCE_DIR}
command -v groff >/dev/null || { echo "SKIP: groff not found (groff-base)"; exit 77; }
rc=0 n=0
for page in "$src"/docs/man/*.[1-9]; do
  [ -e "$page" ] || continue
  n=$((n + 1))
  out=$(LC_ALL=C.UTF-8 groff -man -ww -z "$page" 2>&1) || { echo "FAIL: groff exit $? on $page"; rc=1; }
  if [ -n "$out" ]; then echo "FAIL: groff warnings on $page:"; echo "$out"; rc=1; fi
  if command -v man >/dev/null; then
    out=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null) \
      || { echo "FAIL: man exit $? on $page"; rc=1; }
    if [ -n "$out" ]; then echo "FAIL: man warnings on $page:"; echo "$out"; rc=1; fi
  fi
done
[ "$n" -gt 0 ] || { echo "FAIL: no man page in $src/docs/man"; exit 1; }
[ $rc = 0 ] && echo "man_pages: $n page(s) without warnings"
exit $rc
