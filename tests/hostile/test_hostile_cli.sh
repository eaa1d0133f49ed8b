#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The hostile-input matrix through the `oncebox` binary (T17 file modes, T18
# SQL injection, T19 bad input: docs/reliability.md, "The hostile-input
# matrix"). Its twin through the library is
# tests/hostile/test_hostile_lib.c; HTTP and SQS responses have their own
# matrix (tests/integration/http/test_http_hostile.c) and fuzzers
# (tests/fuzz). What test_cli.sh already covers (a newer schema, `check`
# violations, the provider's authorization variable) is not repeated.
#
# Usage: test_hostile_cli.sh [PATH/TO/oncebox]   (default $OB_BINARY_DIR/oncebox)
#
# Every case runs one command and checks:
#   - the exit code (README: 0 ok, 1 failed, 2 usage, 3 some lines
#     rejected, 4 database unusable); a signal, a timeout or a sanitizer
#     report is a crash;
#   - a distinctive substring of stderr (an empty or generic message is an
#     "unclear error");
#   - nothing lost or changed: the database dump's hash before and after a
#     rejected command is equal, and accepted bytes read back with sqlite3
#     (and `oncebox failed show --json`) equal the input byte for byte.
# A case marked with a defect id (H1...; docs/reliability.md, "Hostile
# input") is a defect already reported: it runs, its failure is printed as
# KNOWN DEFECT and counted, and if it starts passing the test fails so that
# the mark is removed.
#
# Ends with: hostile matrix (cli): N cases, 0 crashes, 0 unclear errors,
# 0 lost, 0 wrong codes; K known defects (...)
set -u
# A cross build under qemu: the emulator that starts built programs (tests/cross.sh).
: "${OB_EMULATOR:=}"
OB=${1:-${OB_BINARY_DIR:?set OB_BINARY_DIR or pass the binary}/oncebox}
# /dev/shm when writable: fsync is free there and each case opens a database.
if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then base=/dev/shm; else base=${TMPDIR:-/tmp}; fi
T=$(mktemp -d "$base/oncebox-hostile-XXXXXX")
chmod 755 "$T"
BG_PID=
cleanup() {
  [ -n "$BG_PID" ] && kill "$BG_PID" 2>/dev/null
  chmod -R u+rwX "$T" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
[ -n "${OB_HOSTILE_KEEP:-}" ] && trap - EXIT
export HOME="$T/home"   # no ~/.aws of the machine's
mkdir -p "$HOME"
unset ONCEBOX_DB ONCEBOX_OUTBOX_QUEUE_URL ONCEBOX_CONSUME_QUEUE_URL \
  ONCEBOX_PROVIDER_URL ONCEBOX_PROVIDER_ALLOW_HTTP ONCEBOX_SOURCE \
  ONCEBOX_PROVIDER_AUTHORIZATION AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY \
  AWS_SESSION_TOKEN AWS_REGION AWS_DEFAULT_REGION AWS_PROFILE \
  AWS_ENDPOINT_URL AWS_ENDPOINT_URL_SQS AWS_CA_BUNDLE \
  AWS_SHARED_CREDENTIALS_FILE AWS_CONFIG_FILE AWS_MAX_ATTEMPTS

cases=0 crashes=0 unclear=0 lost=0 wrong=0 known=0 fixed=0
known_ids=""

# verdict NAME KNOWN OK KIND DETAIL
verdict() {
  local name=$1 kn=$2 ok=$3 kind=$4 detail=$5
  if [ "$ok" = 1 ] && [ -z "$kn" ]; then return; fi
  if [ "$ok" = 1 ]; then
    fixed=$((fixed + 1))
    echo "NOW PASSES (remove the known mark $kn): $name"
    return
  fi
  if [ -n "$kn" ]; then
    known=$((known + 1))
    case " $known_ids " in *" $kn "*) ;; *) known_ids="${known_ids:+$known_ids }$kn" ;; esac
    echo "KNOWN DEFECT $kn: $name: $detail"
    return
  fi
  case $kind in
    crash) crashes=$((crashes + 1)) ;;
    unclear) unclear=$((unclear + 1)) ;;
    lost) lost=$((lost + 1)) ;;
    *) wrong=$((wrong + 1)) ;;
  esac
  echo "FAIL ($kind) $name: $detail"
  sed 's/^/    out: /' "$T/out" | head -5 | cat -v
  sed 's/^/    err: /' "$T/err" | head -5 | cat -v
}

dbsum() {  # a hash of every row and the schema; "none" if no file
  if [ -f "$1" ]; then sqlite3 -readonly "$1" .dump 2>&1 | sha256sum | cut -c1-16
  else echo none; fi
}

filesum() {  # regular files only (a FIFO would block)
  if [ -f "$1" ]; then sha256sum <"$1" | cut -c1-16
  elif [ -e "$1" ]; then echo exists
  else echo none; fi
}

hexof() { od -An -v -tx1 | tr -d ' \n' | tr a-f A-F; }

# run_case NAME WANT_EXIT ERR_SUBSTR KNOWN DB -- COMMAND...
# DB (may be "-") is hashed before and after when WANT_EXIT != 0.
run_case() {
  local name=$1 want=$2 msg=$3 kn=$4 db=$5
  shift 6
  local before after got
  cases=$((cases + 1))
  [ "$db" != - ] && before=$(dbsum "$db")
  timeout -k 5 60 "$@" >"$T/out" 2>"$T/err" </dev/null
  got=$?
  [ "$db" != - ] && after=$(dbsum "$db")
  if [ "$got" -ge 124 ] || grep -qE 'runtime error:|AddressSanitizer|LeakSanitizer|Segmentation fault' "$T/err"; then
    verdict "$name" "$kn" 0 crash "exit $got"
  elif [ "$got" != "$want" ]; then
    verdict "$name" "$kn" 0 code "exit $got, want $want; stderr: $(head -c 300 "$T/err" | tr '\n' '|' | cat -v)"
  elif [ -n "$msg" ] && ! grep -qF -- "$msg" "$T/err"; then
    verdict "$name" "$kn" 0 unclear "stderr lacks '$msg': $(head -c 300 "$T/err" | tr '\n' '|' | cat -v)"
  elif [ "$want" != 0 ] && [ ! -s "$T/err" ]; then
    verdict "$name" "$kn" 0 unclear "exit $got with nothing on stderr"
  elif [ "$want" != 0 ] && [ "$db" != - ] && [ "$before" != "$after" ]; then
    verdict "$name" "$kn" 0 lost "the database changed"
  else
    verdict "$name" "$kn" 1 "" ""
  fi
}

