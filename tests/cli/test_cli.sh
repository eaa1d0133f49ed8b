#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The oncebox program end to end: every command, its exit codes, --json, and
# bad input. Usage: test_cli.sh PATH/TO/oncebox
set -u
# A cross build under qemu: the emulator that starts built programs (tests/cross.sh).
: "${OB_EMULATOR:=}"
OB=${1:?usage: test_cli.sh PATH/TO/oncebox}
T=$(mktemp -d "${TMPDIR:-/tmp}/oncebox-cli-XXXXXX")
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/lib.sh"
DB="$T/t.db"

P1='{"paymentId":"5c4080b1-b5d2-4e91-8de8-ec0e119d7647","merchantId":"3727331a-b533-4c6e-a0f8-48532237307b","amountInMinorUnits":12500,"currency":"EUR"}'
E1=0190b6d8-3ae7-7ca2-a653-6ff2d5a6f230

check "no command" 2 $OB_EMULATOR "$OB"
check "--help" 0 $OB_EMULATOR "$OB" --help
contains "--help lists exit codes" out "Exit codes"
check "--version" 0 $OB_EMULATOR "$OB" --version
check "unknown command" 2 $OB_EMULATOR "$OB" --db "$DB" frobnicate
check "no db" 2 env -u ONCEBOX_DB $OB_EMULATOR "$OB" stats
for c in init enqueue run failed stats check gc demo effects; do
  check "$c --help" 0 $OB_EMULATOR "$OB" "$c" --help
  contains "$c --help shows usage" out "usage: oncebox"
done

check "init" 0 $OB_EMULATOR "$OB" --db "$DB" init
equals "db mode" "$(stat -c %a "$DB")" 600
check "enqueue" 0 $OB_EMULATOR "$OB" --db "$DB" enqueue --type PaymentCaptured --id "$E1" --body "$P1"
check "enqueue again (redelivery)" 0 $OB_EMULATOR "$OB" --db "$DB" enqueue --type PaymentCaptured --id "$E1" --body "$P1"
check "enqueue non-uuid" 2 $OB_EMULATOR "$OB" --db "$DB" enqueue --type PaymentCaptured --id order-42 --body "$P1"
contains "non-uuid reason" err "is not a UUID"
check "enqueue missing body" 2 $OB_EMULATOR "$OB" --db "$DB" enqueue --type PaymentCaptured --id "$E1"

# NDJSON: good lines commit, bad lines are reported by number, exit 3.
cat >"$T/in.ndjson" <<NDJ
{"id":"0190b6d8-3ae7-7ca2-a653-000000000001","type":"PaymentCaptured","body":{"paymentId":"5c4080b1-b5d2-4e91-8de8-000000000001","merchantId":"3727331a-b533-4c6e-a0f8-48532237307b","amountInMinorUnits":100,"currency":"EUR"}}
this line is not json
{"id":"not-a-uuid","type":"PaymentCaptured","body":{}}

{"id":"0190b6d8-3ae7-7ca2-a653-000000000002","type":"PaymentCaptured","body":{"paymentId":"5c4080b1-b5d2-4e91-8de8-000000000002","merchantId":"3727331a-b533-4c6e-a0f8-48532237307b","amountInMinorUnits":-5,"currency":"EUR"}}
{"type":"PaymentCaptured","body":{}}
NDJ
check "ndjson partial" 3 $OB_EMULATOR "$OB" --db "$DB" enqueue --ndjson "$T/in.ndjson"
contains "ndjson line 2" err "line 2: rejected: not valid JSON"
contains "ndjson line 3" err 'line 3: rejected: "id" is not a UUID'
contains "ndjson line 6" err 'line 6: rejected: missing string field "id"'
contains "ndjson summary" err "enqueued 2 message(s), rejected 3 line(s)"
check "ndjson stdin" 0 sh -c "head -1 '$T/in.ndjson' | $OB_EMULATOR '$OB' --db '$DB' enqueue --ndjson -"

check "stats" 0 $OB_EMULATOR "$OB" --db "$DB" stats
contains "stats ready" out "queue:     5 ready"
check "run until idle" 0 $OB_EMULATOR "$OB" --db "$DB" --log-level error run --until-idle --batch 4
check "stats json" 0 $OB_EMULATOR "$OB" --db "$DB" stats --json
equals "payouts" "$(grep -o '"payouts":[[:space:]]*[0-9]*' "$T/out" | grep -o '[0-9]*$')" 2
# The first "failed" is the failure store's ("effects" has one too).
equals "failed" "$(grep -o '"failed":[[:space:]]*[0-9]*' "$T/out" | head -1 | grep -o '[0-9]*$')" 1

