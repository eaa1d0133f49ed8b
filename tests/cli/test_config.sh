#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The config file (docs/config.md) with the real program: every key
# settable and shown by `config show` with its file:line; precedence flag >
# environment > file > default on one key; bad files refused with file:line,
# exit 2 and nothing done (no database created); a world-writable file and a
# missing explicit one refused; a secret-looking key refused without echoing
# the canary; `config check`; and a [retry.QUEUE] policy from the file that
# changes how many times a failing handler runs before the failure store.
# Usage: test_config.sh PATH/TO/oncebox PATH/TO/ob-cli-embedder
set -u
: "${OB_EMULATOR:=}"
OB=${1:?usage: test_config.sh PATH/TO/oncebox PATH/TO/ob-cli-embedder}
EMB=${2:?usage: test_config.sh PATH/TO/oncebox PATH/TO/ob-cli-embedder}
T=$(mktemp -d "${TMPDIR:-/tmp}/oncebox-config-XXXXXX")
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/lib.sh"
# Only what each case sets: none of the caller's ONCEBOX_* settings.
for v in $(env | grep -o '^ONCEBOX_[A-Z_]*'); do unset "$v"; done

absent() {  # absent NAME PATH
  if [ -e "$2" ]; then fail=$((fail + 1)); echo "FAIL $1: $2 exists"
  else pass=$((pass + 1)); fi
}

conf() {  # conf FILE < text: a config file of mode 0600
  cat >"$1"
  chmod 600 "$1"
}

# ---- every key ------------------------------------------------------------
CF="$T/full.conf"
conf "$CF" <<CONF
# every key, none at its default
[database]
path = "$T/full.db"
max_bytes = 64M
reserve_bytes = 1M
critical_types = OrderPlaced,Refund
busy_timeout = 250ms
unsafe_sync_normal = true

[engine]
batch_size = 50
retention = 7d
gc_interval = 10m
gc_batch = 500
poll_interval = 2s
max_body_bytes = 256K

[log]
level = debug
format = json

[retry]
max_retries = 7
delay = 2s
multiplier = 1.5
max_delay = 1m
jitter = 0.2

[retry.orders]
max_retries = 1

[relay]
queue_url = https://sqs.eu-west-1.amazonaws.com/123456789012/out
source = "urn:pos:store-17"
ordered = true

[consumer]
queue_url = https://sqs.eu-west-1.amazonaws.com/123456789012/in
prefetch = 5
visibility_timeout = 2m
failures_to_sqs = true

[sqs]
allow_http = true

[provider]
url = https://pay.example
allow_http = true
idempotency_keys = false
lookup = false
timeout = 10s
key_retention = 31d
reference_lookup = "/v1/charges/search?query=metadata['order_id']:'{reference}'"
offline_limits = EUR:max_amount=25000:max_total=100000,USD:max_count=5
offline_unlisted = refuse