# check NAME KNOWN KIND CONDITION-RESULT(0/1) DETAIL: a plain assertion.
check() {
  cases=$((cases + 1))
  verdict "$1" "$2" "$4" "$3" "$5"
}

sq() { sqlite3 -readonly "${SQDB:-$DB}" "$1" 2>&1; }

UUID=0190b6d8-3ae7-7ca2-a653-6ff2d5a6f230
SQLI="'); DROP TABLE queue;--"
NAME_MSG="must be 1..128 printable ASCII characters"
DB="$T/h.db"
$OB_EMULATOR "$OB" --db "$DB" init >/dev/null || { echo "init failed"; exit 1; }

# ---- 1. message envelopes through `enqueue` arguments -----------------------
E="enqueue --type HostileEcho --body {}"
ids=(""  "order-42" "$SQLI" "%s%n%s%n%x" $'\e[2J'"$UUID" $'\xff\xfe'"$UUID"
     "{$UUID}" "$UUID"$'\n' " $UUID" "urn:uuid:$UUID" "0190b6d83ae77ca2a6536ff2d5a6f230"
     "$(head -c 100000 /dev/zero | tr '\0' 9)")
for i in "${!ids[@]}"; do
  run_case "id #$i $(printf '%.24s' "${ids[$i]}" | cat -v)" 2 "is not a UUID" "" "$DB" -- \
    $OB_EMULATOR "$OB" --db "$DB" $E --id "${ids[$i]}"
done
types=("" "$(head -c 129 /dev/zero | tr '\0' T)" $'Pay\e[31mment' $'Payment\nCaptured'
       $'Pay\tment' $'Zahlung\xc3\xa9' $'Pay\xff' $'Pay\xed\xa0\x80' " Payment" "Payment ")
for i in "${!types[@]}"; do
  run_case "type #$i $(printf '%.24s' "${types[$i]}" | cat -v)" 2 "message type $NAME_MSG" "" "$DB" -- \
    $OB_EMULATOR "$OB" --db "$DB" enqueue --type "${types[$i]}" --id "$UUID" --body '{}'
done
queues=("" "$(head -c 129 /dev/zero | tr '\0' q)" $'q\e]0;pwned\a' $'q\nq' $'q\xc0\xaf')
for i in "${!queues[@]}"; do
  run_case "queue #$i $(printf '%.24s' "${queues[$i]}" | cat -v)" 2 "queue name $NAME_MSG" "" "$DB" -- \
    $OB_EMULATOR "$OB" --db "$DB" $E --id "$UUID" --queue "${queues[$i]}"
done
headers=("" "[1]" "null" '{"a":' '{}x' '{"a":1,}' $'\xef\xbb\xbf{}' $'{"a":"\xff"}'
         $'{"a":"\xc0\xaf"}' '{"a":"\ud800"}' $'{"a":"\e[2J"}'
         "$(printf '{"a":%.0s' $(seq 65))1$(printf '}%.0s' $(seq 65))")
for i in "${!headers[@]}"; do
  run_case "headers #$i $(printf '%.24s' "${headers[$i]}" | cat -v)" 2 "headers must be a JSON object" "" "$DB" -- \
    $OB_EMULATOR "$OB" --db "$DB" $E --id "$UUID" --headers "${headers[$i]}"
done
for d in -1 1e3 "" 0x10 " -5" 99999999999999999999; do
  run_case "--delay '$d'" 2 "--delay wants milliseconds >= 0" "" "$DB" -- \
    $OB_EMULATOR "$OB" --db "$DB" $E --id "$UUID" --delay "$d"
done
run_case "missing --body" 2 "--type, --id and --body are required" "" "$DB" -- \
  $OB_EMULATOR "$OB" --db "$DB" enqueue --type HostileEcho --id "$UUID"
run_case "--body without a value" 2 "requires an argument" "" "$DB" -- \
  $OB_EMULATOR "$OB" --db "$DB" enqueue --type HostileEcho --id "$UUID" --body

# Accepted envelopes: stored byte for byte, then handled into the failure
# store (no handler for HostileEcho; PaymentCaptured rejects non-JSON), and
# read back with sqlite3 and `failed show --json`.
n=0
declare -a acc_id acc_body acc_known_json
accept_env() {  # accept_env NAME KNOWN_FOR_JSON BODY [ARGS...]
  local name=$1 kj=$2 body=$3 id
  shift 3
  n=$((n + 1))
  id=$(printf '0190b6d8-3ae7-7ca2-a653-7%011d' "$n")
  run_case "accept: $name" 0 "" "" "$DB" -- $OB_EMULATOR "$OB" --db "$DB" enqueue --id "$id" --body "$body" "$@"
  local got want
  got=$(sq "SELECT hex(body) FROM queue WHERE message_id = '$id'")
  want=$(printf '%s' "$body" | hexof)
  check "accept: $name: queue row bytes" "" lost "$([ "$got" = "$want" ] && echo 1 || echo 0)" "stored $got, sent $want"
  acc_id[$n]=$id
  acc_body[$n]=$body
  acc_known_json[$n]=$kj
}
RND=$(head -c 200000 /dev/urandom | tr -d '\0' | head -c 100000)
accept_env "empty body" "" "" --type HostileEcho
accept_env "invalid UTF-8" "" $'\xff\xfe\xfd\x80' --type PaymentCaptured
accept_env "overlong encodings" "" $'\xc0\xaf\xe0\x80\xaf\xf0\x80\x80\xaf' --type PaymentCaptured
accept_env "lone surrogates (CESU-8)" "" $'\xed\xa0\x80\xed\xbf\xbf' --type PaymentCaptured
accept_env "SQL injection" "" "$SQLI" --type PaymentCaptured
accept_env "SQL injection 2" "" "\"; DELETE FROM processed_message; --" --type HostileEcho
accept_env "format string" "" "%s%n%s%n%99999999d%p" --type PaymentCaptured
accept_env "ANSI escapes" "" $'\e[2J\e]0;pwned\a\e[31mred' --type PaymentCaptured
accept_env "100 KB of random bytes" "" "$RND" --type PaymentCaptured
accept_env "type and queue are SQL injections" "" "x" --type "$SQLI" --queue "$SQLI"
accept_env "type is a format string" "" "x" --type "%s%n%x%p"
accept_env "headers with SQL injection" "" "x" --type HostileEcho --headers "{\"q\":\"$SQLI\"}"
accept_env "upper-case id stored lower case" "" "x" --type HostileEcho
# A body with NUL bytes cannot be an argument: a producer through the
# library stores one (tests/hostile/test_hostile_lib.c); here the queue row is
# set with sqlite3 before it is handled.
accept_env "NUL bytes (set with sqlite3)" "" "a" --type PaymentCaptured
sqlite3 "$DB" "UPDATE queue SET body = X'6100620000' WHERE message_id = '${acc_id[$n]}'"
acc_body[$n]=NUL
# (the id above is lower case; an upper-case one:)
cases=$((cases + 1))
$OB_EMULATOR "$OB" --db "$DB" enqueue --type HostileEcho --id "0190B6D8-3AE7-7CA2-A653-7FFFFFFFFFFF" --body x >/dev/null 2>&1
verdict "upper-case id stored lower case" "" "$([ "$(sq "SELECT count(*) FROM queue WHERE message_id = '0190b6d8-3ae7-7ca2-a653-7fffffffffff'")" = 1 ] && echo 1 || echo 0)" lost "not found lower case"