check "failed show" 0 $OB_EMULATOR "$OB" --db "$DB" failed show
contains "failed show reason" out "amountInMinorUnits must be > 0"
check "failed show id" 0 $OB_EMULATOR "$OB" --db "$DB" failed show 1
contains "failed show detail" out "error class:   unrecoverable"
check "failed show json" 0 $OB_EMULATOR "$OB" --db "$DB" failed show --json
contains "failed show json field" out '"errorClass":'
check "failed show stats" 0 $OB_EMULATOR "$OB" --db "$DB" failed show --stats
contains "failed stats" out "1 failed message(s)"
check "failed show missing" 1 $OB_EMULATOR "$OB" --db "$DB" failed show 99
check "failed retry --all without force" 2 $OB_EMULATOR "$OB" --db "$DB" failed retry --all </dev/null
check "failed retry" 0 $OB_EMULATOR "$OB" --db "$DB" failed retry 1 </dev/null
check "run again" 0 $OB_EMULATOR "$OB" --db "$DB" --log-level error run --until-idle
check "failed after replay" 0 $OB_EMULATOR "$OB" --db "$DB" failed show --json
check "failed remove --all" 0 $OB_EMULATOR "$OB" --db "$DB" failed remove --all --force
contains "removed" out "removed: 1 message(s)"
check "check ok" 0 $OB_EMULATOR "$OB" --db "$DB" check
contains "check ok text" out "all invariants hold"
check "check json" 0 $OB_EMULATOR "$OB" --db "$DB" check --json
contains "check json ok" out '"ok":true'
check "gc" 0 $OB_EMULATOR "$OB" --db "$DB" gc
check "gc json" 0 $OB_EMULATOR "$OB" --db "$DB" gc --json
contains "gc json" out '"deleted":'

# check reports a violation and exits 1.
sqlite3 "$DB" "DELETE FROM outbox_event" 2>/dev/null && {
  check "check violation" 1 $OB_EMULATOR "$OB" --db "$DB" check
  contains "violation text" out "VIOLATION: payout"
  check "check json violation" 1 $OB_EMULATOR "$OB" --db "$DB" check --json
  contains "check json false" out '"ok":false'
}

# A database from a newer oncebox is refused with exit 4.
cp "$DB" "$T/new.db"
sqlite3 "$T/new.db" "PRAGMA user_version=99" && {
  check "newer schema" 4 $OB_EMULATOR "$OB" --db "$T/new.db" stats
  contains "newer schema reason" err "newer than this oncebox"
}

# run stops on SIGTERM with exit 0. The signal goes once run says it is
# handling (sd_notify's READY=1, received here by socat), not after a fixed
# sleep: slow starts (an emulator, valgrind) came before the handler.
socat -u UNIX-RECV:"$T/notify.sock" OPEN:"$T/notify.out",creat,append &
spid=$!
for _ in $(seq 100); do [ -S "$T/notify.sock" ] && break; sleep 0.1; done
NOTIFY_SOCKET="$T/notify.sock" $OB_EMULATOR "$OB" --db "$DB" --log-level error run >/dev/null 2>&1 &
pid=$!
for _ in $(seq 600); do grep -q READY=1 "$T/notify.out" 2>/dev/null && break; sleep 0.1; done
kill -TERM $pid
wait $pid
equals "run SIGTERM exit" "$?" 0
kill $spid 2>/dev/null; wait $spid 2>/dev/null || true
contains "run said READY=1" notify.out "READY=1"

