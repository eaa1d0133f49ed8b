#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The canary-credential run (docs/reliability.md, "Secrets: the
# canary-credential run"): canary AWS credentials go through every command
# that uses them, against
# fauxqs behind the SigV4-verifying TLS terminator
# (tests/integration/sqs/sqs_server.mjs), and then every artifact is
# searched for them.
#
#   bash tests/hostile/canary.sh [PATH/TO/oncebox]   (default $OB_BINARY_DIR/oncebox,
#                                             else build/oncebox)
#   exit 0: no leak; 1: a leak (or a command failed); 77: skipped (no node
#   >= 20, tests/interop/node_modules, openssl or faketime)
#
# Credentials: AWS_ACCESS_KEY_ID=AKIDCANARY<random>, a secret key and a
# session token that each carry a unique random marker (and '/', '+', '='
# as real ones do). The server expects exactly these, so every request is
# really signed with them (a wrong signature is answered 403 and the test
# fails).
#
# Commands, all with --log-level debug where it applies, their stdout and
# stderr kept: sqs attributes / send / receive --delete; run --until-idle
# --outbox-queue-url (the relay publishes 20 payouts); outbox drain
# --until-empty; run --consume-queue-url (the consumer takes them back);
# the same with a wrong secret (403 SignatureDoesNotMatch on every path);
# credentials from ~/.aws/credentials instead of the environment; a secret
# with a newline (a configuration error).
#
# Searched: every stdout and stderr; the SQLite files (db, and -wal and -shm
# copied while a process holds them open); every other file the run wrote
# in its own work folder, which holds the commands' private TMPDIR (SQLite's
# temporary files and oncebox's go there) and HOME (files of other programs
# in /tmp are not this run's business, and are not read); core files of a
# running `oncebox run` that has signed requests, once with the credentials
# in the environment and once from ~/.aws/credentials only: gcore (gdb) of
# the live process, then the kernel's core on SIGABRT with `ulimit -c` 4 GiB when
# core_pattern is a plain file name (it is read, never written). An ASan
# build dumps no core and maps terabytes, so it gets neither (said so).
# Patterns: the secret and the token
# (as given, URL-encoded, base64 at the three alignments, hex), their
# markers, any "Signature=<64 hex>", the Authorization and
# X-Amz-Security-Token headers.
#
# The core file is judged apart: a process that signs requests must hold
# its secret while it runs (the environment block itself holds
# AWS_SECRET_ACCESS_KEY). Its count is printed; it fails the run only with
# OB_CANARY_STRICT_CORE=1. The kernel must write no core at all (oncebox is
# not dumpable). See docs/reliability.md, "Secrets".
#
# Ends with:
#   canary: N artifacts (...): secret 0, token 0, signatures 0, auth headers 0
set -uo pipefail
# A cross build under qemu: the emulator that starts built programs (tests/cross.sh).
: "${OB_EMULATOR:=}"
here=$(cd "$(dirname "$0")/../.." && pwd)
OB=${1:-${OB_BINARY_DIR:-$here/build}/oncebox}
[ -x "$OB" ] || { echo "canary: $OB not found (build first)" >&2; exit 2; }
OB=$(cd "$(dirname "$OB")" && pwd)/$(basename "$OB")

skip() { echo "skipped: $*"; exit 77; }
command -v node >/dev/null || skip "node not found (Node.js >= 20)"
[ "$(node -p 'process.versions.node.split(".")[0]')" -ge 20 ] 2>/dev/null || skip "fauxqs needs Node.js >= 20"
[ -f "$here/tests/interop/node_modules/fauxqs/dist/app.js" ] || skip "tests/interop/node_modules missing (cd tests/interop && npm ci)"
for t in openssl faketime curl; do command -v $t >/dev/null || skip "$t not found"; done