run_case "run: everything to the failure store" 0 "" "" - -- $OB_EMULATOR "$OB" --db "$DB" --log-level error run --until-idle --batch 3
for i in $(seq 1 "$n"); do
  id=${acc_id[$i]}
  got=$(sq "SELECT hex(body) FROM failed_message WHERE message_id = '$id'")
  want=$(printf '%s' "${acc_body[$i]}" | hexof)
  [ "${acc_body[$i]}" = NUL ] && want=6100620000
  rows=$(sq "SELECT count(*) FROM failed_message WHERE message_id = '$id'")
  check "failure store bytes #$i" "" lost "$([ "$rows" = 1 ] && [ "$got" = "$want" ] && echo 1 || echo 0)" "$rows row(s), stored '$(printf '%.60s' "$got")', sent '$(printf '%.60s' "$want")'"
  fid=$(sq "SELECT id FROM failed_message WHERE message_id = '$id'")
  $OB_EMULATOR "$OB" --db "$DB" failed show "$fid" --json >"$T/fj" 2>"$T/err"
  # A body that is not UTF-8 comes as bodyBase64 (body null).
  if jq -e 'has("bodyBase64")' <"$T/fj" >/dev/null; then
    got=$(jq -j .bodyBase64 <"$T/fj" | base64 -d | hexof)
  else
    got=$(jq -j .body <"$T/fj" | hexof)
  fi
  check "failed show --json body #$i" "${acc_known_json[$i]}" lost "$([ "$got" = "$want" ] && echo 1 || echo 0)" "--json body differs from the stored bytes"
done
# The type/queue injection strings came back unchanged too.
check "type and queue bytes in the failure store" "" lost \
  "$([ "$(sq "SELECT count(*) FROM failed_message WHERE type = '''); DROP TABLE queue;--' AND queue_name = '''); DROP TABLE queue;--'")" = 1 ] && echo 1 || echo 0)" "not found"
check "schema intact" "" lost "$([ "$(sq "SELECT count(*) FROM sqlite_schema WHERE name IN ('queue','failed_message','processed_message','outbox_event')")" = 4 ] && echo 1 || echo 0)" "a table is gone"
# `failed show ID` (text) must not pass terminal escapes through.
fid=$(sq "SELECT id FROM failed_message WHERE message_id = '${acc_id[8]}'")
$OB_EMULATOR "$OB" --db "$DB" failed show "$fid" >"$T/out" 2>"$T/err"
check "failed show: no raw ESC on the terminal" "" unclear "$(grep -q $'\e' "$T/out" && echo 0 || echo 1)" "the body's escape sequences are printed raw"
$OB_EMULATOR "$OB" --db "$DB" failed show >"$T/out" 2>"$T/err"
check "failed show (list): no raw ESC" "" unclear "$(grep -q $'\e' "$T/out" && echo 0 || echo 1)" "escape sequences in the list"

# A delay that overflows now + delay: must be refused or stay delayed.
DD="$T/delay.db"
# Refused (exit 2), or accepted and delayed; never ready at once. Under
# UBSan a signed overflow would abort the program (H1, fixed in 2a0033b).
for d in 9223372036854775807 9223372036854774807; do
  rm -f "$DD"*
  cases=$((cases + 1))
  $OB_EMULATOR "$OB" --db "$DD" enqueue --type HostileEcho --id "$UUID" --body x --delay "$d" >"$T/out" 2>"$T/err"
  rc=$?
  at=$(sqlite3 -readonly "$DD" "SELECT available_at FROM queue" 2>&1)
  if [ $rc = 2 ] && [ -z "$at" ]; then ok=1
  elif [ $rc = 0 ] && [ -n "$at" ] && [ "${at#-}" = "$at" ]; then ok=1
  else ok=0; fi
  verdict "--delay $d: refused or delayed, never ready at once" "" $ok lost \
    "exit $rc, available_at '$at' $(grep -o 'runtime error: [^|]*' "$T/err" | head -1)"
done