# The fence's commands that need no provider (the HTTPS ones are in
# tests/integration/fence).
FX="$T/fx.db"
check "effects init" 0 $OB_EMULATOR "$OB" --db "$FX" init
check "effects no subcommand" 2 $OB_EMULATOR "$OB" --db "$FX" effects
check "effects unknown subcommand" 2 $OB_EMULATOR "$OB" --db "$FX" effects frob
check "effects show empty" 0 $OB_EMULATOR "$OB" --db "$FX" effects show
contains "effects show header" out "REFERENCE/REASON"
contains "effects show count" out "0 effect(s)"
check "effects show json empty" 0 $OB_EMULATOR "$OB" --db "$FX" effects show --json
equals "effects show json prints nothing" "$(cat "$T/out")" ""
check "effects show parked" 0 $OB_EMULATOR "$OB" --db "$FX" effects show --state parked --json
check "effects show bad state" 2 $OB_EMULATOR "$OB" --db "$FX" effects show --state lost
contains "effects bad state reason" err "--state wants pending"
check "effects show missing key" 1 $OB_EMULATOR "$OB" --db "$FX" effects show charge:none
contains "effects show missing key reason" err "no effect with key 'charge:none'"
check "effects resolve missing" 1 $OB_EMULATOR "$OB" --db "$FX" effects resolve charge:none --confirmed ch_1
contains "effects resolve missing reason" err "no effect with key 'charge:none'"
check "effects resolve no verdict" 2 $OB_EMULATOR "$OB" --db "$FX" effects resolve charge:none
check "effects resolve both verdicts" 2 $OB_EMULATOR "$OB" --db "$FX" effects resolve charge:none --confirmed a --failed b
check "effects resolve no key" 2 $OB_EMULATOR "$OB" --db "$FX" effects resolve --failed b
check "effects reconcile no provider" 2 env -u ONCEBOX_PROVIDER_URL $OB_EMULATOR "$OB" --db "$FX" effects reconcile
contains "effects reconcile no provider reason" err "no provider to ask: pass --provider-url"
check "run http provider refused" 2 env -u ONCEBOX_PROVIDER_ALLOW_HTTP $OB_EMULATOR "$OB" --db "$FX" run --until-idle --provider-url http://127.0.0.1:9
contains "run http provider reason" err "plain http://: refused"
contains "run http provider hint" err "--provider-allow-http"
check "run http provider refused (env)" 2 env -u ONCEBOX_PROVIDER_ALLOW_HTTP ONCEBOX_PROVIDER_URL=http://127.0.0.1:9 $OB_EMULATOR "$OB" --db "$FX" run --until-idle
check "reconcile http provider refused" 2 env -u ONCEBOX_PROVIDER_ALLOW_HTTP $OB_EMULATOR "$OB" --db "$FX" effects reconcile --provider-url http://127.0.0.1:9
check "run bad provider scheme" 2 $OB_EMULATOR "$OB" --db "$FX" run --until-idle --provider-url ftp://example.test
contains "run bad provider scheme reason" err "must start with https://"
check "run bad provider timeout" 2 $OB_EMULATOR "$OB" --db "$FX" run --until-idle --provider-url https://example.test --provider-timeout 0
# Provider credentials: from the environment only, never echoed.
check "run --help names the authorization variable" 0 $OB_EMULATOR "$OB" run --help
contains "run --help authorization" out "ONCEBOX_PROVIDER_AUTHORIZATION"
check "effects --help names the authorization variable" 0 $OB_EMULATOR "$OB" effects --help
contains "effects --help authorization" out "ONCEBOX_PROVIDER_AUTHORIZATION"
check "no authorization option" 2 $OB_EMULATOR "$OB" --db "$FX" run --until-idle --provider-url https://127.0.0.1:9 --provider-authorization x
AUTH_NL=$(printf 'Bearer sk_cli_canary_5f1e2d
X-Evil: 1')
for c in "run --until-idle" "effects reconcile"; do
  # shellcheck disable=SC2086
  check "$c authorization with a newline" 2 env ONCEBOX_PROVIDER_AUTHORIZATION="$AUTH_NL" $OB_EMULATOR "$OB" --db "$FX" $c --provider-url https://127.0.0.1:9
  contains "$c authorization reason" err "authorization contains a control character"
  contains "$c authorization names the variable" err "ONCEBOX_PROVIDER_AUTHORIZATION"
  lacks "$c authorization not echoed (err)" err "sk_cli_canary_5f1e2d"
  lacks "$c authorization not echoed (out)" out "sk_cli_canary_5f1e2d"
  lacks "$c authorization injected line not echoed" err "X-Evil"
done
check "run authorization too long" 2 env ONCEBOX_PROVIDER_AUTHORIZATION="Bearer $(head -c 8200 /dev/zero | tr '\0' a)" $OB_EMULATOR "$OB" --db "$FX" run --until-idle --provider-url https://127.0.0.1:9
contains "run authorization too long reason" err "longer than 8192 bytes"
lacks "run authorization too long not echoed" err "aaaaaaaa"
check "run with authorization, nothing to do" 0 env ONCEBOX_PROVIDER_AUTHORIZATION="Bearer sk_cli_canary_5f1e2d" $OB_EMULATOR "$OB" --db "$FX" --log-level debug run --until-idle --provider-url https://127.0.0.1:9
lacks "run with authorization not echoed (err)" err "sk_cli_canary_5f1e2d"
lacks "run with authorization not echoed (out)" out "sk_cli_canary_5f1e2d"
check "run with provider, nothing to do" 0 $OB_EMULATOR "$OB" --db "$FX" --log-level error run --until-idle --provider-url https://127.0.0.1:9
check "stats effects" 0 $OB_EMULATOR "$OB" --db "$FX" stats
contains "stats effects line" out "effects:   0 pending, 0 unknown (0 parked), 0 confirmed, 0 failed"
contains "stats fence line" out "fence:     0 claims, 0 provider 2xx (0 repeated for one key)"
check "stats effects json" 0 $OB_EMULATOR "$OB" --db "$FX" stats --json
contains "stats json effects" out '"effects":'
contains "stats json unfenced" out '"unfencedSuccesses":'

# The size cap: suffixes, the reserve's bounds, exit 6 and the stats line.
CAP="$T/cap.db"
check "max-db-bytes bad suffix" 2 $OB_EMULATOR "$OB" --db "$CAP" --max-db-bytes 64X init
contains "max-db-bytes bad suffix reason" err "expects a size such as 64M"
check "max-db-bytes env bad" 2 env ONCEBOX_MAX_DB_BYTES=lots $OB_EMULATOR "$OB" --db "$CAP" init
contains "max-db-bytes env reason" err "ONCEBOX_MAX_DB_BYTES"
check "reserve over half the cap" 2 $OB_EMULATOR "$OB" --db "$CAP" --max-db-bytes 1M --reserve-db-bytes 600K init
contains "reserve over half the cap reason" err "must be at most half of the size cap"
check "critical types empty name" 2 $OB_EMULATOR "$OB" --db "$CAP" --max-db-bytes 1M --critical-types 'Refund,,X' stats
check "cap init" 0 $OB_EMULATOR "$OB" --db "$CAP" --max-db-bytes 256K init
i=0
: > "$T/cap.ndjson"
while [ $i -lt 600 ]; do
  printf '{"id":"0190b6d8-3ae7-7ca2-a653-%012d","type":"OrderPlaced","body":"%0300d"}\n' "$i" 0 >> "$T/cap.ndjson"
  i=$((i + 1))
done
check "enqueue past the reserve" 6 $OB_EMULATOR "$OB" --db "$CAP" --max-db-bytes 256K enqueue --ndjson "$T/cap.ndjson"
contains "enqueue past the reserve reason" err "of its 256 KiB cap"
contains "enqueue past the reserve summary" err "for space (enqueue them again later)"
check "critical type marked on the command line" 0 $OB_EMULATOR "$OB" --db "$CAP" --max-db-bytes 256Ki --critical-types OrderPlaced enqueue --type OrderPlaced --id 0190b6d8-3ae7-7ca2-a653-999999999999 --body '{}'
check "other type refused" 6 $OB_EMULATOR "$OB" --db "$CAP" --max-db-bytes 256KiB enqueue --type OrderShipped --id 0190b6d8-3ae7-7ca2-a653-999999999998 --body '{}'
check "stats with a cap" 0 env ONCEBOX_MAX_DB_BYTES=256k $OB_EMULATOR "$OB" --db "$CAP" stats
contains "stats space line" out "of a 256 KiB cap in use (reserve 64 KiB): only critical types accepted"
check "stats space json" 0 env ONCEBOX_MAX_DB_BYTES=256k $OB_EMULATOR "$OB" --db "$CAP" stats --json
contains "stats json space" out '"refusing":true'
contains "stats json cap source" out '"capSource":"configured"'
# Nothing configured: a cap from the filesystem's size; none on request
# (docs/decisions/0021-default-cap.md).
check "stats default cap" 0 $OB_EMULATOR "$OB" --db "$CAP" stats --json
contains "stats default cap source" out '"capSource":"filesystem"'
check "stats default cap text" 0 $OB_EMULATOR "$OB" --db "$CAP" stats
contains "stats default cap words" out "the cap is 3/5 of the filesystem's size"
check "stats no cap" 0 env ONCEBOX_MAX_DB_BYTES=none $OB_EMULATOR "$OB" --db "$CAP" stats --json
contains "stats no cap source" out '"capSource":"none"'
check "stats no cap flag" 0 $OB_EMULATOR "$OB" --db "$CAP" --max-db-bytes none stats
contains "stats no cap words" out "no cap (--max-db-bytes)"
check "config show none" 0 env ONCEBOX_MAX_DB_BYTES=none $OB_EMULATOR "$OB" config show
contains "config show none value" out "database.max_bytes             = none"

# Plain http:// to SQS (docs/security.md, "Plain HTTP"): refused, exit 2,
# naming where it was set (AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL, or
# endpoint_url in ~/.aws/config), unless --sqs-allow-http or
# ONCEBOX_SQS_ALLOW_HTTP=1 opts in, which logs one warning. Nothing listens
# on 127.0.0.1:9; the refusals happen before any connection.
SQH="$T/sqs-home"
mkdir -p "$SQH/.aws"
SQDB="$T/sqs.db"
SQQ=https://sqs.eu-west-1.amazonaws.com/123456789012/q
SQENV=(env -u ONCEBOX_SQS_ALLOW_HTTP -u AWS_ENDPOINT_URL_SQS -u AWS_ENDPOINT_URL
  -u AWS_CONFIG_FILE -u AWS_SHARED_CREDENTIALS_FILE -u AWS_PROFILE
  -u AWS_CA_BUNDLE -u ONCEBOX_OUTBOX_QUEUE_URL -u ONCEBOX_CONSUME_QUEUE_URL
  HOME="$SQH" AWS_ACCESS_KEY_ID=AKIDCLIPLAIN AWS_SECRET_ACCESS_KEY=cli/plain+secret_canary
  AWS_SESSION_TOKEN=cli_plain_token_canary AWS_REGION=eu-west-1)
PLAIN="plain HTTP sends the signed requests and the session token in clear; use https://, or set ONCEBOX_SQS_ALLOW_HTTP=1"
check "sqs plain init" 0 $OB_EMULATOR "$OB" --db "$SQDB" init
check "run outbox http endpoint refused" 2 "${SQENV[@]}" AWS_ENDPOINT_URL_SQS=http://127.0.0.1:9 $OB_EMULATOR "$OB" --db "$SQDB" run --until-idle --outbox-queue-url "$SQQ"
contains "run outbox http endpoint reason" err "AWS_ENDPOINT_URL_SQS is http://127.0.0.1:9: $PLAIN"
lacks "run outbox http endpoint secret" err "canary"
check "run consume http endpoint refused" 2 "${SQENV[@]}" AWS_ENDPOINT_URL=http://127.0.0.1:9 $OB_EMULATOR "$OB" --db "$SQDB" run --until-idle --consume-queue-url "$SQQ"
contains "run consume http endpoint reason" err "cannot consume the SQS queue: AWS_ENDPOINT_URL is http://127.0.0.1:9: $PLAIN"
printf '[default]\nendpoint_url = http://127.0.0.1:9\n' > "$SQH/.aws/config"
check "drain config endpoint_url refused" 2 "${SQENV[@]}" $OB_EMULATOR "$OB" --db "$SQDB" outbox drain --outbox-queue-url "$SQQ" --timeout 1
contains "drain config endpoint_url reason" err "$SQH/.aws/config:2: endpoint_url is http://127.0.0.1:9: $PLAIN"
check "sqs config endpoint_url refused" 2 "${SQENV[@]}" $OB_EMULATOR "$OB" sqs attributes --queue-url "$SQQ"
contains "sqs config endpoint_url reason" err "oncebox sqs attributes: $SQH/.aws/config:2: endpoint_url is http://127.0.0.1:9: $PLAIN"
lacks "sqs config endpoint_url secret" err "canary"
rm -f "$SQH/.aws/config"
check "sqs http endpoint refused" 2 "${SQENV[@]}" AWS_ENDPOINT_URL_SQS=http://127.0.0.1:9 $OB_EMULATOR "$OB" sqs send --queue-url "$SQQ" --body x
contains "sqs http endpoint reason" err "AWS_ENDPOINT_URL_SQS is http://127.0.0.1:9: $PLAIN"
check "only 1 opts in" 2 "${SQENV[@]}" ONCEBOX_SQS_ALLOW_HTTP=yes AWS_ENDPOINT_URL_SQS=http://127.0.0.1:9 $OB_EMULATOR "$OB" --db "$SQDB" run --until-idle --outbox-queue-url "$SQQ"
contains "only 1 opts in reason" err "only the value 1 opts in"
check "run --sqs-allow-http" 0 "${SQENV[@]}" AWS_ENDPOINT_URL_SQS=http://127.0.0.1:9 $OB_EMULATOR "$OB" --db "$SQDB" run --until-idle --outbox-queue-url "$SQQ" --sqs-allow-http
contains "run --sqs-allow-http warns" err "warn relay: AWS_ENDPOINT_URL_SQS is http://127.0.0.1:9: plain HTTP allowed"
equals "run --sqs-allow-http warns once" "$(grep -c 'plain HTTP allowed' "$T/err")" 1
lacks "run --sqs-allow-http secret" err "canary"
check "run ONCEBOX_SQS_ALLOW_HTTP=1" 0 "${SQENV[@]}" ONCEBOX_SQS_ALLOW_HTTP=1 AWS_ENDPOINT_URL=http://127.0.0.1:9 $OB_EMULATOR "$OB" --db "$SQDB" run --until-idle --outbox-queue-url "$SQQ"
contains "run ONCEBOX_SQS_ALLOW_HTTP=1 warns" err "AWS_ENDPOINT_URL is http://127.0.0.1:9: plain HTTP allowed by ONCEBOX_SQS_ALLOW_HTTP=1"
check "run https endpoint, no warning" 0 "${SQENV[@]}" ONCEBOX_SQS_ALLOW_HTTP=1 AWS_ENDPOINT_URL_SQS=https://127.0.0.1:9 $OB_EMULATOR "$OB" --db "$SQDB" run --until-idle --outbox-queue-url "$SQQ" --sqs-allow-http
lacks "run https endpoint, no warning" err "plain HTTP"
# The CloudEvents source is a URI-reference, checked before anything is
# published: the SDKs refuse every event of a source with a space (issue 15).
check "run --source with a space refused" 2 "${SQENV[@]}" AWS_ENDPOINT_URL_SQS=https://127.0.0.1:9 $OB_EMULATOR "$OB" --db "$SQDB" run --until-idle --outbox-queue-url "$SQQ" --source 'https://pos.example/store 17'
contains "run --source reason" err "the CloudEvents source must be a URI-reference (RFC 3986): a space at byte 25 is not allowed in a URI-reference (percent-encode it as %20)"
check "ONCEBOX_SOURCE with a space refused" 2 "${SQENV[@]}" ONCEBOX_SOURCE='urn:pos:store 17' AWS_ENDPOINT_URL_SQS=https://127.0.0.1:9 $OB_EMULATOR "$OB" --db "$SQDB" run --until-idle --outbox-queue-url "$SQQ"
check "run --source percent-encoded" 0 "${SQENV[@]}" ONCEBOX_SQS_ALLOW_HTTP=1 AWS_ENDPOINT_URL_SQS=https://127.0.0.1:9 $OB_EMULATOR "$OB" --db "$SQDB" run --until-idle --outbox-queue-url "$SQQ" --source 'https://pos.example/store%2017'
for c in run "outbox drain" "sqs send"; do
  # shellcheck disable=SC2086
  check "$c --help names --sqs-allow-http" 0 $OB_EMULATOR "$OB" $c --help
  contains "$c --help --sqs-allow-http" out "--sqs-allow-http"
done

# A command that only reads never creates a database: a missing file is
# exit 4 with the reason, and no file (nor -wal, -shm) appears.
for c in stats check "failed show" "failed show --stats" "outbox show" \
         "effects show"; do
  # shellcheck disable=SC2086
  check "$c on a missing db" 4 $OB_EMULATOR "$OB" --db "$T/typo.db" $c
  contains "$c on a missing db says so" err "oncebox: no database at $T/typo.db (read-only command; run \`oncebox --db $T/typo.db init\` or any writing command to create one)"
  equals "$c on a missing db creates nothing" \
    "$(ls "$T" | grep -c '^typo\.db')" 0
done

# The failure store's filters on a backlog: 12 rows, types Pay/Refund/Void
# (i%3), classes unrecoverable/no_handler (i%2), one a day from
# 2026-12-01T00:00:00Z, reason "declined #i" (every fourth "50%_timeout").
FB="$T/failed.db"
check "failed filters init" 0 $OB_EMULATOR "$OB" --db "$FB" init
sqlite3 "$FB" "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i+1 FROM n WHERE i < 11)
  INSERT INTO failed_message(queue_name, message_id, type, body, error_class,
    reason, attempts, first_failed_at, last_failed_at, created_at)
  SELECT 'default', 'm' || i, CASE i % 3 WHEN 0 THEN 'Pay' WHEN 1 THEN 'Refund' ELSE 'Void' END,
    x'7b7d', CASE i % 2 WHEN 0 THEN 'unrecoverable' ELSE 'no_handler' END,
    CASE WHEN i % 4 = 0 THEN '50%_timeout' ELSE 'declined #' || i END, 3,
    1796083200000 + i * 86400000, 1796083200000 + i * 86400000,
    1796083200000 FROM n" && {
  check "failed show --type --json" 0 $OB_EMULATOR "$OB" --db "$FB" failed show --type Refund --json
  equals "--type selects 4" "$(grep -c '"type":"Refund"' "$T/out")" 4
  lacks "--type only Refund" out '"type":"Pay"'
  check "failed show --failed-before" 0 $OB_EMULATOR "$OB" --db "$FB" failed show --failed-before 2026-12-04T00:00:00Z --json
  equals "--failed-before is exclusive" "$(grep -c '"id":' "$T/out")" 3
  check "failed show --failed-after" 0 $OB_EMULATOR "$OB" --db "$FB" failed show --failed-after 2026-12-10T00:00:00Z --stats --json
  contains "--failed-after is inclusive" out '"total":3'
  check "failed show --reason-contains" 0 $OB_EMULATOR "$OB" --db "$FB" failed show --reason-contains "%_" --stats
  contains "--reason-contains takes % literally" out "3 failed message(s)"
  check "failed show combined --limit" 0 $OB_EMULATOR "$OB" --db "$FB" failed show --class unrecoverable --type Pay --limit 1 --json
  equals "combined: the first of 0, 6" "$(grep -o '"messageId":"m[0-9]*"' "$T/out")" '"messageId":"m0"'
  # An age: ten years ago, so every row (the clock is the real one).
  check "failed show relative age" 0 $OB_EMULATOR "$OB" --db "$FB" failed show --failed-after 3650d --stats
  contains "every row is newer than ten years" out "12 failed message(s)"
  check "failed bare number is no age" 2 $OB_EMULATOR "$OB" --db "$FB" failed show --failed-after 5
  check "failed bad time" 2 $OB_EMULATOR "$OB" --db "$FB" failed show --failed-before 2026-12-01
  contains "bad time names the option" err "--failed-before '2026-12-01'"
  check "failed bad day" 2 $OB_EMULATOR "$OB" --db "$FB" failed remove --failed-after 2026-02-30T00:00:00Z --dry-run
  contains "bad day names the option" err "--failed-after"
  check "failed bad limit" 2 $OB_EMULATOR "$OB" --db "$FB" failed show --limit 0
  contains "bad limit names the option" err "--limit '0'"
  check "failed empty type" 2 $OB_EMULATOR "$OB" --db "$FB" failed remove --type "" --force
  contains "empty type names the option" err "--type ''"
  check "failed unknown class" 2 $OB_EMULATOR "$OB" --db "$FB" failed show --class no-handler
  contains "unknown class names the option" err "--class 'no-handler'"
  check "failed ID and filters" 2 $OB_EMULATOR "$OB" --db "$FB" failed remove 1 --type Pay --force
  check "failed remove --class --dry-run" 0 $OB_EMULATOR "$OB" --db "$FB" failed remove --class no_handler --dry-run </dev/null
  contains "dry run says the count" out "would remove 6 message(s)"
  equals "dry run changes nothing" "$(sqlite3 "$FB" 'SELECT count(*) FROM failed_message')" 12
  check "failed remove filters want --force" 2 $OB_EMULATOR "$OB" --db "$FB" failed remove --class no_handler </dev/null
  contains "filters want --force" err "with filters: add --force"
  check "failed remove --class" 0 $OB_EMULATOR "$OB" --db "$FB" failed remove --class no_handler --force </dev/null
  contains "removed the 6" out "removed: 6 message(s)"
  equals "exactly those removed" "$(sqlite3 "$FB" "SELECT count(*) || '/' || sum(error_class = 'unrecoverable') FROM failed_message")" 6/6
  check "failed retry --type --dry-run" 0 $OB_EMULATOR "$OB" --db "$FB" failed retry --type Void --dry-run
  contains "retry dry run" out "would retry 2 message(s)"
  check "failed retry --type" 0 $OB_EMULATOR "$OB" --db "$FB" failed retry --type Void --force
  contains "requeued the 2" out "requeued: 2 message(s)"
  equals "retried into the queue" "$(sqlite3 "$FB" "SELECT count(*) FROM queue WHERE type = 'Void'")/$(sqlite3 "$FB" 'SELECT count(*) FROM failed_message')" 2/4
}

