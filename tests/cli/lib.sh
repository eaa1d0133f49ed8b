# SPDX-License-Identifier: Apache-2.0
# The assertions of the CLI test scripts (sourced). The script sets T (its
# temporary directory) first; check writes the command's output to $T/out
# and $T/err. A FILE argument is a path, or a name under $T ("out", "err").
pass=0
fail=0

check() {  # check NAME EXPECTED_EXIT COMMAND...
  local name=$1 want=$2
  shift 2
  "$@" >"$T/out" 2>"$T/err"
  local got=$?
  if [ "$got" = "$want" ]; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "FAIL $name: exit $got, want $want"
    sed 's/^/  out: /' "$T/out" | head -20
    sed 's/^/  err: /' "$T/err" | head -20
  fi
}

_file() {  # a path as given, else under $T
  case "$1" in /*) printf '%s' "$1" ;; *) printf '%s' "$T/$1" ;; esac
}

contains() {  # contains NAME FILE TEXT
  local f
  f=$(_file "$2")
  if grep -qF -- "$3" "$f"; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "FAIL $1: $2 lacks '$3'"
    sed 's/^/  /' "$f" | head -60
  fi
}

lacks() {  # lacks NAME FILE TEXT
  local f
  f=$(_file "$2")
  if grep -qF -- "$3" "$f"; then
    fail=$((fail + 1))
    echo "FAIL $1: $2 has '$3'"
    sed 's/^/  /' "$f" | head -20
  else
    pass=$((pass + 1))
  fi
}

equals() {  # equals NAME GOT WANT
  if [ "$2" = "$3" ]; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL $1: got '$2', want '$3'"; fi
}

report() {  # the last line of every script; its status is the script's
  echo "$pass passed, $fail failed"
  [ "$fail" -eq 0 ]
}