# ---- 2. NDJSON ----------------------------------------------------------------
ND="$T/n.db"
$OB_EMULATOR "$OB" --db "$ND" init >/dev/null
BIGA=$(head -c 1048576 /dev/zero | tr '\0' a)
line() { printf '{"id":"0190b6d8-3ae7-7ca2-a653-8%011d","type":"HostileEcho","body":%s%s}' "$1" "$2" "${3:-}"; }
{
  printf '\xef\xbb\xbf'; line 1 '"bom on the first line"'; printf '\n'                 # 1 good
  printf '%s' '{"id":"0190b6d8-3ae7-7ca2-a653-800000000002","type":"Hos'; printf '\n'  # 2 truncated
  line 3 '"crlf"'; printf '\r\n'                                                        # 3 good
  printf '\n'                                                                           # 4 blank
  printf '[1,2,3]\n'                                                                    # 5 array
  line 6 $'"\xff\xc0\xaf\xed\xa0\x80 raw invalid UTF-8"'; printf '\n'                   # 6 not UTF-8
  printf 'this is not json\n'                                                           # 7
  line 8 "\"$(head -c 10485760 /dev/zero | tr '\0' z)\""; printf '\n'                  # 8 10 MiB
  line 9 '"after the huge line"'; printf '\n'                                           # 9 good
  printf '{"id":"not-a-uuid","type":"HostileEcho","body":{}}\n'                         # 10
  printf '{"id":"0190b6d8-3ae7-7ca2-a653-800000000011","body":{}}\n'                    # 11
  printf '{"id":"0190b6d8-3ae7-7ca2-a653-800000000012","type":"HostileEcho"}\n'         # 12
  printf '{"id":"0190b6d8-3ae7-7ca2-a653-800000000013","type":"HostileEcho","body":tru}\n'  # 13 bad literal
  line 14 '{}' ',"headers":[1]'; printf '\n'                                            # 14
  line 15 '{}' ',"queue":5'; printf '\n'                                                # 15
  printf '{"id":"0190b6d8-3ae7-7ca2-a653-800000000016","type":"HostileEcho","queue":"%s","body":"%s"}\n' "$SQLI" "$SQLI"  # 16 good
  line 17 '{"sql":"'"$SQLI"'","fmt":"%s%n","esc":"\u001b[2J"}'; printf '\n'           # 17 good
  printf '{"id":"0190b6d8-3ae7-7ca2-a653-800000000018","type":"%s","body":{}}\n' "$(head -c 129 /dev/zero | tr '\0' T)"  # 18
  line 19 '"\ud800"'; printf '\n'                                                       # 19 lone surrogate
  printf '\r\n'                                                                         # 20 blank (CR)
  printf '   \n'                                                                        # 21 spaces only
  printf '{"id":"0190B6D8-3AE7-7CA2-A653-800000000022","type":"HostileEcho","body":"upper-case id"}\n'  # 22 good
  line 23 "\"$BIGA\""; printf '\n'                                                      # 23 good: 1 MiB
  printf '{"id":"0190b6d8-3ae7-7ca2-a653-800000000024","type":"HostileEcho","body":"%%s%%n","headers":{"k":"'"$SQLI"'"}}\n'  # 24 good
  line 25 '"no newline at the end"'                                                     # 25 good
} >"$T/mixed.ndjson"
good_lines="1 3 9 16 17 22 23 24 25"
declare -A want_body=(
  [1]='bom on the first line' [3]='crlf'
  [9]='after the huge line' [16]="$SQLI"
  [17]='{"sql":"'"$SQLI"'","fmt":"%s%n","esc":"\u001b[2J"}'
  [22]='upper-case id' [23]="$BIGA" [24]='%s%n' [25]='no newline at the end')
declare -A want_err=(
  [2]='line 2: rejected: not valid JSON' [5]='line 5: rejected: not a JSON object'
  [6]='line 6: rejected: not valid JSON'
  [7]='line 7: rejected: not valid JSON' [8]='line 8: rejected: longer than 2097152 bytes'
  [10]='line 10: rejected: "id" is not a UUID' [11]='line 11: rejected: missing string field "type"'
  [12]='line 12: rejected: missing field "body"' [13]='line 13: rejected: not valid JSON'
  [14]='line 14: rejected: "headers" must be an object' [15]='line 15: rejected: "queue" must be a string'
  [18]='line 18: rejected: "type" must be 1..128 characters' [19]='line 19: rejected: not valid JSON'
  [21]='line 21: rejected: not valid JSON')
run_case "ndjson: mixed good and bad lines exit 3" 3 "enqueued 9 message(s), rejected 14 line(s)" "" - -- \
  $OB_EMULATOR "$OB" --db "$ND" enqueue --ndjson "$T/mixed.ndjson"
cp "$T/err" "$T/mixed.err"
SQDB=$ND
for l in "${!want_err[@]}"; do
  check "ndjson line $l reason" "" unclear "$(grep -qF -- "${want_err[$l]}" "$T/mixed.err" && echo 1 || echo 0)" "stderr lacks '${want_err[$l]}'"
done
for l in $good_lines; do
  id=$(printf '0190b6d8-3ae7-7ca2-a653-8%011d' "$l")
  got=$(sq "SELECT hex(body) FROM queue WHERE message_id = '$id'")
  want=$(printf '%s' "${want_body[$l]}" | hexof)
  check "ndjson line $l stored byte for byte" "" lost "$([ "$got" = "$want" ] && echo 1 || echo 0)" "stored $(printf '%.60s' "$got"), want $(printf '%.60s' "$want")"
done
check "ndjson: exactly the good lines committed" "" lost \
  "$([ "$(sq "SELECT count(*) FROM queue")" = 9 ] && echo 1 || echo 0)" "$(sq "SELECT count(*) FROM queue") rows"
check "ndjson: the SQL injection queue name kept" "" lost \
  "$([ "$(sq "SELECT count(*) FROM queue WHERE queue_name = '''); DROP TABLE queue;--'")" = 1 ] && echo 1 || echo 0)" "not found"
check "ndjson: headers kept" "" lost \
  "$([ "$(sq "SELECT headers FROM queue WHERE message_id = '0190b6d8-3ae7-7ca2-a653-800000000024'")" = '{"k":"'"$SQLI"'"}' ] && echo 1 || echo 0)" "changed"
unset SQDB

# One line per file: cases whose expected outcome is a reported defect.
nd_one() {  # nd_one NAME KNOWN_EXIT KNOWN_STORE WANT_EXIT ERR_SUBSTR CONTENT [SQL EXPECTED]
  local name=$1 kr=$2 ks=$3 want=$4 msg=$5 content=$6 sqlc=${7:-} expect=${8:-}
  local f="$T/one.ndjson" db="$T/one.db" got
  rm -f "$db" "$db-wal" "$db-shm"
  [ "$content" = - ] || printf '%s\n' "$content" >"$f"   # -: written by the caller
  $OB_EMULATOR "$OB" --db "$db" init >/dev/null
  run_case "ndjson: $name" "$want" "$msg" "$kr" - -- $OB_EMULATOR "$OB" --db "$db" enqueue --ndjson "$f"
  if [ -n "$sqlc" ]; then
    got=$(sqlite3 -readonly "$db" "$sqlc" 2>&1)
    check "ndjson: $name: stored as given" "$ks" lost "$([ "$got" = "$expect" ] && echo 1 || echo 0)" "stored '$got', want '$expect'"
  else
    got=$(sqlite3 -readonly "$db" "SELECT count(*) FROM queue")
    check "ndjson: $name: nothing committed" "$ks" lost "$([ "$got" = 0 ] && echo 1 || echo 0)" "$got row(s) committed: $(sqlite3 -readonly "$db" "SELECT message_id, type, queue_name, hex(body) FROM queue" | tr '\n' ' ')"
  fi
}
I=0190b6d8-3ae7-7ca2-a653-900000000001
nd_one 'escaped NUL in the body' "" "" 0 "" \
  '{"id":"'$I'","type":"T","body":"a\u0000b"}' "SELECT hex(body) FROM queue" 610062
nd_one 'escaped NUL in a header value' "" "" 0 "" \
  '{"id":"'$I'","type":"T","body":"x","headers":{"h":"a\u0000b"}}' "SELECT headers FROM queue" '{"h":"a\u0000b"}'