check "demo" 0 $OB_EMULATOR "$OB" demo --payments 300
contains "demo says done" out "every payment paid and every order charged exactly once"

# The fleet demo with its head office on a file (PostgreSQL: pg_backend's
# test_demo_fleet): terminals offline and online, a consumer SIGKILLed.
check "demo --fleet" 0 $OB_EMULATOR "$OB" demo --fleet --terminals 4
contains "demo --fleet says done" out "every expectation holds"
contains "demo --fleet: one booking per payment" out "payments booked twice                                             0  ok"
FH="$T/fleet-office.db"
check "demo --fleet on a head office" 0 $OB_EMULATOR "$OB" --db "$FH" demo --fleet --terminals 3
check "demo --fleet wants a fresh head office" 2 $OB_EMULATOR "$OB" --db "$FH" demo --fleet --terminals 3
contains "demo --fleet says why" err "wants a fresh one"

# The demo's head office is an in-process sink (ob_outbox_drain): what it
# published is a publication too. It said "last publish never" next to
# "50 published", and the relay's state must still say no relay ran.
DK="$T/demo-kept.db"
check "demo --keep" 0 $OB_EMULATOR "$OB" --db "$DK" demo --payments 50 --keep
check "stats after the demo" 0 $OB_EMULATOR "$OB" --db "$DK" stats
lacks "demo publications have a time" out "last publish never"
contains "demo: no relay ran" out "never run"
check "stats --json after the demo" 0 $OB_EMULATOR "$OB" --db "$DK" stats --json
lacks "demo publications have a time (json)" out '"lastPublishAtMs":null'

