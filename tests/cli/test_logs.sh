#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Logs of real commands with --log-format json (docs/logs.md): every line
# on stderr parses as one JSON object (python3's json module), handled and
# duplicate messages are logged at debug with their id, type, queue and
# duration, failures at warn with their error code, repeated identical
# errors (a relay, a consumed queue and a provider that cannot be reached)
# once and then as a count, and canary secrets in AWS_SECRET_ACCESS_KEY,
# AWS_SESSION_TOKEN and ONCEBOX_PROVIDER_AUTHORIZATION never appear. Nothing listens on
# 127.0.0.1:9. Usage: test_logs.sh PATH/TO/oncebox
set -u
: "${OB_EMULATOR:=}"
OB=${1:?usage: test_logs.sh PATH/TO/oncebox}
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/oncebox-logs-XXXXXX")
trap 'rm -rf "$T"' EXIT
pass=0
fail=0

check() {  # check NAME EXPECTED_EXIT COMMAND...: stderr kept in $T/NAME.err
  local name=$1 want=$2
  shift 2
  "$@" >"$T/out" 2>"$T/$name.err"
  local got=$?
  if [ "$got" = "$want" ]; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "FAIL $name: exit $got, want $want"
    sed 's/^/  err: /' "$T/$name.err" | head -20
  fi
}

# logs NAME EXPR...: parse every line of $T/NAME.err as JSON (a line that
# does not parse fails), then evaluate each python EXPR over L, the list
# of records; each must be true.
logs() {
  local name=$1
  shift
  if python3 - "$T/$name.err" "$@" <<'PY'
import json, re, sys
path, exprs = sys.argv[1], sys.argv[2:]
L, bad = [], 0
TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
for n, line in enumerate(open(path, "rb").read().decode("utf-8").split("\n")[:-1], 1):
    try:
        r = json.loads(line)
    except ValueError as e:
        print("  line %d is not JSON (%s): %r" % (n, e, line[:200])); bad += 1; continue
    if not isinstance(r, dict) or not TIME.match(r.get("time", "")) or \
       r.get("level") not in ("error", "warn", "info", "debug") or \
       not isinstance(r.get("component"), str) or not isinstance(r.get("event"), str) or \
       not isinstance(r.get("msg"), str):
        print("  line %d lacks time, level, component, event or msg: %r" % (n, line[:200])); bad += 1
    L.append(r)
def ev(event, **kw):
    return [r for r in L if r.get("event") == event and all(r.get(k) == v for k, v in kw.items())]
for x in exprs:
    if not eval(x, {"L": L, "ev": ev}):
        print("  false: %s" % x); bad += 1
if bad:
    for r in L: print("  | %s" % json.dumps(r)[:240])
sys.exit(1 if bad else 0)
PY
  then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL logs $name"; fi
}

CANARY_AWS='logs/secret+aws_canary_7f3a'
CANARY_TOKEN='logs_session_token_canary_91c2'
CANARY_AUTH='Bearer sk_logs_canary_5d0e'
# No proxy, no AWS files of the machine, the canaries in the environment of
# every command.
ENV=(env -u ONCEBOX_SQS_ALLOW_HTTP -u AWS_ENDPOINT_URL -u AWS_ENDPOINT_URL_SQS
  -u AWS_CONFIG_FILE -u AWS_SHARED_CREDENTIALS_FILE -u AWS_PROFILE -u AWS_CA_BUNDLE
  -u HTTPS_PROXY -u https_proxy -u HTTP_PROXY -u http_proxy -u ALL_PROXY -u all_proxy
  -u ONCEBOX_OUTBOX_QUEUE_URL -u ONCEBOX_CONSUME_QUEUE_URL -u ONCEBOX_PROVIDER_URL
  -u ONCEBOX_LOG_FORMAT -u JOURNAL_STREAM
  HOME="$T" AWS_ACCESS_KEY_ID=AKIDLOGSTEST AWS_SECRET_ACCESS_KEY="$CANARY_AWS"
  AWS_SESSION_TOKEN="$CANARY_TOKEN" AWS_REGION=eu-west-1
  ONCEBOX_PROVIDER_AUTHORIZATION="$CANARY_AUTH")

P1='{"paymentId":"5c4080b1-b5d2-4e91-8de8-ec0e119d7647","merchantId":"3727331a-b533-4c6e-a0f8-48532237307b","amountInMinorUnits":12500,"currency":"EUR"}'
OK=0190b6d8-3ae7-7ca2-a653-6ff2d5a6f230
NOH=0190b6d8-3ae7-7ca2-a653-6ff2d5a6f231
BAD=0190b6d8-3ae7-7ca2-a653-6ff2d5a6f232
DB="$T/t.db"

# ---- handling: a success, its duplicate, two failures ---------------------
enq() { "${ENV[@]}" $OB_EMULATOR "$OB" --db "$DB" enqueue "$@" >/dev/null 2>&1; }
enq --type PaymentCaptured --id "$OK" --body "$P1"
enq --type PaymentCaptured --id "$OK" --body "$P1"
enq --type NoSuchType --id "$NOH" --body '{}'
enq --type PaymentCaptured --id "$BAD" --body '{"note":"a \"quoted\"\\ value"}'
check run-debug 0 "${ENV[@]}" $OB_EMULATOR "$OB" --log-format json --log-level debug --db "$DB" run --until-idle
logs run-debug \
  "len(ev('message_handled', level='debug', component='engine', message_id='$OK', type='PaymentCaptured', queue='default', outcome='done')) == 1" \
  "all(isinstance(r.get('duration_ms'), int) and r['duration_ms'] >= 0 and r.get('consumer') for r in ev('message_handled'))" \
  "len(ev('message_duplicate', level='debug', message_id='$OK', outcome='duplicate')) == 1" \
  "len(ev('message_failed', level='warn', message_id='$NOH', type='NoSuchType', error='OB_ENOHANDLER', outcome='no_handler')) == 1" \
  "len(ev('message_failed', level='warn', message_id='$BAD', error='OB_EHANDLER', outcome='unrecoverable')) == 1" \
  "len(ev('run_stopped', component='cli', level='info')) == 1" \
  "'2 failed' in ev('run_stopped')[0]['msg']"