nd_one 'escaped NUL in the queue name' "" "" 3 'queue name' \
  '{"id":"'$I'","type":"T","body":"x","queue":"q\u0000z"}'
nd_one 'amount 2^53-1 kept exactly' "" "" 0 "" \
  '{"id":"'$I'","type":"PaymentCaptured","body":{"paymentId":"5c4080b1-b5d2-4e91-8de8-ec0e119d7647","merchantId":"3727331a-b533-4c6e-a0f8-48532237307b","amountInMinorUnits":9007199254740991,"currency":"EUR"}}' \
  "SELECT body FROM queue" '{"paymentId":"5c4080b1-b5d2-4e91-8de8-ec0e119d7647","merchantId":"3727331a-b533-4c6e-a0f8-48532237307b","amountInMinorUnits":9007199254740991,"currency":"EUR"}'
nd_one 'amount 9000000000000001 kept exactly' "" "" 0 "" \
  '{"id":"'$I'","type":"T","body":{"amountInMinorUnits":9000000000000001}}' "SELECT body FROM queue" '{"amountInMinorUnits":9000000000000001}'
nd_one 'number 1e400 kept' "" "" 0 "" \
  '{"id":"'$I'","type":"T","body":{"n":1e400}}' "SELECT body FROM queue" '{"n":1e400}'
nd_one 'amount 100.0000000000000001 kept' "" "" 0 "" \
  '{"id":"'$I'","type":"T","body":{"n":100.0000000000000001}}' "SELECT body FROM queue" '{"n":100.0000000000000001}'
nd_one 'duplicate "id" keys refused' "" "" 3 'duplicate' \
  '{"id":"'$I'","id":"0190b6d8-3ae7-7ca2-a653-900000000002","type":"T","body":"x"}'
nd_one 'trailing garbage refused' "" "" 3 'not valid JSON: more after the value' \
  '{"id":"'$I'","type":"T","body":"x"} trailing'
nd_one 'type with a control character: a clear reason' "" "" 3 'printable ASCII' \
  '{"id":"'$I'","type":"\u0001","body":"x"}'
nd_one 'empty queue name: a clear reason' "" "" 3 'queue name' \
  '{"id":"'$I'","type":"T","body":"x","queue":""}'
nd_one 'headers with invalid UTF-8: a clear reason' "" "" 3 'not valid JSON (RFC 8259: UTF-8' \
  $'{"id":"'$I$'","type":"T","body":"x","headers":{"h":"\xff"}}'
nd_one 'body 1 MiB + 1: the limit named' "" "" 3 '1048576' \
  '{"id":"'$I'","type":"T","body":"'"${BIGA}b"'"}'
nd_one 'body duplicate keys stored as given' "" "" 0 "" \
  '{"id":"'$I'","type":"T","body":{"a":1,"a":2}}' "SELECT body FROM queue" '{"a":1,"a":2}'
nd_one 'body null' "" "" 0 "" \
  '{"id":"'$I'","type":"T","body":null}' "SELECT body FROM queue" 'null'
nd_one 'a misspelt field refused, not dropped' "" "" 3 'unknown field' \
  '{"id":"'$I'","type":"T","body":"x","hedaers":{"k":"v"}}'
nd_one 'escapes in a string body decoded exactly' "" "" 0 "" \
  '{"id":"'$I'","type":"T","body":"\u00e9\ud83d\ude00\"\\\/\b\t"}' "SELECT hex(body) FROM queue" C3A9F09F9880225C2F0809
nd_one 'whitespace around an object body not stored' "" "" 0 "" \
  '{"id":"'$I'","type":"T","body": {"a": [1, 2]} ,"queue":"q"}' "SELECT body || '|' || queue_name FROM queue" '{"a": [1, 2]}|q'
nd_one 'a type escaped in the line decoded' "" "" 0 "" \
  '{"id":"'$I'","type":"Pay\u006dent","body":"x"}' "SELECT type FROM queue" 'Payment'
nd_one 'raw control character inside a string refused' "" "" 3 'not valid JSON' \
  $'{"id":"'$I$'","type":"T","body":"a\x01b"}'
printf '{"id":"%s","type":"Host\x00ileEcho","body":"x"}\n' "$I" >"$T/one.ndjson"
nd_one 'raw NUL inside a string refused' "" "" 3 'not valid JSON: a NUL byte' -
# Input that cannot be read is an error, not an empty file.
mkdir -p "$T/a-directory"
run_case "ndjson: a directory" 1 "Is a directory" "" "$ND" -- $OB_EMULATOR "$OB" --db "$ND" enqueue --ndjson "$T/a-directory"
cases=$((cases + 1))
timeout 30 $OB_EMULATOR "$OB" --db "$ND" enqueue --ndjson - <&- >"$T/out" 2>"$T/err"
rc=$?
verdict "ndjson: stdin closed" "" "$([ $rc != 0 ] && echo 1 || echo 0)" code "exit $rc: $(tr '\n' '|' <"$T/err")"
run_case "ndjson: missing file" 2 "/nonexistent.ndjson: No such file or directory" "" "$ND" -- $OB_EMULATOR "$OB" --db "$ND" enqueue --ndjson /nonexistent.ndjson
run_case "ndjson: empty file name" 2 "No such file or directory" "" "$ND" -- $OB_EMULATOR "$OB" --db "$ND" enqueue --ndjson ""
: >"$T/empty.ndjson"
run_case "ndjson: empty file" 0 "enqueued 0 message(s), rejected 0 line(s)" "" - -- $OB_EMULATOR "$OB" --db "$ND" enqueue --ndjson "$T/empty.ndjson"
head -c 3000000 /dev/urandom >"$T/binary.ndjson"
run_case "ndjson: 3 MB of random bytes" 3 "rejected" "" - -- $OB_EMULATOR "$OB" --db "$ND" enqueue --ndjson "$T/binary.ndjson"
check "ndjson: random bytes committed nothing" "" lost "$([ "$(sqlite3 -readonly "$ND" "SELECT count(*) FROM queue")" = 9 ] && echo 1 || echo 0)" "rows added"