[metrics]
listen = 127.0.0.1:9464
CONF
check "config show, every key" 0 $OB_EMULATOR "$OB" --config "$CF" config show
cp "$T/out" "$T/show"
want=(
  "database.path=$T/full.db" "database.max_bytes=67108864"
  "database.reserve_bytes=1048576" "database.critical_types=OrderPlaced,Refund"
  "database.busy_timeout=250ms" "database.unsafe_sync_normal=true"
  "engine.batch_size=50" "engine.retention=7d" "engine.gc_interval=10m"
  "engine.gc_batch=500" "engine.poll_interval=2s"
  "engine.max_body_bytes=262144" "log.level=debug" "log.format=json"
  "retry.max_retries=7" "retry.delay=2s" "retry.multiplier=1.5"
  "retry.max_delay=1m" "retry.jitter=0.2"
  "relay.queue_url=https://sqs.eu-west-1.amazonaws.com/123456789012/out"
  "relay.source=urn:pos:store-17" "relay.ordered=true"
  "consumer.queue_url=https://sqs.eu-west-1.amazonaws.com/123456789012/in"
  "consumer.prefetch=5" "consumer.visibility_timeout=2m"
  "consumer.failures_to_sqs=true" "sqs.allow_http=true"
  "provider.url=https://pay.example" "provider.allow_http=true"
  "provider.idempotency_keys=false" "provider.lookup=false"
  "provider.timeout=10s" "provider.key_retention=31d"
  "provider.reference_lookup=/v1/charges/search?query=metadata['order_id']:'{reference}'"
  "provider.offline_limits=EUR:max_amount=25000:max_total=100000,USD:max_count=5"
  "provider.offline_unlisted=refuse"
  "metrics.listen=127.0.0.1:9464"
)
for kv in "${want[@]}"; do
  k=${kv%%=*} v=${kv#*=}
  # The key's own line: the first of that name after its section header.
  sec=${k%.*}
  line=$(awk -v s="[$sec]" -v k="${k##*.}" '
    $0 == s { on = 1; next } /^\[/ { on = 0 }
    on && $1 == k { print NR; exit }' "$CF")
  got=$(awk -v k="$k" '$1 == k { sub(/^[^=]*= /, ""); print; exit }' "$T/show")
  equals "show $k" "$got" "$v  (file $CF:$line)"
done
equals "show: every setting from the file" "$(grep -c "(file $CF:" "$T/show")" "$(( ${#want[@]} + 1 ))"
contains "show: the queue's policy" "$T/show" "retry.orders.max_retries"
contains "show: the queue's policy from its line" "$T/show" "= 1  (file $CF:$(grep -n '^max_retries = 1$' "$CF" | cut -d: -f1))"
contains "show: the queue inherits the rest" "$T/show" "retry.orders.delay"
contains "show names the file" "$T/show" "# config file: $CF"
absent "show creates no database" "$T/full.db"
check "config show --json" 0 $OB_EMULATOR "$OB" --config "$CF" config show --json
cp "$T/out" "$T/show.json"
if command -v python3 >/dev/null; then
  check "show --json parses" 0 python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
s = {x["key"]: x for x in d["settings"]}
assert d["file"] == sys.argv[2], d["file"]
assert s["engine.gc_batch"]["value"] == "500", s["engine.gc_batch"]
assert s["engine.gc_batch"]["source"].startswith("file "), s["engine.gc_batch"]
assert s["provider.authorization"]["value"] == "(not set)"
' "$T/show.json" "$CF"
fi

# ---- precedence: flag > environment > file > default ----------------------
P="$T/prec.conf"
conf "$P" <<'CONF'
[engine]
gc_batch = 111
CONF
gcb() { awk '$1 == "engine.gc_batch" { sub(/^[^=]*= /, ""); print }' "$T/out"; }
check "precedence: flag" 0 env ONCEBOX_GC_BATCH=222 $OB_EMULATOR "$OB" --config "$P" --gc-batch 333 config show
equals "flag wins" "$(gcb)" "333  (flag --gc-batch)"
check "precedence: env" 0 env ONCEBOX_GC_BATCH=222 $OB_EMULATOR "$OB" --config "$P" config show
equals "env over the file" "$(gcb)" "222  (env ONCEBOX_GC_BATCH)"
check "precedence: file" 0 $OB_EMULATOR "$OB" --config "$P" config show
equals "the file over the default" "$(gcb)" "111  (file $P:2)"
check "precedence: \$ONCEBOX_CONFIG" 0 env ONCEBOX_CONFIG="$P" $OB_EMULATOR "$OB" config show
equals "ONCEBOX_CONFIG names the file" "$(gcb)" "111  (file $P:2)"
: >"$T/empty.conf"; chmod 600 "$T/empty.conf"
check "precedence: default" 0 $OB_EMULATOR "$OB" --config "$T/empty.conf" config show
equals "the default" "$(gcb)" "1000  (default)"
# A global flag that was a flag before (--max-db-bytes) over the file.
conf "$T/cap.conf" <<'CONF'
[database]
max_bytes = 8M
CONF
check "cap: flag over file" 0 $OB_EMULATOR "$OB" --config "$T/cap.conf" --max-db-bytes 16M config show
contains "cap: the flag's value" "$T/out" "16777216  (flag --max-db-bytes)"
# The reserve/cap rule spans the layers and names each source.
check "reserve over half the cap across layers" 2 env ONCEBOX_RESERVE_DB_BYTES=5M $OB_EMULATOR "$OB" --config "$T/cap.conf" --db "$T/x.db" init
contains "reserve rule names the sources" "$T/err" "env ONCEBOX_RESERVE_DB_BYTES"
contains "reserve rule names the file line" "$T/err" "file $T/cap.conf:2"
absent "reserve rule: no database" "$T/x.db"
check "bad env value" 2 env ONCEBOX_GC_BATCH=0 $OB_EMULATOR "$OB" --db "$T/x.db" init
contains "bad env value reason" "$T/err" "ONCEBOX_GC_BATCH expects an integer 1..1000000, not '0'"
absent "bad env value: no database" "$T/x.db"

# The file's database path is the one used.
conf "$T/db.conf" <<CONF
[database]
path = "$T/from-file.db"
CONF
check "database.path from the file" 0 $OB_EMULATOR "$OB" --config "$T/db.conf" init
contains "init names the file's database" "$T/out" "initialized $T/from-file.db"

# The file's settings reach the commands, not just `config show`: an http://
# provider URL from the file is refused by run unless the file (or a flag)
# allows plain HTTP; `effects reconcile` finds the provider in the file.
conf "$T/prov.conf" <<CONF
[database]
path = "$T/prov.db"
[provider]
url = http://127.0.0.1:9
CONF
check "run: the file's provider URL is used" 2 $OB_EMULATOR "$OB" --config "$T/prov.conf" run --until-idle
contains "run: the file's http:// URL refused" "$T/err" "the provider URL is plain http://: refused"
check "run: --provider-allow-http over the file" 0 $OB_EMULATOR "$OB" --config "$T/prov.conf" run --until-idle --provider-allow-http
printf 'allow_http = true\n' >>"$T/prov.conf"
check "run: the file allows http" 0 $OB_EMULATOR "$OB" --config "$T/prov.conf" run --until-idle
check "reconcile: the file's provider" 0 $OB_EMULATOR "$OB" --config "$T/prov.conf" effects reconcile
lacks "reconcile: no 'no provider' error" "$T/err" "no provider to ask"
check "run: the environment over the file" 2 env ONCEBOX_PROVIDER_ALLOW_HTTP=0 $OB_EMULATOR "$OB" --config "$T/prov.conf" run --until-idle
contains "run: env 0 refuses http again" "$T/err" "the provider URL is plain http://: refused"
check "run: the flag over the environment" 0 env ONCEBOX_PROVIDER_ALLOW_HTTP=0 $OB_EMULATOR "$OB" --config "$T/prov.conf" run --until-idle --provider-allow-http

# metrics.listen from the file reaches run's listener; the flag wins.
conf "$T/metrics.conf" <<CONF
[database]
path = "$T/metrics.db"
[metrics]
listen = 0.0.0.0:19464
CONF
check "run: the file's metrics.listen is used" 2 $OB_EMULATOR "$OB" --config "$T/metrics.conf" run --until-idle
contains "run: the file's address refused (not loopback)" "$T/err" "0.0.0.0:19464 is not a loopback address"
check "run: --metrics-listen over the file" 2 $OB_EMULATOR "$OB" --config "$T/metrics.conf" run --until-idle --metrics-listen 127.0.0.1:0
contains "run: the flag's address is the one checked" "$T/err" "'127.0.0.1:0'"

# ---- bad files: file:line, exit 2, nothing done ---------------------------
bad() {  # bad NAME 'printf FORMAT' WANT
  local f="$T/bad-$1.conf"
  # shellcheck disable=SC2059
  printf "$2" >"$f"
  chmod 600 "$f"
  check "bad $1" 2 $OB_EMULATOR "$OB" --config "$f" --db "$T/bad.db" init
  contains "bad $1 reason" "$T/err" "$f:$3"
  absent "bad $1: no database" "$T/bad.db"
  lacks "bad $1: nothing done" "$T/out" "initialized"
}
bad unknown_key '[engine]\nbach = 1\n' "2: unknown key 'bach' in [engine]"
bad unknown_section '# x\n[nope]\n' "2: unknown section [nope]"
bad duplicate_key '[engine]\ngc_batch = 1\ngc_batch = 2\n' "3: key 'gc_batch' in [engine] set twice (first at line 2)"
bad duplicate_section '[log]\n[engine]\n[log]\n' "3: section [log] appears twice (first at line 1)"
bad bad_value '[engine]\nbatch_size = 0\n' "2: batch_size in [engine] expects an integer 1..10000, not '0'"
bad no_unit '[engine]\nretention = 30\n' "2: retention in [engine] expects a duration"
bad junk '[log]\nlevel = debug loud\n' "2: junk after the value of level in [log]"
bad enum '[log]\nformat = xml\n' "2: format in [log] expects one of text, json, not 'xml'"
bad outside 'gc_batch = 1\n' "1: key 'gc_batch' outside a section"
bad nul '[engine]\ngc_batch = 1\0\n' "2: a NUL byte at column 13"
bad utf8 '[engine]\n# \xff\n' "2: invalid UTF-8 at column 3"
bad sub '[engine.x]\n' "1: section [engine] has no sub-sections ([engine.x])"
bad retry_range '[retry.orders]\njitter = 2\n' "2: jitter in [retry.orders] expects a number 0..1, not '2'"
head -c 5000 /dev/zero | tr '\0' '#' >"$T/bad-long.conf"; chmod 600 "$T/bad-long.conf"
check "bad long line" 2 $OB_EMULATOR "$OB" --config "$T/bad-long.conf" --db "$T/bad.db" init
contains "bad long line reason" "$T/err" "$T/bad-long.conf:1: line longer than 4096 bytes"
absent "bad long line: no database" "$T/bad.db"

# ---- who may write it; an explicit file that is missing --------------------
conf "$T/ww.conf" <<'CONF'
[engine]
gc_batch = 5
CONF
chmod 666 "$T/ww.conf"
check "world-writable refused" 2 $OB_EMULATOR "$OB" --config "$T/ww.conf" --db "$T/ww.db" init
contains "world-writable reason" "$T/err" "refusing the config file $T/ww.conf: it is world-writable (mode 0666)"
absent "world-writable: no database" "$T/ww.db"
check "missing --config" 2 $OB_EMULATOR "$OB" --config "$T/missing.conf" --db "$T/m.db" init
contains "missing --config reason" "$T/err" "cannot read the config file $T/missing.conf"
absent "missing --config: no database" "$T/m.db"
check "missing \$ONCEBOX_CONFIG" 2 env ONCEBOX_CONFIG="$T/missing.conf" $OB_EMULATOR "$OB" --db "$T/m.db" init
absent "missing ONCEBOX_CONFIG: no database" "$T/m.db"
check "--config without a value" 2 $OB_EMULATOR "$OB" --config
if [ ! -e /etc/oncebox/oncebox.conf ]; then
  check "no default file is fine" 0 $OB_EMULATOR "$OB" --db "$T/d.db" init
  check "config check, no file" 0 $OB_EMULATOR "$OB" config check
  contains "config check says none" "$T/out" "no config file"
fi

# ---- secrets ---------------------------------------------------------------
CANARY=sk_cfg_canary_4f7a1
for key in authorization api_token aws_secret_access_key password; do
  conf "$T/secret.conf" <<CONF
[provider]
url = https://pay.example
$key = "Bearer $CANARY"
CONF
  check "secret key $key refused" 2 $OB_EMULATOR "$OB" --config "$T/secret.conf" --db "$T/s.db" init
  contains "secret key $key: file:line" "$T/err" "$T/secret.conf:3: '$key' in [provider] looks like a secret"
  contains "secret key $key: where secrets go" "$T/err" "ONCEBOX_PROVIDER_AUTHORIZATION in the service's environment"
  lacks "secret key $key: canary not echoed" "$T/err" "$CANARY"
  lacks "secret key $key: canary not on stdout" "$T/out" "$CANARY"
  absent "secret key $key: no database" "$T/s.db"
done
check "show with the secret in the environment" 0 env ONCEBOX_PROVIDER_AUTHORIZATION="Bearer $CANARY" $OB_EMULATOR "$OB" --config "$CF" config show
contains "secret shown as set" "$T/out" "provider.authorization         = (set, from environment)"
lacks "secret value not shown" "$T/out" "$CANARY"
check "show --json with the secret" 0 env ONCEBOX_PROVIDER_AUTHORIZATION="Bearer $CANARY" $OB_EMULATOR "$OB" --config "$CF" config show --json
lacks "secret value not in json" "$T/out" "$CANARY"
contains "secret set in json" "$T/out" '"provider.authorization","value":"(set)"'
# A bad string value is not quoted back (it may be a secret).
conf "$T/strbad.conf" <<CONF
[provider]
url = "https://$CANARY@pay.example" x
CONF
check "bad string value" 2 $OB_EMULATOR "$OB" --config "$T/strbad.conf" config show
lacks "bad string value not echoed" "$T/err" "$CANARY"

# ---- config check ----------------------------------------------------------
check "config check good" 0 $OB_EMULATOR "$OB" config check "$CF"
contains "config check good says ok" "$T/out" "$CF: ok"
check "config check bad" 2 $OB_EMULATOR "$OB" config check "$T/bad-unknown_key.conf"
contains "config check bad names file:line" "$T/err" "$T/bad-unknown_key.conf:2: unknown key 'bach' in [engine]"
# A broken file in force does not stop checking another one.
check "config check despite a broken --config" 0 env ONCEBOX_CONFIG="$T/bad-junk.conf" $OB_EMULATOR "$OB" config check "$CF"
check "config check world-writable" 2 $OB_EMULATOR "$OB" config check "$T/ww.conf"
check "config check the file in force" 0 $OB_EMULATOR "$OB" --config "$CF" config check
contains "config check in force says ok" "$T/out" "$CF: ok"
# The packaged example is valid as shipped and with every key uncommented.
EX="$(cd "$(dirname "$0")/../.." && pwd)/debian/oncebox.conf"
cp "$EX" "$T/example.conf"; chmod 600 "$T/example.conf"
check "example file valid" 0 $OB_EMULATOR "$OB" config check "$T/example.conf"
sed 's/^#\(\[retry\.\|[a-z_]* = \)/\1/' "$EX" >"$T/example-all.conf"
chmod 600 "$T/example-all.conf"
equals "example: every key uncommented" "$(grep -c '^[a-z_]* = ' "$T/example-all.conf")" 49
# Every setting config show lists is in the example, under its section.
missing_keys=$($OB_EMULATOR "$OB" config show 2>/dev/null | sed -n 's/^\([a-z_]*\)\.\([a-z_]*\) *= .*/\1 \2/p' |
  while read -r sec key; do
    [ "$key" = authorization ] && continue
    awk -v s="[$sec]" -v k="$key = " '$0 == s {in_s = 1; next} /^\[/ {in_s = 0}
      in_s && index($0, k) == 1 {found = 1} END {exit !found}' "$T/example-all.conf" || echo "$sec.$key"
  done)
equals "example: every setting of config show" "$missing_keys" ""
check "example file valid uncommented" 0 $OB_EMULATOR "$OB" config check "$T/example-all.conf"
check "config bad subcommand" 2 $OB_EMULATOR "$OB" config frobnicate
check "config --help" 0 $OB_EMULATOR "$OB" config --help

# ---- a [retry.QUEUE] policy from the file changes behaviour -----------------
# The embedder's OrderPlaced handler inserts into vendor_orders; a CHECK on
# that table makes it fail (a retry) for bodies that say "fail". Queue
# "orders" gives up after 1 retry, "other" after the file's default 3.
if command -v sqlite3 >/dev/null; then
  RC="$T/retry.conf"
  RDB="$T/retry.db"
  conf "$RC" <<CONF
[database]
path = "$RDB"
[retry]
max_retries = 3
delay = 0ms
jitter = 0
[retry.orders]
max_retries = 1
CONF
  check "retry: init" 0 $OB_EMULATOR "$EMB" --config "$RC" init
  sqlite3 "$RDB" "CREATE TABLE vendor_orders(id TEXT PRIMARY KEY, body TEXT NOT NULL CHECK (body NOT LIKE '%fail%'))"
  check "retry: enqueue orders" 0 $OB_EMULATOR "$EMB" --config "$RC" enqueue --type OrderPlaced --id 11111111-1111-4111-8111-111111111111 --body '{"fail":1}' --queue orders
  check "retry: enqueue other" 0 $OB_EMULATOR "$EMB" --config "$RC" enqueue --type OrderPlaced --id 22222222-2222-4222-8222-222222222222 --body '{"fail":1}' --queue other
  check "retry: run" 0 $OB_EMULATOR "$EMB" --config "$RC" run --until-idle
  contains "retry: both failed" "$T/err" "2 failed"
  check "retry: failed show" 0 $OB_EMULATOR "$EMB" --config "$RC" failed show --json
  cp "$T/out" "$T/failed.json"
  attempts() {  # attempts QUEUE -> the failure store's attempts of its message
    # failed show --json: one object a line.
    grep "\"queue\":[[:space:]]*\"$1\"" "$T/failed.json" |
      sed -n 's/.*"attempts":[[:space:]]*\([0-9]*\).*/\1/p'
  }
  equals "retry: orders gave up after 1 retry ([retry.orders])" "$(attempts orders)" 1
  equals "retry: other gave up after 3 ([retry])" "$(attempts other)" 3
  contains "retry: the reason says so" "$T/failed.json" "gave up after 1 retries"
else
  echo "SKIP retry policy: no sqlite3"
fi

report
