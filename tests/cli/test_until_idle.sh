#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `run --until-idle` ends when nothing is due within the idle horizon
# (docs/decisions/0020-until-idle.md): a message delayed by a day is left
# scheduled, the run exits 0 and says what is scheduled and when the
# earliest of it is due. Usage: test_until_idle.sh PATH/TO/oncebox
set -u
: "${OB_EMULATOR:=}"
OB=${1:?usage: test_until_idle.sh PATH/TO/oncebox}
T=$(mktemp -d "${TMPDIR:-/tmp}/oncebox-idle-XXXXXX")
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/lib.sh"
DB="$T/t.db"

pay() {  # pay N -> a PaymentCaptured body
  printf '{"paymentId":"5c4080b1-b5d2-4e91-8de8-%012d","merchantId":"3727331a-b533-4c6e-a0f8-48532237307b","amountInMinorUnits":100,"currency":"EUR"}' "$1"
}
id() { printf '0190b6d8-3ae7-7ca2-a653-%012d' "$1"; }

check "init" 0 $OB_EMULATOR "$OB" --db "$DB" init
for n in 1 2 3; do
  check "enqueue due $n" 0 $OB_EMULATOR "$OB" --db "$DB" enqueue --type PaymentCaptured --id "$(id $n)" --body "$(pay $n)"
done
# The day the delayed message falls due (either side of a midnight).
DAY1=$(date -u -d '+1 day' +%Y-%m-%d)
check "enqueue a day later" 0 $OB_EMULATOR "$OB" --db "$DB" enqueue --type PaymentCaptured --id "$(id 9)" --body "$(pay 9)" --delay 86400000

# The bound is generous (qemu-user on a loaded machine): before the fix the
# run waited the whole day and `timeout` ended it with 124.
check "run --until-idle ends with a day-delayed message left" 0 timeout 60 $OB_EMULATOR "$OB" --db "$DB" run --until-idle
contains "the due ones handled" err "stopped: 3 handled (3 done"
contains "one still queued" err "1 still queued"
contains "scheduled: the count" err "scheduled: 1 message(s)"
if grep -Eq 'the earliest due at [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z' "$T/err"; then
  pass=$((pass + 1))
else
  fail=$((fail + 1)); echo "FAIL the earliest due time in ISO 8601 UTC"; sed 's/^/  /' "$T/err"
fi
DAY2=$(date -u -d '+1 day' +%Y-%m-%d)
if grep -Eq "the earliest due at ($DAY1|$DAY2)T" "$T/err"; then
  pass=$((pass + 1))
else
  fail=$((fail + 1)); echo "FAIL the earliest due time is a day ahead"; sed 's/^/  /' "$T/err"
fi
lacks "not stalled" err "not done:"
check "stats after" 0 $OB_EMULATOR "$OB" --db "$DB" stats --json
equals "payouts" "$(grep -o '"payouts":[[:space:]]*[0-9]*' "$T/out" | grep -o '[0-9]*$')" 3
equals "delayed" "$(grep -o '"delayed":[[:space:]]*[0-9]*' "$T/out" | head -1 | grep -o '[0-9]*$')" 1

# Nothing scheduled: no scheduled line.
check "run again, nothing due" 0 timeout 60 $OB_EMULATOR "$OB" --db "$DB" --log-level error run --until-idle
contains "still scheduled" err "scheduled: 1 message(s)"

# The horizon decides: 0 leaves a message due in 1.5 s for later; the
# default (the poll interval in force: 5 minutes while the WAL file is
# watched, 1 s where it can't be) or 10 minutes wait for it and handle it.
check "enqueue 1.5 s later" 0 $OB_EMULATOR "$OB" --db "$DB" enqueue --type PaymentCaptured --id "$(id 4)" --body "$(pay 4)" --delay 1500
check "run --idle-horizon 0 leaves it" 0 timeout 60 $OB_EMULATOR "$OB" --db "$DB" run --until-idle --idle-horizon 0
contains "nothing handled" err "stopped: 0 handled"
contains "both scheduled" err "scheduled: 2 message(s)"
check "run --idle-horizon waits for it" 0 timeout 60 $OB_EMULATOR "$OB" --db "$DB" run --until-idle --idle-horizon 600000
contains "the soon-due one handled" err "stopped: 1 handled (1 done"
contains "the day-delayed one still scheduled" err "scheduled: 1 message(s)"
# The setting, as every setting: the environment too.
check "enqueue 1.5 s later (env)" 0 $OB_EMULATOR "$OB" --db "$DB" enqueue --type PaymentCaptured --id "$(id 5)" --body "$(pay 5)" --delay 1500
check "ONCEBOX_IDLE_HORIZON waits for it" 0 env ONCEBOX_IDLE_HORIZON=10m timeout 60 $OB_EMULATOR "$OB" --db "$DB" run --until-idle
contains "the soon-due one handled (env)" err "stopped: 1 handled (1 done"

check "--idle-horizon refuses a negative" 2 $OB_EMULATOR "$OB" --db "$DB" run --until-idle --idle-horizon -5
check "--idle-horizon in run --help" 0 $OB_EMULATOR "$OB" run --help
contains "run --help names it" out "--idle-horizon"

report