# ---- 3. command-line arguments ---------------------------------------------
C="$T/c.db"
$OB_EMULATOR "$OB" --db "$C" init >/dev/null
$OB_EMULATOR "$OB" --db "$C" enqueue --type HostileEcho --id "$UUID" --body x >/dev/null
arg() { run_case "args: $1" "$2" "$3" "${4:-}" "$C" -- $OB_EMULATOR "$OB" "${@:5}"; }
arg "--batch 99999999999999999999" 2 "--batch wants 1..10000" "" --db "$C" run --until-idle --batch 99999999999999999999
arg "--batch -1" 2 "--batch wants 1..10000" "" --db "$C" run --until-idle --batch -1
arg "--batch 0" 2 "--batch wants 1..10000" "" --db "$C" run --until-idle --batch 0
arg "--batch 10001" 2 "--batch wants 1..10000" "" --db "$C" run --until-idle --batch 10001
arg "--batch ''" 2 "--batch wants 1..10000" "" --db "$C" run --until-idle --batch ""
arg "--batch 1e3" 2 "--batch wants 1..10000" "" --db "$C" run --until-idle --batch 1e3
arg "--batch 0x10" 2 "--batch wants 1..10000" "" --db "$C" run --until-idle --batch 0x10
arg "--batch with no value" 2 "requires an argument" "" --db "$C" run --until-idle --batch
arg "--prefetch 0" 2 "--prefetch wants 1..10" "" --db "$C" run --until-idle --prefetch 0
arg "--prefetch 11" 2 "--prefetch wants 1..10" "" --db "$C" run --until-idle --prefetch 11
arg "run --frob" 2 "unrecognized option '--frob'" "" --db "$C" run --frob
arg "run extra argument" 2 "unexpected argument 'extra'" "" --db "$C" run extra
arg "--provider-timeout 0" 2 "" "" --db "$C" run --until-idle --provider-url https://psp.test --provider-timeout 0
arg "--provider-timeout -1" 2 "" "" --db "$C" run --until-idle --provider-url https://psp.test --provider-timeout -1
arg "outbox drain --timeout -5" 2 "--timeout wants seconds >= 1" "" --db "$C" outbox drain --timeout -5
arg "outbox drain --timeout 1e3" 2 "--timeout wants seconds >= 1" "" --db "$C" outbox drain --timeout 1e3
arg "outbox drain --timeout 99999999999999999999" 2 "--timeout wants seconds >= 1" "" --db "$C" outbox drain --timeout 99999999999999999999
arg "outbox frob" 2 "unknown subcommand 'frob'" "" --db "$C" outbox frob
arg "failed show -1" 2 "invalid option" "" --db "$C" failed show -1
arg "failed show 99999999999999999999" 2 "want at most one numeric ID" "" --db "$C" failed show 99999999999999999999
arg "failed show abc" 2 "want at most one numeric ID" "" --db "$C" failed show abc
arg "failed retry abc" 2 "'abc' is not an id" "" --db "$C" failed retry abc --force
arg "failed remove 0" 2 "'0' is not an id" "" --db "$C" failed remove 0 --force
arg "failed remove --all (no terminal, no --force)" 2 "add --force" "" --db "$C" failed remove --all
arg "failed frob" 2 "unknown subcommand 'frob'" "" --db "$C" failed frob
arg "demo --payments -1" 2 "--payments wants 10..1000000" "" --db "$C" demo --payments -1
arg "demo --payments 99999999999999999999" 2 "--payments wants 10..1000000" "" --db "$C" demo --payments 99999999999999999999
arg "effects show --state ''" 2 "--state wants" "" --db "$C" effects show --state ""
arg "effects resolve with a 10 KB key" 1 "no effect with key" "" --db "$C" effects resolve "$(head -c 10000 /dev/zero | tr '\0' k)" --failed x
arg "stats extra" 2 "unexpected argument 'extra'" "" --db "$C" stats extra
arg "check extra" 2 "unexpected argument 'extra'" "" --db "$C" check extra
arg "gc --frob" 2 "unexpected argument '--frob'" "" --db "$C" gc --frob
arg "init extra" 2 "unexpected argument 'extra'" "" --db "$C" init extra
arg "unknown command" 2 "unknown command 'frobnicate'" "" --db "$C" frobnicate
arg "empty command" 2 "unknown command ''" "" --db "$C" ""
arg "unknown global option" 2 "unknown option '--frob'" "" --frob --db "$C" stats
arg "--log-level loud" 2 "--log-level expects one of error, warn, info, debug, not 'loud'" "" --log-level loud --db "$C" stats
arg "--log-level with no value" 2 "needs a value" "" --db "$C" --log-level
arg "--db with no value" 2 "needs a value" "" --db
arg "--db ''" 2 "no database: pass --db FILE or set ONCEBOX_DB" "" --db "" stats
arg "--db=" 2 "no database: pass --db FILE or set ONCEBOX_DB" "" --db= stats
arg "sqs send without --queue-url" 2 "--queue-url is required" "" sqs send --body x
arg "sqs --attr without =" 2 "--attr wants NAME=VALUE" "" sqs send --queue-url https://sqs.test/1/q --body x --attr novalue
arg "sqs --resolve garbage" 2 "resolve" "" sqs send --queue-url https://sqs.test/1/q --body x --resolve garbage