# One JSON style (docs/operations.md, "JSON output"): a result is one
# compact object on one line, a listing one object per line. Each line is
# parsed by a real JSON parser (node's), when node is installed.
json_lines() {  # json_lines NAME LINES: out holds LINES objects, one a line
  equals "$1: $2 line(s)" "$(wc -l <"$T/out" | tr -d ' ')" "$2"
  if command -v node >/dev/null; then
    if node -e '
      const t = require("fs").readFileSync(process.argv[1], "utf8");
      for (const l of t.split("\n").slice(0, -1)) {
        const o = JSON.parse(l);
        if (o === null || typeof o !== "object" || Array.isArray(o)) process.exit(1);
      }' "$T/out"; then pass=$((pass + 1)); else
      fail=$((fail + 1)); echo "FAIL $1: a line is not a JSON object"; head -3 "$T/out"; fi
  fi
}
check "json: stats" 0 $OB_EMULATOR "$OB" --db "$DK" stats --json
json_lines "json: stats" 1
contains "json: stats version" out "\"version\":\"$($OB_EMULATOR "$OB" --version | cut -d' ' -f2)\""
contains "json: stats database" out "\"database\":\"$DK\""
contains "json: stats time" out "\"time\":\"20"
check "json: failed show" 0 $OB_EMULATOR "$OB" --db "$DK" failed show --json
json_lines "json: failed show" 23
check "json: failed show ID" 0 $OB_EMULATOR "$OB" --db "$DK" failed show 1 --json
json_lines "json: failed show ID" 1
check "json: failed show --stats" 0 $OB_EMULATOR "$OB" --db "$DK" failed show --stats --json
json_lines "json: failed show --stats" 1
check "json: outbox show" 0 $OB_EMULATOR "$OB" --db "$DK" outbox show --limit 7 --json
json_lines "json: outbox show" 7
check "json: effects show" 0 $OB_EMULATOR "$OB" --db "$DK" effects show --state failed --json
json_lines "json: effects show" 6
check "json: check" 0 $OB_EMULATOR "$OB" --db "$DK" check --json
json_lines "json: check" 1
check "json: health" 0 $OB_EMULATOR "$OB" --db "$DK" health --json
json_lines "json: health" 1
contains "json: health ok" out '"status":"ok"'