# At info (the default) the debug records are not written.
enq --type PaymentCaptured --id 0190b6d8-3ae7-7ca2-a653-6ff2d5a6f233 --body "$P1"
check run-info 0 "${ENV[@]}" ONCEBOX_LOG_FORMAT=json $OB_EMULATOR "$OB" --db "$DB" run --until-idle
logs run-info "ev('message_handled') == []" "len(ev('run_stopped')) == 1"

# The flag beats the environment; a bad value is a usage error.
check text-over-env 0 "${ENV[@]}" ONCEBOX_LOG_FORMAT=json $OB_EMULATOR "$OB" --log-format text --db "$DB" run --until-idle
if grep -q '^{' "$T/text-over-env.err" || ! grep -q '^stopped: ' "$T/text-over-env.err"; then
  fail=$((fail + 1)); echo "FAIL --log-format text did not win over ONCEBOX_LOG_FORMAT=json"
else pass=$((pass + 1)); fi
check bad-flag 2 "${ENV[@]}" $OB_EMULATOR "$OB" --log-format xml --db "$DB" stats
check bad-env 2 "${ENV[@]}" ONCEBOX_LOG_FORMAT=yaml $OB_EMULATOR "$OB" --db "$DB" stats
grep -q "ONCEBOX_LOG_FORMAT expects one of text, json, not 'yaml'" "$T/bad-env.err" && pass=$((pass + 1)) ||
  { fail=$((fail + 1)); echo "FAIL bad ONCEBOX_LOG_FORMAT not named"; }

# ---- a relay that cannot reach SQS: each probe fails the same way ----------
# The handled PaymentCaptured left outbox rows. drain probes with backoff
# (1 s, 2 s, ...) for 4 s: the first failure is logged, the next ones are
# counted and summed up once, at the latest when the engine closes.
check relay 1 "${ENV[@]}" AWS_ENDPOINT_URL_SQS=https://127.0.0.1:9 $OB_EMULATOR "$OB" --log-format json --log-level debug --db "$DB" outbox drain --outbox-queue-url https://sqs.eu-west-1.amazonaws.com/123456789012/q --timeout 4
logs relay \
  "len([r for r in ev('relay_unreachable', level='warn', component='relay', error='OB_ENET') if 'repeated' not in r]) == 1" \
  "len([r for r in ev('relay_unreachable', error='OB_ENET') if r.get('repeated', 0) >= 1]) == 1" \
  "'repeated' in [r for r in ev('relay_unreachable') if 'repeated' in r][0]['msg']" \
  "len(ev('drain_timed_out', component='cli', level='warn')) == 1"

# ---- an SQS queue to consume that cannot be reached: receives repeat --------
check consumer 124 "${ENV[@]}" AWS_ENDPOINT_URL_SQS=https://127.0.0.1:9 timeout -s TERM 5 $OB_EMULATOR "$OB" --log-format json --db "$T/k.db" run --consume-queue-url https://sqs.eu-west-1.amazonaws.com/123456789012/in
logs consumer \
  "len([r for r in ev('consumer_offline', level='warn', component='consumer', error='OB_ENET') if 'repeated' not in r]) == 1" \
  "len([r for r in ev('consumer_offline', error='OB_ENET') if r.get('repeated', 0) >= 1]) == 1" \
  "len(ev('run_stopped')) == 1"

# ---- a provider that cannot be reached: an effect waits, probes repeat ------
FX="$T/fx.db"
printf '{"id":"0190b6d8-3ae7-7ca2-a653-000000000401","type":"ChargeOrder","body":{"orderId":"order-401","amountInMinorUnits":1999,"currency":"EUR"}}\n' >"$T/charge.ndjson"
"${ENV[@]}" $OB_EMULATOR "$OB" --db "$FX" enqueue --ndjson "$T/charge.ndjson" >/dev/null 2>&1
# SIGTERM after 5 s: run stops cleanly (timeout itself answers 124).
check provider 124 "${ENV[@]}" ONCEBOX_PROVIDER_URL=https://127.0.0.1:9 timeout -s TERM 5 $OB_EMULATOR "$OB" --log-format json --log-level debug --db "$FX" run
logs provider \
  "len(ev('message_waiting', level='debug', message_id='0190b6d8-3ae7-7ca2-a653-000000000401', type='ChargeOrder', outcome='waiting')) == 1" \
  "len([r for r in ev('provider_unreachable', level='warn', component='effects', error='OB_ENET') if 'repeated' not in r]) == 1" \
  "len([r for r in ev('provider_unreachable', error='OB_ENET') if r.get('repeated', 0) >= 1]) == 1" \
  "len(ev('run_stopped')) == 1"

# ---- never a secret --------------------------------------------------------
for f in "$T"/*.err; do
  for c in "$CANARY_AWS" "$CANARY_TOKEN" "$CANARY_AUTH" sk_logs_canary aws_canary; do
    if grep -qF -- "$c" "$f"; then
      fail=$((fail + 1)); echo "FAIL $(basename "$f") has a secret ($c)"
    else pass=$((pass + 1)); fi
  done
done

echo "test_logs: $pass passed, $fail failed"
[ "$fail" = 0 ]