# ---- 4. --db targets -------------------------------------------------------
R="$T/real.db"
$OB_EMULATOR "$OB" --db "$R" init >/dev/null
mkdir -p "$T/dir.db"
printf 'hello, I am not a database\n' >"$T/text.db"
head -c 65536 /dev/urandom >"$T/random.db"
sqlite3 "$T/other.db" "CREATE TABLE accounts(x); INSERT INTO accounts VALUES (42)"
ln -s "$R" "$T/link.db"
ln -s "$T/nowhere.db" "$T/dangling.db"
mkfifo "$T/fifo.db"
dbt() {  # dbt NAME WANT MSG KNOWN PATH: the file must not change
  local before after
  before=$(filesum "$5")
  run_case "--db $1" "$2" "$3" "$4" - -- $OB_EMULATOR "$OB" --db "$5" stats
  after=$(filesum "$5")
  [ -p "$5" ] && after=$before
  check "--db $1: file unchanged" "" lost \
    "$([ "$before" = "$after" ] && echo 1 || echo 0)" "the file changed"
}
dbt "a directory" 4 "is not a regular file" "" "$T/dir.db"
dbt "a text file" 4 "file is not a database" "" "$T/text.db"
dbt "random bytes" 4 "file is not a database" "" "$T/random.db"
dbt "another application's database" 4 "is not an oncebox database" "" "$T/other.db"
dbt "a symlink to a database" 4 "symbolic link" "" "$T/link.db"
dbt "a dangling symlink" 4 "symbolic link" "" "$T/dangling.db"
check "--db a dangling symlink: target not created" "" lost "$([ -e "$T/nowhere.db" ] && echo 0 || echo 1)" "created through the link"
dbt "a FIFO" 4 "is not a regular file" "" "$T/fifo.db"
dbt "/dev/null" 4 "is not a regular file" "" /dev/null
dbt "a missing directory" 4 "No such file or directory" "" "$T/no/such/dir.db"
dbt "a 5000-byte name" 4 "File name too long" "" "$T/$(head -c 5000 /dev/zero | tr '\0' a)"
NL="$T/new"$'\n'"line.db"
run_case "--db a path with a newline" 0 "" "" - -- $OB_EMULATOR "$OB" --db "$NL" init
check "--db a path with a newline: 0600" "" lost "$([ "$(stat -c %a "$NL" 2>/dev/null)" = 600 ] && echo 1 || echo 0)" "mode $(stat -c %a "$NL" 2>&1)"
# The permission cases run oncebox as nobody, who must be able to reach the
# binary and the work folder (a checkout inside a 0700 directory is not).
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null &&
   setpriv --reuid=65534 --regid=65534 --clear-groups env $OB_EMULATOR "$OB" --version \
     >/dev/null 2>&1 &&
   setpriv --reuid=65534 --regid=65534 --clear-groups env test -x "$T"; then
  AS_NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"
  cp "$R" "$T/noperm.db"
  chmod 0 "$T/noperm.db"
  before=$(filesum "$T/noperm.db")
  run_case "--db a file without permission" 4 "Permission denied" "" - -- $AS_NOBODY $OB_EMULATOR "$OB" --db "$T/noperm.db" stats
  check "--db a file without permission: unchanged" "" lost "$([ "$before" = "$(filesum "$T/noperm.db")" ] && echo 1 || echo 0)" "changed"
  mkdir "$T/ro" && chmod 555 "$T/ro"
  run_case "--db in a directory without write permission" 4 "Permission denied" "" - -- $AS_NOBODY $OB_EMULATOR "$OB" --db "$T/ro/x.db" init
else
  echo "permission cases skipped: not root, no setpriv, or nobody cannot run $OB in $T"
fi

# ---- 5. configuration: the environment and ~/.aws ----------------------------
V="$T/v.db"
$OB_EMULATOR "$OB" --db "$V" init >/dev/null
CRED="AWS_ACCESS_KEY_ID=AKIDHOSTILE AWS_SECRET_ACCESS_KEY=hostile/SECRET+canary0123456789 AWS_REGION=eu-west-1"
Q=https://sqs.eu-west-1.amazonaws.com/123456789012/q
cfg() {  # cfg NAME WANT MSG KNOWN ENV... (runs `run --until-idle`)
  local name=$1 want=$2 msg=$3 kn=$4
  shift 4
  run_case "env: $name" "$want" "$msg" "$kn" "$V" -- env "$@" $OB_EMULATOR "$OB" --db "$V" run --until-idle
  check "env: $name: no secret in the output" "${LEAK_KN:-}" lost \
    "$(cat "$T/out" "$T/err" | grep -qE 'hostile/SECRET|FILESECRET|p4ssw0rd' && echo 0 || echo 1)" "a secret was printed"
}
run_case "env: ONCEBOX_DB is a directory" 4 "is not a regular file" "" - -- env ONCEBOX_DB="$T/dir.db" $OB_EMULATOR "$OB" stats
run_case "env: ONCEBOX_DB empty" 2 "no database: pass --db FILE or set ONCEBOX_DB" "" - -- env ONCEBOX_DB= $OB_EMULATOR "$OB" stats
run_case "env: ONCEBOX_DB with a newline" 0 "" "" - -- env ONCEBOX_DB="$T/env"$'\n'"db" $OB_EMULATOR "$OB" init
cfg "outbox queue URL garbage" 2 "outbox queue URL must be an http(s):// SQS queue URL" "" $CRED ONCEBOX_OUTBOX_QUEUE_URL=garbage
cfg "outbox queue URL ftp://" 2 "outbox queue URL must be an http(s):// SQS queue URL" "" $CRED ONCEBOX_OUTBOX_QUEUE_URL=ftp://x/q
cfg "outbox queue URL with user info" 2 "user information" "" $CRED ONCEBOX_OUTBOX_QUEUE_URL=https://user:p4ssw0rd@sqs.eu-west-1.amazonaws.com/1/q
cfg "outbox queue URL with a newline" 2 "printable ASCII" "" $CRED ONCEBOX_OUTBOX_QUEUE_URL="$Q"$'\n2026-01-01T00:00:00.000Z error forged'
cfg "outbox queue URL of 100 KB" 2 "longer than" "" $CRED ONCEBOX_OUTBOX_QUEUE_URL="$Q$(head -c 100000 /dev/zero | tr '\0' q)"
cfg "consume queue URL garbage" 2 "queue URL must be an http(s)://" "" $CRED ONCEBOX_CONSUME_QUEUE_URL=garbage
cfg "consume queue URL with a newline" 2 "printable ASCII" "" $CRED ONCEBOX_CONSUME_QUEUE_URL="$Q"$'\nforged'
cfg "consume queue URL of 100 KB" 2 "longer than 2048" "" $CRED ONCEBOX_CONSUME_QUEUE_URL="$Q$(head -c 100000 /dev/zero | tr '\0' q)"
cfg "consume queue URL with user info" 2 "user information" "" $CRED ONCEBOX_CONSUME_QUEUE_URL=https://user:p4ssw0rd@sqs.eu-west-1.amazonaws.com/1/q
cfg "provider URL garbage" 2 "must start with https://" "" ONCEBOX_PROVIDER_URL=garbage
cfg "provider URL http:// without allow" 2 "plain http://: refused" "" ONCEBOX_PROVIDER_URL=http://psp.test
cfg "provider URL with user info" 2 "no user info" "" ONCEBOX_PROVIDER_URL=https://user:p4ssw0rd@psp.test
cfg "provider URL with a space" 2 "not a valid URL" "" ONCEBOX_PROVIDER_URL="https://psp.te st"
cfg "provider URL with CRLF" 2 "not a valid URL" "" ONCEBOX_PROVIDER_URL=$'https://psp.test/\r\nX-Evil: 1'
cfg "AWS_ENDPOINT_URL_SQS with user info" 2 "AWS_ENDPOINT_URL_SQS is not a valid endpoint" "" $CRED ONCEBOX_OUTBOX_QUEUE_URL=$Q AWS_ENDPOINT_URL_SQS=https://u:p4ssw0rd@127.0.0.1:9
cfg "AWS_ENDPOINT_URL_SQS garbage" 2 "AWS_ENDPOINT_URL_SQS is not a valid endpoint" "" $CRED ONCEBOX_OUTBOX_QUEUE_URL=$Q AWS_ENDPOINT_URL_SQS=garbage
cfg "AWS_REGION with a newline" 2 "AWS_REGION is not a valid region" "" $CRED ONCEBOX_OUTBOX_QUEUE_URL=$Q AWS_REGION=$'eu-west-1\nX-Evil: 1'
cfg "AWS_REGION of 100 KB" 2 "AWS_REGION is not a valid region" "" $CRED ONCEBOX_OUTBOX_QUEUE_URL=$Q AWS_REGION="$(head -c 100000 /dev/zero | tr '\0' a)"
cfg "AWS_PROFILE missing" 2 "profile 'missing' not found" "" AWS_REGION=eu-west-1 AWS_PROFILE=missing ONCEBOX_OUTBOX_QUEUE_URL=$Q
cfg "no credentials" 2 "no AWS credentials" "" AWS_REGION=eu-west-1 ONCEBOX_OUTBOX_QUEUE_URL=$Q
cfg "AWS_SECRET_ACCESS_KEY with a newline" 2 "AWS_SECRET_ACCESS_KEY contains spaces or control characters" "" $CRED ONCEBOX_OUTBOX_QUEUE_URL=$Q AWS_SECRET_ACCESS_KEY=$'hostile/SECRET\nX'
cfg "AWS_SESSION_TOKEN with CRLF" 2 "AWS_SESSION_TOKEN contains spaces or control characters" "" $CRED ONCEBOX_OUTBOX_QUEUE_URL=$Q AWS_SESSION_TOKEN=$'hostile/SECRET\r\nX: y'
cfg "AWS_ACCESS_KEY_ID without the secret" 2 "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not" "" AWS_ACCESS_KEY_ID=AKIDHOSTILE AWS_REGION=eu-west-1 ONCEBOX_OUTBOX_QUEUE_URL=$Q
mkdir -p "$HOME/.aws"
CF="$HOME/.aws/credentials"
AWSQ="AWS_REGION=eu-west-1 ONCEBOX_OUTBOX_QUEUE_URL=$Q"
printf 'garbage FILESECRET\n' >"$CF"
cfg "credentials file garbage" 2 "credentials:1: expected 'key = value' or '[section]'" "" $AWSQ
head -c 4096 /dev/urandom >"$CF"
cfg "credentials file binary" 2 "contains a NUL byte (not a text file)" "" $AWSQ
printf '[default]\naws_access_key_id = AKIDFILE\naws_secret_access_key = FILESECRET with space\n' >"$CF"
cfg "credentials file secret with a space" 2 "credentials:3: aws_secret_access_key is empty or contains spaces or control characters" "" $AWSQ
printf '[default]\naws_access_key_id = AKIDFILE\n[default]\naws_secret_access_key = FILESECRET\n' >"$CF"
cfg "credentials file repeated section" 2 "credentials:3:" "" $AWSQ
printf '[default]\nrole_arn = arn:aws:iam::1:role/x\n' >"$CF"
cfg "credentials file unsupported provider" 2 "role_arn" "" $AWSQ
head -c 2000000 /dev/zero | tr '\0' '#' >"$CF"
cfg "credentials file of 2 MB" 1 "larger than 1048576 bytes" "" $AWSQ
rm -f "$CF" && mkdir "$CF"
cfg "credentials file is a directory" 1 "not a regular file" "" $AWSQ
rmdir "$CF"
printf '[default]\naws_access_key_id = AKIDFILE\naws_secret_access_key = FILESECRET\n' >"$CF"
chmod 0644 "$CF"
# World-readable credentials are used without a word, as the AWS CLI does
# (documented in docs/reliability.md; not a crash, nothing printed).
cfg "credentials file world-readable (used, as by the AWS CLI)" 0 "" "" $AWSQ
if [ -n "${AS_NOBODY:-}" ]; then
  mkdir -p "$T/nobody/.aws" && chmod -R 777 "$T/nobody"
  printf '[default]\naws_access_key_id = AKIDFILE\naws_secret_access_key = FILESECRET\n' >"$T/nobody/.aws/credentials"
  chmod 0 "$T/nobody/.aws/credentials"
  run_case "env: credentials file unreadable" 1 "cannot open: Permission denied" "" - -- \
    $AS_NOBODY env HOME="$T/nobody" $AWSQ $OB_EMULATOR "$OB" --db "$T/nobody/x.db" run --until-idle