# vacuum: an older database's 4 KiB pages become the 2 KiB pages of new
# ones (docs/decisions/0017); refused while another connection is open.
if command -v sqlite3 >/dev/null; then
  OLD="$T/old-pages.db"
  sqlite3 "$OLD" 'PRAGMA page_size=4096; PRAGMA journal_mode=WAL; CREATE TABLE t(x); DROP TABLE t;' >/dev/null
  check "vacuum: init an old file" 0 $OB_EMULATOR "$OB" --db "$OLD" init
  check "vacuum: enqueue" 0 $OB_EMULATOR "$OB" --db "$OLD" enqueue --type PaymentCaptured --id "$E1" --body "$P1"
  check "vacuum: run" 0 $OB_EMULATOR "$OB" --db "$OLD" run --until-idle
  equals "vacuum: 4096 before" "$(sqlite3 "$OLD" 'PRAGMA page_size')" 4096
  sqlite3 "$OLD" '.timeout 100' 'BEGIN; SELECT count(*) FROM queue;' '.shell sleep 2' >/dev/null 2>&1 &
  holder=$!
  sleep 0.5
  check "vacuum: refused while another connection is open" 1 $OB_EMULATOR "$OB" --db "$OLD" vacuum
  contains "vacuum: says why" err "another connection has the database open"
  wait "$holder"
  equals "vacuum: nothing changed" "$(sqlite3 "$OLD" 'PRAGMA page_size')" 4096
  check "vacuum" 0 $OB_EMULATOR "$OB" --db "$OLD" vacuum
  contains "vacuum: says so" out "page size 4096 -> 2048"
  equals "vacuum: 2048 after" "$(sqlite3 "$OLD" 'PRAGMA page_size')" 2048
  equals "vacuum: still WAL" "$(sqlite3 "$OLD" 'PRAGMA journal_mode')" wal
  check "vacuum: check after" 0 $OB_EMULATOR "$OB" --db "$OLD" check
  equals "vacuum: the payout kept" "$(sqlite3 "$OLD" 'SELECT count(*) FROM merchant_payout')" 1
  check "vacuum again: nothing to do" 0 $OB_EMULATOR "$OB" --db "$OLD" vacuum
  contains "vacuum again says so" out "already: nothing to do"
  check "vacuum bad size" 2 $OB_EMULATOR "$OB" --db "$OLD" vacuum --page-size 3000
fi

report
