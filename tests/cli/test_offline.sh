#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Offline limits through the command line (docs/offline.md): the provider
# at a port nobody listens on goes offline at its first call; then a charge
# over a limit is refused with exit 7, leaving no effect, while one within
# the limits is stored (exit 5, waiting for the provider). The limits come
# from the flag, the environment and the config file alike; bad ones are
# usage errors. Usage: test_offline.sh PATH/TO/oncebox
set -u
: "${OB_EMULATOR:=}"
OB=${1:?usage: test_offline.sh PATH/TO/oncebox}
T=$(mktemp -d "${TMPDIR:-/tmp}/oncebox-offline-XXXXXX")
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/lib.sh"
# No config file of the machine's; a refused message's retry falls due an
# hour later, after the run, so it stays queued and the run ends.
export ONCEBOX_CONFIG="$T/none.conf"
: >"$ONCEBOX_CONFIG"
export ONCEBOX_RETRY_DELAY=1h
PROVIDER=(--provider-url http://127.0.0.1:9 --provider-allow-http)
N=0

order() {  # order DB ORDER AMOUNT [CURRENCY]
  N=$((N + 1))
  check "enqueue $2" 0 $OB_EMULATOR "$OB" --db "$1" enqueue --type ChargeOrder \
    --id "$(printf '0190b6d8-3ae7-7ca2-a653-%012d' $N)" \
    --body "{\"orderId\":\"$2\",\"amountInMinorUnits\":$3,\"currency\":\"${4:-EUR}\"}"
}

effects() {  # effects DB KEY -> the effect's state and amount, or "none"
  $OB_EMULATOR "$OB" --db "$1" effects show --json "$2" 2>/dev/null |
    python3 -c 'import json,sys; l=sys.stdin.read().strip(); e=json.loads(l) if l else None; print("%s %s %s" % (e["state"], e["amountMinor"], e["currency"]) if e else "none")'
}

# ---- the flag ----------------------------------------------------------------
DB="$T/flag.db"
LIM=(--provider-offline-limits EUR:max_amount=2500:max_total=3000:max_age=24h)
order "$DB" o-1 1000
check "first charge: the provider cannot be reached" 5 timeout 60 $OB_EMULATOR "$OB" --db "$DB" run --until-idle "${PROVIDER[@]}" "${LIM[@]}"
order "$DB" o-2 2501
check "one cent over the maximum of one charge: exit 7" 7 timeout 60 $OB_EMULATOR "$OB" --db "$DB" run --until-idle "${PROVIDER[@]}" "${LIM[@]}"
contains "the refusal said" err "refused: 1 charge claim(s) while the payment provider is offline"
contains "the reason" err "amount 2501 EUR is over the offline maximum of one effect, 2500"
contains "retried, not done" err "(0 done, 1 retried, 0 failed, 0 waiting)"
equals "no effect for the refused order" "$(effects "$DB" charge:o-2)" none
order "$DB" o-3 2000
check "up to the stored total exactly: stored" 5 timeout 60 $OB_EMULATOR "$OB" --db "$DB" run --until-idle "${PROVIDER[@]}" "${LIM[@]}"
equals "the order at the total is stored" "$(effects "$DB" charge:o-3)" "pending 2000 EUR"
order "$DB" o-4 1
check "one cent over the stored total: exit 7" 7 timeout 60 $OB_EMULATOR "$OB" --db "$DB" run --until-idle "${PROVIDER[@]}" "${LIM[@]}"
contains "the total's reason" err "would pass the offline maximum of the stored total, 3000"
equals "no effect for the order over the total" "$(effects "$DB" charge:o-4)" none
check "check: the totals match the effects" 0 $OB_EMULATOR "$OB" --db "$DB" check

# ---- the environment -----------------------------------------------------------
DB="$T/env.db"
order "$DB" e-1 100
check "env: first charge stored" 5 timeout 60 env ONCEBOX_PROVIDER_OFFLINE_LIMITS=EUR:max_count=1 $OB_EMULATOR "$OB" --db "$DB" run --until-idle "${PROVIDER[@]}"
order "$DB" e-2 100
check "env: the count" 7 timeout 60 env ONCEBOX_PROVIDER_OFFLINE_LIMITS=EUR:max_count=1 $OB_EMULATOR "$OB" --db "$DB" run --until-idle "${PROVIDER[@]}"
contains "env: the count's reason" err "1 EUR effects are stored, the offline maximum"

# ---- the config file -----------------------------------------------------------
DB="$T/file.db"
cat >"$T/offline.conf" <<CONF
[provider]
offline_limits = EUR:max_amount=100:max_age=2d
offline_unlisted = refuse
CONF
chmod 600 "$T/offline.conf"
check "file: config show" 0 env ONCEBOX_CONFIG="$T/offline.conf" $OB_EMULATOR "$OB" config show
contains "file: the limits' source" out "= EUR:max_amount=100:max_age=2d  (file $T/offline.conf:2)"
contains "file: the default's source" out "= refuse  (file $T/offline.conf:3)"
order "$DB" f-1 100
check "file: at the maximum, stored" 5 timeout 60 env ONCEBOX_CONFIG="$T/offline.conf" $OB_EMULATOR "$OB" --db "$DB" run --until-idle "${PROVIDER[@]}"
order "$DB" f-2 1 USD
check "file: a currency without limits is refused" 7 timeout 60 env ONCEBOX_CONFIG="$T/offline.conf" $OB_EMULATOR "$OB" --db "$DB" run --until-idle "${PROVIDER[@]}"
contains "file: unlisted reason" err "no offline limit is set for USD"

# ---- bad limits: usage errors, nothing done --------------------------------------
check "bad currency" 2 $OB_EMULATOR "$OB" --db "$T/bad.db" run --until-idle "${PROVIDER[@]}" --provider-offline-limits eur:max_amount=1
contains "bad currency said" err "not a currency of three upper-case letters"
check "bad figure" 2 env ONCEBOX_PROVIDER_OFFLINE_LIMITS=EUR:max_amount=ten $OB_EMULATOR "$OB" --db "$T/bad.db" run --until-idle "${PROVIDER[@]}"
contains "bad figure said" err "max_amount wants a whole number"
check "unknown key" 2 $OB_EMULATOR "$OB" --db "$T/bad.db" run --until-idle "${PROVIDER[@]}" --provider-offline-limits EUR:max_amonut=1
check "twice" 2 $OB_EMULATOR "$OB" --db "$T/bad.db" run --until-idle "${PROVIDER[@]}" --provider-offline-limits EUR:max_count=1,EUR:max_total=5
check "bad default" 2 env ONCEBOX_PROVIDER_OFFLINE_UNLISTED=maybe $OB_EMULATOR "$OB" --db "$T/bad.db" run --until-idle "${PROVIDER[@]}"
report