W=$(mktemp -d "${TMPDIR:-/tmp}/oncebox-canary-XXXXXX")
SERVER=
BG=
cleanup() {
  [ -n "$BG" ] && kill -KILL "$BG" 2>/dev/null
  [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null
  [ -n "$SERVER" ] && wait "$SERVER" 2>/dev/null
  [ -n "${OB_CANARY_KEEP:-}" ] && { echo "kept: $W"; return; }
  rm -rf "$W"
}
trap cleanup EXIT
touch "$W/.start"
sleep 1   # so that "newer than .start" is strict
mkdir -p "$W/out" "$W/home" "$W/tmp"
fail=0
note_fail() { echo "FAIL: $*"; fail=1; }

# ---- the canaries ------------------------------------------------------------
rnd() { head -c "$1" /dev/urandom | od -An -tx1 | tr -d ' \n'; }
R1=$(rnd 8) R2=$(rnd 8) R3=$(rnd 8)
AKID="AKIDCANARY$(printf '%s' "$R1" | tr a-f A-F | head -c 10)"
SECRET_MARK="cnrySECRET$R1"
TOKEN_MARK="cnryTOKEN$R2"
WRONG_MARK="cnryWRONG$R3"
SECRET="$SECRET_MARK/x+Zk9"                         # 40 characters
TOKEN="IQoJb3JpZ2luX2VjE$TOKEN_MARK/AbC+dEf9==" 
WRONG="$WRONG_MARK/y+Qq7"
REGION=us-east-1

# ---- the server ----------------------------------------------------------------
bash "$here/tests/integration/http/gen_pki.sh" "$W/pki" >/dev/null 2>&1 || { echo "gen_pki.sh failed"; exit 1; }
OB_SQS_SESSION_TOKEN="$TOKEN" node "$here/tests/integration/sqs/sqs_server.mjs" \
  "$W/pki" "$AKID" "$SECRET" "$REGION" >"$W/server.out" 2>&1 &
SERVER=$!
for _ in $(seq 200); do grep -q '^PORT ' "$W/server.out" && break; sleep 0.1; done
PORT=$(sed -n 's/^PORT //p' "$W/server.out")
[ -n "$PORT" ] || { cat "$W/server.out"; echo "canary: the server did not start"; exit 1; }
EP="https://localhost:$PORT"
create_queue() {
  curl -s --cacert "$W/pki/ca.crt" -X POST --data "{\"QueueName\":\"$1\"}" "$EP/_test/create" |
    sed -n 's/.*"QueueUrl":"\([^"]*\)".*/\1/p'
}
Q=$(create_queue canary)
Q2=$(create_queue canary-relay)
[ -n "$Q" ] && [ -n "$Q2" ] || { echo "canary: CreateQueue failed"; exit 1; }

# The commands' home and temporary directory: inside the work folder, so
# that everything they write is searched below.
export HOME="$W/home" TMPDIR="$W/tmp"
unset ONCEBOX_DB ONCEBOX_OUTBOX_QUEUE_URL ONCEBOX_CONSUME_QUEUE_URL ONCEBOX_PROVIDER_URL \
  AWS_PROFILE AWS_DEFAULT_REGION AWS_ENDPOINT_URL AWS_SHARED_CREDENTIALS_FILE \
  AWS_CONFIG_FILE AWS_MAX_ATTEMPTS
export AWS_ACCESS_KEY_ID="$AKID" AWS_SECRET_ACCESS_KEY="$SECRET" AWS_SESSION_TOKEN="$TOKEN" \
  AWS_REGION="$REGION" AWS_ENDPOINT_URL_SQS="$EP" AWS_CA_BUNDLE="$W/pki/ca.crt"

# ---- the commands --------------------------------------------------------------
n=0
# step NAME WANT_EXIT COMMAND...: stdout and stderr kept in $W/out.
step() {
  local name=$1 want=$2 rc
  shift 2
  n=$((n + 1))
  local f="$W/out/$(printf '%02d' $n)-$name"
  (cd "$W" && timeout -k 5 120 "$@") >"$f.out" 2>"$f.err" </dev/null
  rc=$?
  if [ "$rc" != "$want" ]; then
    note_fail "$name: exit $rc, want $want"
    sed 's/^/    /' "$f.err" | tail -5
  fi
}
DB="$W/terminal.db"
DB2="$W/consumer.db"
PAY='{"paymentId":"5c4080b1-b5d2-4e91-8de8-%012d","merchantId":"3727331a-b533-4c6e-a0f8-48532237307b","amountInMinorUnits":%d,"currency":"EUR"}'
enqueue_n() {  # enqueue_n DB FIRST COUNT
  for i in $(seq "$2" $(($2 + $3 - 1))); do
    printf '{"id":"0190b6d8-3ae7-7ca2-a653-%012d","type":"PaymentCaptured","body":'"$PAY"'}\n' "$i" "$i" "$((100 + i))"
  done >"$W/batch.ndjson"
  step enqueue 0 $OB_EMULATOR "$OB" --db "$1" enqueue --ndjson "$W/batch.ndjson"
}

step init 0 $OB_EMULATOR "$OB" --log-level debug --db "$DB" init
step sqs-attributes 0 $OB_EMULATOR "$OB" sqs attributes --queue-url "$Q" --json
step sqs-send 0 $OB_EMULATOR "$OB" sqs send --queue-url "$Q" --body "canary hello" --attr source=canary
step sqs-receive 0 $OB_EMULATOR "$OB" sqs receive --queue-url "$Q" --max 10 --wait 1 --delete --json
enqueue_n "$DB" 1 20
step run-relay 0 $OB_EMULATOR "$OB" --log-level debug --db "$DB" run --until-idle --outbox-queue-url "$Q2" --source urn:canary:till-1
enqueue_n "$DB" 21 5
step run-handle 0 $OB_EMULATOR "$OB" --log-level debug --db "$DB" run --until-idle
step outbox-drain 0 $OB_EMULATOR "$OB" --log-level debug --db "$DB" outbox drain --until-empty --timeout 60 --outbox-queue-url "$Q2"
step outbox-show 0 $OB_EMULATOR "$OB" --db "$DB" outbox show --json
step stats 0 $OB_EMULATOR "$OB" --db "$DB" stats --json
step run-consume 0 $OB_EMULATOR "$OB" --log-level debug --db "$DB2" run --until-idle --consume-queue-url "$Q2"
step failed-show 0 $OB_EMULATOR "$OB" --db "$DB2" failed show --json
published=$(sqlite3 -readonly "$DB" "SELECT count(*) FROM outbox_event WHERE published_at IS NOT NULL" 2>&1)
consumed=$(sqlite3 -readonly "$DB2" "SELECT (SELECT count(*) FROM failed_message) + (SELECT count(*) FROM processed_message)" 2>&1)
[ "$published" = 25 ] || note_fail "published $published of 25 events"
[ "$consumed" -ge 25 ] 2>/dev/null || note_fail "the consumer took $consumed of 25 events"
# A wrong secret: every path answers 403 SignatureDoesNotMatch.
enqueue_n "$DB" 101 3
step wrong-sqs 1 env AWS_SECRET_ACCESS_KEY="$WRONG" $OB_EMULATOR "$OB" sqs attributes --queue-url "$Q"
step wrong-sqs-json 1 env AWS_SECRET_ACCESS_KEY="$WRONG" $OB_EMULATOR "$OB" sqs send --queue-url "$Q" --body x --json
# Wrong credentials leave the work for SQS: until-idle stops stalled (exit 5).
step wrong-relay 5 env AWS_SECRET_ACCESS_KEY="$WRONG" $OB_EMULATOR "$OB" --log-level debug --db "$DB" run --until-idle --outbox-queue-url "$Q2"
step wrong-drain 1 env AWS_SECRET_ACCESS_KEY="$WRONG" $OB_EMULATOR "$OB" --log-level debug --db "$DB" outbox drain --until-empty --timeout 3 --outbox-queue-url "$Q2"
step wrong-consume 5 env AWS_SECRET_ACCESS_KEY="$WRONG" $OB_EMULATOR "$OB" --log-level debug --db "$DB2" run --until-idle --consume-queue-url "$Q2"
grep -q 'SignatureDoesNotMatch' "$W"/out/*-wrong-sqs.err || note_fail "the wrong secret was not refused by the server"
step wrong-outbox-show 0 $OB_EMULATOR "$OB" --db "$DB" outbox show --json
# A secret with a newline: a configuration error that must not echo it.
step newline-secret 1 env AWS_SECRET_ACCESS_KEY="$SECRET"$'\n'"$SECRET" $OB_EMULATOR "$OB" sqs attributes --queue-url "$Q"
# Credentials from ~/.aws/credentials, none in the environment.
mkdir -p "$HOME/.aws"
printf '[default]\naws_access_key_id = %s\naws_secret_access_key = %s\naws_session_token = %s\n' \
  "$AKID" "$SECRET" "$TOKEN" >"$HOME/.aws/credentials"
chmod 600 "$HOME/.aws/credentials"
step profile-sqs 0 env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_SESSION_TOKEN \
  $OB_EMULATOR "$OB" sqs attributes --queue-url "$Q"
step profile-drain 0 env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_SESSION_TOKEN \
  $OB_EMULATOR "$OB" --log-level debug --db "$DB" outbox drain --timeout 30 --outbox-queue-url "$Q2"

# ---- peers that echo the request's headers -------------------------------------
# Some gateways and debugging proxies answer errors that echo the request's
# headers: the SigV4 signature, the session token, a provider's
# Authorization value, with CR/LF and escape sequences. sqs_server.mjs's
# "echo" fault and provider_sim.mjs's echo_headers mode do that; what
# reaches outputs, logs and the databases must be cleaned
# (core/util/peer_text.h).
step_any() {  # step_any NAME COMMAND...: any exit code is fine
  local name=$1
  shift
  n=$((n + 1))
  local f="$W/out/$(printf '%02d' $n)-$name"
  (cd "$W" && timeout -k 5 120 "$@") >"$f.out" 2>"$f.err" </dev/null
}
fault() { curl -s --cacert "$W/pki/ca.crt" -X POST --data "$1" "$EP/_test/fault" >/dev/null; }
fault '{"count":1,"mode":"echo","status":400}'
step_any echo-sqs-send $OB_EMULATOR "$OB" sqs send --queue-url "$Q" --body "echo"
grep -q 'headers were' "$W"/out/*-echo-sqs-send.err || note_fail "the echoing SQS error never reached sqs send"
enqueue_n "$DB" 301 3
fault '{"count":8,"mode":"echo","status":400,"target":"AmazonSQS.SendMessageBatch"}'
step_any echo-relay $OB_EMULATOR "$OB" --log-level debug --db "$DB" run --until-idle --outbox-queue-url "$Q2"
curl -s --cacert "$W/pki/ca.crt" -X POST --data '{}' "$EP/_test/clear" >/dev/null
step echo-outbox-show 0 $OB_EMULATOR "$OB" --db "$DB" outbox show --json
# The provider, with a canary Authorization value.
PMARK=$(rnd 12)
PAUTH="Bearer sk_canary_$PMARK"
mkfifo "$W/provider.in"
node "$here/tests/integration/fence/provider_sim.mjs" --cert "$W/pki/good.crt" \
  --key "$W/pki/good.key" --state "$W/provider.json" <"$W/provider.in" >"$W/provider.out" 2>&1 &
PSIM=$!
exec 9>"$W/provider.in"
for i in $(seq 100); do grep -q '^PORT ' "$W/provider.out" && break; sleep 0.1; done
PPORT=$(sed -n 's/^PORT //p' "$W/provider.out" | head -1)
[ -n "$PPORT" ] || note_fail "the provider simulator did not start"
printf '{"seq":1,"cmd":"mode","mode":"echo_headers","count":20}\n' >&9
DB3="$W/till.db"
printf '{"id":"0190b6d8-3ae7-7ca2-a653-000000000401","type":"ChargeOrder","body":{"orderId":"order-401","amountInMinorUnits":1999,"currency":"EUR"}}\n' >"$W/charge.ndjson"
step enqueue-charge 0 $OB_EMULATOR "$OB" --db "$DB3" enqueue --ndjson "$W/charge.ndjson"
step_any echo-provider env ONCEBOX_PROVIDER_URL="https://localhost:$PPORT" \
  ONCEBOX_PROVIDER_AUTHORIZATION="$PAUTH" $OB_EMULATOR "$OB" --log-level debug --db "$DB3" run --until-idle
grep -q 'request was' "$W"/out/*-echo-provider.err || note_fail "the echoing provider answer never reached the log"
step echo-effects-show 0 $OB_EMULATOR "$OB" --db "$DB3" effects show
step echo-effects-json 0 $OB_EMULATOR "$OB" --db "$DB3" effects show --json
step echo-failed-show 0 $OB_EMULATOR "$OB" --db "$DB3" failed show --json
exec 9>&-
kill "$PSIM" 2>/dev/null; wait "$PSIM" 2>/dev/null
# One escaping rule: no escape sequence and no forged line from a peer.
if grep -l -a $'\e' "$W"/out/*-echo-* >/dev/null 2>&1; then
  note_fail "an escape sequence from a peer reached an output: $(grep -l -a $'\e' "$W"/out/*-echo-* | tr '\n' ' ')"
fi
if grep -a -h '^2026-01-01T00:00:00.000Z info FAKE' "$W"/out/*-echo-* >/dev/null 2>&1; then
  note_fail "a forged log line from a peer reached an output"
fi

# ---- core files of a process that has signed requests ----------------------------
# core_pattern is the machine's; it is read, never written. A plain file
# name: SIGABRT. A pipe (systemd-coredump, apport): gcore instead.
core_pattern=$(cat /proc/sys/kernel/core_pattern 2>/dev/null || echo "?")
mkdir -p "$W/core-env" "$W/core-file"
cores=()
kernel_core_tried=0
make_core() {  # make_core DIR ENV-ARGS...: a core of `run` after it published
  local dir=$1 db=$1/c.db pid i before
  shift
  enqueue_n "$db" 201 2
  before=$(grep -c 'SendMessageBatch 200 ok' "$W/server.out")
  (cd "$dir" && { ulimit -c 4194304 2>/dev/null || true; } && exec env "$@" $OB_EMULATOR "$OB" --log-level debug --db "$db" run \
     --outbox-queue-url "$Q2" >"$dir/run.out" 2>"$dir/run.err") &
  BG=$!
  for i in $(seq 150); do
    [ "$(grep -c 'SendMessageBatch 200 ok' "$W/server.out")" -gt "$before" ] && break
    sleep 0.1
  done
  sleep 0.3
  # The -wal and -shm exist only while a process holds the database.
  cp "$db-wal" "$dir/held.db-wal" 2>/dev/null
  cp "$db-shm" "$dir/held.db-shm" 2>/dev/null
  pid=$BG   # the subshell exec'd env, which exec'd oncebox
  # 1. gcore: a core of the live process, whatever core_pattern says. Not
  # for a process mapping more than 4 GiB: an ASan build reserves terabytes
  # of shadow memory, and gcore would write them.
  local vm
  vm=$(awk '/^VmSize:/ {print $2}' "/proc/$pid/status" 2>/dev/null)
  if command -v gcore >/dev/null && [ -n "$vm" ] && [ "$vm" -lt 4194304 ]; then
    gcore -o "$dir/gcore" "$pid" >/dev/null 2>&1
  elif [ -n "$vm" ] && [ "$vm" -ge 4194304 ]; then
    echo "no gcore for $dir: the process maps $((vm / 1048576)) GiB (a sanitizer build)"
  fi
  # 2. The kernel's core on SIGABRT, when core_pattern is a plain file name
  # (not a pipe to systemd-coredump or apport) and the limit can be raised.
  # (ASan builds do not dump cores: then only the gcore is there.)
  if [[ $core_pattern != \|* ]] && [ "$(ulimit -c 4194304 2>/dev/null && ulimit -c)" = 4194304 ]; then
    kernel_core_tried=$((kernel_core_tried + 1))
    kill -ABRT "$pid" 2>/dev/null
  else
    kill -KILL "$pid" 2>/dev/null
  fi
  wait "$BG" 2>/dev/null
  BG=
  local c found=0
  while IFS= read -r c; do cores+=("$c"); found=1; done < <(find "$dir" -maxdepth 1 -type f \( -name 'core*' -o -name 'gcore*' \))
  [ $found = 1 ] || echo "no core file for $dir (a sanitizer build dumps none; core_pattern '$core_pattern')"
}
make_core "$W/core-env"
make_core "$W/core-file" -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_SESSION_TOKEN

# ---- the search ----------------------------------------------------------------------
url_enc() { printf '%s' "$1" | sed 's|/|%2F|g; s|+|%2B|g; s|=|%3D|g'; }
b64_variants() {  # the parts of base64(x) that do not depend on alignment
  local s=$1 p
  for p in "" "a" "ab"; do
    printf '%s%s' "$p" "$s" | base64 -w0 | cut -c$(( (${#p} + 2) / 3 * 4 + 5 ))-$(( (${#p} + ${#s}) / 3 * 4 - 4 ))
    echo
  done
}
hex_of() { printf '%s' "$1" | od -An -tx1 | tr -d ' \n'; }
: >"$W/patterns.secret"
: >"$W/patterns.token"
for v in "$SECRET" "$SECRET_MARK" "$WRONG" "$WRONG_MARK" "$(url_enc "$SECRET")" "$(hex_of "$SECRET_MARK")"; do
  printf '%s\n' "$v" >>"$W/patterns.secret"
done
b64_variants "$SECRET_MARK" >>"$W/patterns.secret"
b64_variants "$WRONG_MARK" >>"$W/patterns.secret"
for v in "$TOKEN" "$TOKEN_MARK" "$(url_enc "$TOKEN")" "$(hex_of "$TOKEN_MARK")"; do
  printf '%s\n' "$v" >>"$W/patterns.token"
done
b64_variants "$TOKEN_MARK" >>"$W/patterns.token"
# The provider's canary Authorization value (the echo steps above).
printf '%s\n' "$PMARK" "sk_canary_$PMARK" >>"$W/patterns.secret"
sed -i '/^$/d' "$W/patterns.secret" "$W/patterns.token"

# Artifacts: everything oncebox wrote or printed, the databases, and every
# other file created in the work folder since the start, its TMPDIR and
# HOME included (other than this run's test infrastructure: the server's
# log, its PKI, the credentials file the test wrote and the search
# patterns; the core files are judged apart, below).
arts="$W/artifacts"
{
  find "$W/out" -type f
  find "$W" -maxdepth 2 -type f \( -name '*.db' -o -name '*.db-wal' -o -name '*.db-shm' -o -name 'run.out' -o -name 'run.err' \)
  find "$W" -xdev -type f -newer "$W/.start" 2>/dev/null |
    grep -v -e "^$W/pki/" -e "^$W/server.out$" -e "^$W/home/.aws/credentials$" \
      -e "^$W/patterns\." -e "^$W/artifacts" -e "^$W/core-" -e "^$W/\.start$" -e "^$W/out/"
} | sort -u >"$arts"
nart=$(wc -l <"$arts")
nout=$(find "$W/out" -type f | wc -l)
ndb=$(grep -cE '\.db(-wal|-shm)?$' "$arts")
ntmp=$((nart - nout - ndb))
count() {  # count PATTERN-FILE|REGEX MODE FILES...: total occurrences
  local pf=$1 mode=$2 total=0 c f
  shift 2
  for f in "$@"; do
    [ -r "$f" ] || continue
    if [ "$mode" = F ]; then c=$(grep -a -o -F -f "$pf" -- "$f" 2>/dev/null | wc -l)
    else c=$(grep -a -o -E -- "$pf" "$f" 2>/dev/null | wc -l); fi
    if [ "$c" -gt 0 ]; then echo "  $c in $f" >&2; fi
    total=$((total + c))
  done
  echo $total
}
mapfile -t files <"$arts"
echo "searching $nart artifacts:" >&2
s=$(count "$W/patterns.secret" F "${files[@]}")
t=$(count "$W/patterns.token" F "${files[@]}")
g=$(count 'Signature=[0-9a-f]{64}' E "${files[@]}")
# A header a peer echoed may stay by name; its value must be redacted.
h=$(count 'AWS4-HMAC-SHA256 Credential|[Xx]-[Aa]mz-[Ss]ecurity-[Tt]oken: *[^[ ]|[Aa]uthorization: *Bearer [^[]' E "${files[@]}")
echo "canary: $nart artifacts ($nout stdout/stderr files of $n commands, $ndb database files, $ntmp other files in its work folder, TMPDIR and HOME): secret $s, token $t, signatures $g, auth headers $h"
[ $((s + t + g + h)) -eq 0 ] || note_fail "a secret, token, signature or auth header reached an artifact (listed above)"
# Self-check: the search finds what it looks for.
printf 'x%sx\n' "$SECRET_MARK" >"$W/selfcheck"
[ "$(count "$W/patterns.secret" F "$W/selfcheck" 2>/dev/null)" -ge 1 ] || note_fail "the search does not find the secret in a file that has it"
rm -f "$W/selfcheck"

if [ ${#cores[@]} -gt 0 ]; then
  for c in "${cores[@]}"; do
    cs=$(count "$W/patterns.secret" F "$c" 2>/dev/null)
    ct=$(count "$W/patterns.token" F "$c" 2>/dev/null)
    cg=$(count 'Signature=[0-9a-f]{64}' E "$c" 2>/dev/null)
    src="credentials in the environment"
    case $c in *core-file*) src="credentials in ~/.aws/credentials only" ;; esac
    case $(basename "$c") in gcore*) how=gcore ;; *) how="kernel, SIGABRT" ;; esac
    echo "core file ($how; $src; $(du -k "$c" | cut -f1) KiB): secret $cs, token $ct, signatures $cg"
    # The kernel must not write one: oncebox makes itself not dumpable.
    # gcore is ptrace by root (CAP_SYS_PTRACE reads any process's memory):
    # a process that signs holds its secret, so live copies are expected
    # there; freed copies are wiped. Informational unless strict.
    if [ "$how" != gcore ]; then
      note_fail "the kernel wrote a core file of a running oncebox"
    elif [ $((cs + ct + cg)) -gt 0 ] && [ -n "${OB_CANARY_STRICT_CORE:-}" ]; then
      note_fail "credentials in a gcore core file"
    fi
  done
else
  echo "core files: none could be made (core_pattern '$core_pattern'); not checked"
fi
if [ "$kernel_core_tried" -gt 0 ]; then
  kc=0
  for c in "${cores[@]}"; do case $(basename "$c") in gcore*) ;; *) kc=$((kc + 1)) ;; esac; done
  echo "kernel core files of a running oncebox after SIGABRT (not dumpable): $kc of $kernel_core_tried"
fi
exit $fail
