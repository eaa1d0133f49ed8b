#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ob_cli_main as an embedder uses it: a tiny main (embedder_main.c) that
# registers an "OrderPlaced" handler gets every command with that handler
# on the engines they open; the stock `oncebox` moves the same message to
# the failure store as no_handler.
# Usage: test_embedder.sh PATH/TO/embedder PATH/TO/oncebox
set -u
# A cross build under qemu: the emulator that starts built programs (tests/cross.sh).
: "${OB_EMULATOR:=}"
EMB=${1:?usage: test_embedder.sh EMBEDDER ONCEBOX}
OB=${2:?usage: test_embedder.sh EMBEDDER ONCEBOX}
T=$(mktemp -d "${TMPDIR:-/tmp}/oncebox-embedder-XXXXXX")
trap 'rm -rf "$T"' EXIT
pass=0
fail=0

check() {  # check NAME EXPECTED_EXIT COMMAND...
  local name=$1 want=$2
  shift 2
  "$@" >"$T/out" 2>"$T/err"
  local got=$?
  if [ "$got" = "$want" ]; then pass=$((pass + 1)); else
    fail=$((fail + 1))
    echo "FAIL $name: exit $got, want $want"
    sed 's/^/  out: /' "$T/out" | head -20
    sed 's/^/  err: /' "$T/err" | head -20
  fi
}

contains() {  # contains NAME FILE TEXT
  if grep -qF -- "$3" "$T/$2"; then pass=$((pass + 1)); else
    fail=$((fail + 1))
    echo "FAIL $1: $2 lacks '$3'"
    sed 's/^/  /' "$T/$2" | head -20
  fi
}

lacks() {  # lacks NAME FILE TEXT
  if grep -qF -- "$3" "$T/$2"; then
    fail=$((fail + 1)); echo "FAIL $1: $2 has '$3'"
  else pass=$((pass + 1)); fi
}

ID=0190b6d8-3ae7-7ca2-a653-6ff2d5a6f231
BODY='{"orderId":"o-1"}'

# The embedder's binary: handled, one row, nothing failed.
DB="$T/vendor.db"
check "embedder --help" 0 "$EMB" --help
contains "embedder --help lists commands" out "effects"
check "embedder enqueue" 0 "$EMB" --db "$DB" enqueue --type OrderPlaced --id "$ID" --body "$BODY"
check "embedder run" 0 "$EMB" --db "$DB" run --until-idle
contains "embedder run handled it" err "stopped: 1 handled (1 done"
lacks "embedder run: no no_handler" err "no handler"
check "embedder stats" 0 "$EMB" --db "$DB" stats --json
contains "embedder stats: processed" out '"processed":1'
contains "embedder stats: nothing failed" out '"failed":0'
check "embedder failed show" 0 "$EMB" --db "$DB" failed show
lacks "embedder failed show: no no_handler" out "no_handler"
if command -v sqlite3 >/dev/null; then
  check "the handler's row" 0 sqlite3 "$DB" "SELECT id || ' ' || body FROM vendor_orders"
  contains "the handler's row" out "$ID $BODY"
else
  echo "SKIP the row check: no sqlite3"
fi
check "embedder redelivery" 0 "$EMB" --db "$DB" enqueue --type OrderPlaced --id "$ID" --body "$BODY"
check "embedder run again" 0 "$EMB" --db "$DB" run --until-idle
check "embedder check" 0 "$EMB" --db "$DB" check

# The stock binary has no such handler: the same message is no_handler.
SDB="$T/stock.db"
check "stock enqueue" 0 $OB_EMULATOR "$OB" --db "$SDB" enqueue --type OrderPlaced --id "$ID" --body "$BODY"
check "stock run" 0 $OB_EMULATOR "$OB" --db "$SDB" run --until-idle
check "stock failed show" 0 $OB_EMULATOR "$OB" --db "$SDB" failed show
contains "stock: no_handler" out "no_handler"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