fi
rm -f "$CF"

# ---- 6. file modes through the binary (T17) ----------------------------------
# The library test is tests/integration/test_storage.c (test_file_modes):
# db, -wal and -shm 0600 under umask 022 and 000. Here: the same through
# `oncebox`, while a `run` holds the -wal and -shm open.
for m in 022 000; do
  P="$T/mode$m.db"
  (umask $m && $OB_EMULATOR "$OB" --db "$P" enqueue --type HostileEcho --id "$UUID" --body x >/dev/null 2>&1)
  (umask $m && exec $OB_EMULATOR "$OB" --db "$P" --log-level error run >/dev/null 2>&1) &
  BG_PID=$!
  for _ in $(seq 50); do [ -e "$P-shm" ] && break; sleep 0.1; done
  sleep 0.3
  modes="$(stat -c %a "$P" "$P-wal" "$P-shm" 2>&1 | tr '\n' ' ')"
  check "umask $m: db, -wal, -shm are 0600" "" lost "$([ "$modes" = "600 600 600 " ] && echo 1 || echo 0)" "modes: $modes"
  kill -TERM "$BG_PID" 2>/dev/null
  wait "$BG_PID" 2>/dev/null
  BG_PID=
done
# An empty file that already exists (an installer's `touch`, umask 022) is
# turned into the database: it must end 0600 like a created one.
P="$T/pre-existing.db"
(umask 022 && : >"$P")
$OB_EMULATOR "$OB" --db "$P" init >/dev/null 2>&1
check "a pre-existing empty 0644 file becomes a 0600 database" "" lost \
  "$([ "$(stat -c %a "$P")" = 600 ] && echo 1 || echo 0)" "mode $(stat -c %a "$P") (and -wal/-shm follow it)"

known_ids=$(printf "%s\n" $known_ids | sort -V | paste -sd" " -)
echo "hostile matrix (cli): $cases cases, $crashes crashes, $unclear unclear errors, $lost lost, $wrong wrong codes; $known known defects${known_ids:+ ($known_ids)}"
[ $((crashes + unclear + lost + wrong + fixed)) -eq 0 ]
