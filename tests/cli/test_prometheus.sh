#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `oncebox stats --prometheus` and `--prometheus-file PATH` with the real
# program on real files: the values after enqueue / handle / fail, the file
# replaced atomically with mode 0644 and no temp file left, errors that name
# the path, and promtool's `check metrics` (Debian's prometheus package;
# skipped with a message when absent) clean of errors and lint warnings.
# Usage: test_prometheus.sh PATH/TO/oncebox
set -u
: "${OB_EMULATOR:=}"
OB=${1:?usage: test_prometheus.sh PATH/TO/oncebox}
T=$(mktemp -d "${TMPDIR:-/tmp}/oncebox-prom-XXXXXX")
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/lib.sh"
DB="$T/t.db"

value() {  # value FILE 'SERIES' -> its sample value
  awk -v s="$2" '$1 == s { print $2 }' "$1"
}

# promtool check metrics: exit 0 and nothing said (a lint warning is a
# line on stdout with exit 3 in 2.42; any output fails here).
promcheck() {  # promcheck NAME FILE
  if [ -z "${PROMTOOL:-}" ]; then return; fi
  local out rc
  out=$("$PROMTOOL" check metrics <"$2" 2>&1)
  rc=$?
  if [ "$rc" = 0 ] && [ -z "$out" ]; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL $1: promtool exit $rc: $out"; fi
}

PROMTOOL=$(command -v promtool || true)
if [ -z "$PROMTOOL" ]; then
  echo "SKIP promtool checks: promtool not found (Debian: apt-get install" \
       "--no-install-recommends prometheus; tests/install-deps.sh does)"
fi

pay() {  # pay N AMOUNT -> a PaymentCaptured body
  printf '{"paymentId":"5c4080b1-b5d2-4e91-8de8-%012d","merchantId":"3727331a-b533-4c6e-a0f8-48532237307b","amountInMinorUnits":%s,"currency":"EUR"}' "$1" "$2"
}
mid() { printf '0190b6d8-3ae7-7ca2-a653-%012d' "$1"; }

check "stats --help names --prometheus-file" 0 $OB_EMULATOR "$OB" stats --help
contains "help --prometheus" "$T/out" "--prometheus-file PATH"
check "--json with --prometheus" 2 $OB_EMULATOR "$OB" --db "$DB" stats --json --prometheus
check "--prometheus-file without a path" 2 $OB_EMULATOR "$OB" --db "$DB" stats --prometheus-file
check "missing db" 4 $OB_EMULATOR "$OB" --db "$DB" stats --prometheus
contains "missing db says so" "$T/err" "no database at $DB"

check "init" 0 $OB_EMULATOR "$OB" --db "$DB" init
# Three good payments, one that fails (a negative amount), handled; then
# two more enqueued, one delayed an hour.
for i in 1 2 3; do
  check "enqueue $i" 0 $OB_EMULATOR "$OB" --db "$DB" enqueue --type PaymentCaptured --id "$(mid $i)" --body "$(pay $i 100)"
done
check "enqueue bad" 0 $OB_EMULATOR "$OB" --db "$DB" enqueue --type PaymentCaptured --id "$(mid 4)" --body "$(pay 4 -5)"
check "run" 0 $OB_EMULATOR "$OB" --db "$DB" --log-level error run --until-idle
check "enqueue 5" 0 $OB_EMULATOR "$OB" --db "$DB" enqueue --type PaymentCaptured --id "$(mid 5)" --body "$(pay 5 100)"
check "enqueue 6 delayed" 0 $OB_EMULATOR "$OB" --db "$DB" enqueue --type PaymentCaptured --id "$(mid 6)" --body "$(pay 6 100)" --delay 3600000

check "stats --prometheus" 0 $OB_EMULATOR "$OB" --db "$DB" stats --prometheus
cp "$T/out" "$T/a.prom"
P="$T/a.prom"
equals "ready" "$(value "$P" 'oncebox_queue_messages{state="ready"}')" 1
equals "delayed" "$(value "$P" 'oncebox_queue_messages{state="delayed"}')" 1
equals "in hand" "$(value "$P" 'oncebox_queue_messages{state="in_hand"}')" 0
equals "failed" "$(value "$P" oncebox_failed_messages)" 1
equals "dedup records" "$(value "$P" oncebox_dedup_records)" 3
equals "payouts" "$(value "$P" oncebox_payouts)" 3
# No relay here: the payouts' events wait in the outbox.
equals "outbox pending" "$(value "$P" oncebox_outbox_pending)" 3
equals "outbox published" "$(value "$P" oncebox_outbox_published)" 0
equals "outbox parked" "$(value "$P" oncebox_outbox_parked)" 0
equals "unfenced" "$(value "$P" oncebox_unfenced_successes)" 0
equals "build info" "$(value "$P" "oncebox_build_info{version=\"$($OB_EMULATOR "$OB" --version | awk '{print $2}')\"}")" 1
age=$(value "$P" oncebox_outbox_oldest_age_seconds)
if [[ "$age" =~ ^[0-9]+\.[0-9]{3}$ ]]; then pass=$((pass + 1)); else
  fail=$((fail + 1)); echo "FAIL age format: '$age'"; fi
ts=$(value "$P" oncebox_stats_timestamp_seconds)
now=$(date +%s)
if [[ "$ts" =~ ^[0-9]+\.[0-9]{3}$ ]] && [ $(( ${ts%.*} - now )) -le 5 ] &&
   [ $(( now - ${ts%.*} )) -le 60 ]; then pass=$((pass + 1)); else
  fail=$((fail + 1)); echo "FAIL timestamp: '$ts', now $now"; fi
# Absent by design: no relay has run, nothing published.
lacks "no relay_online" "$P" "oncebox_relay_online"
lacks "no last publish" "$P" "oncebox_last_publish_timestamp_seconds"
# Nothing configured: the cap derived from the filesystem (decision 0021).
equals "default cap source" "$(value "$P" 'oncebox_db_max_size_info{source="filesystem"}')" 1
check "stats with no cap" 0 env ONCEBOX_MAX_DB_BYTES=none $OB_EMULATOR "$OB" --db "$DB" stats --prometheus
lacks "no max size" "$T/out" "oncebox_db_max_size_bytes"
lacks "no cap source" "$T/out" "oncebox_db_max_size_info"
# No counter: a one-shot read cannot know one.
lacks "no _total" "$P" "_total"
# A HELP and a TYPE line for every family, each once.
equals "HELP per TYPE" "$(grep -c '^# HELP ' "$P")" "$(grep -c '^# TYPE ' "$P")"
equals "families once" "$(grep '^# TYPE ' "$P" | sort | uniq -d | wc -l)" 0
promcheck "promtool: stats --prometheus" "$P"
# The text report has the same figures (one read, one vocabulary).
check "stats text" 0 $OB_EMULATOR "$OB" --db "$DB" stats
contains "text queue" "$T/out" "queue:     1 ready, 1 delayed, 0 in hand"

# A cap, and a relay that ran: the families that depend on them appear.
# (relay_status as a relay writes it: offline, with the transport error.)
sqlite3 "$DB" "INSERT INTO relay_status(name, online, last_publish_at, last_error, updated_at) VALUES ('sqs', 0, 1700000000123, 'connection refused', 1700000000200)" 2>/dev/null && {
  check "stats with relay and cap" 0 env ONCEBOX_MAX_DB_BYTES=4M $OB_EMULATOR "$OB" --db "$DB" stats --prometheus
  cp "$T/out" "$T/b.prom"
  equals "relay offline" "$(value "$T/b.prom" oncebox_relay_online)" 0
  equals "relay error" "$(value "$T/b.prom" oncebox_relay_error)" 1
  equals "last publish" "$(value "$T/b.prom" oncebox_last_publish_timestamp_seconds)" 1700000000.123
  equals "max size" "$(value "$T/b.prom" oncebox_db_max_size_bytes)" 4194304
  equals "cap source" "$(value "$T/b.prom" 'oncebox_db_max_size_info{source="configured"}')" 1
  lacks "error words not in labels" "$T/b.prom" "connection refused"
  promcheck "promtool: relay and cap" "$T/b.prom"
}

# --prometheus-file: nothing on stdout, the file 0644 whatever the umask,
# an old file replaced (a new inode: renamed over, not rewritten in place),
# no temp file left in the directory.
mkdir "$T/textfile"
F="$T/textfile/oncebox.prom"
echo "old" >"$F"
chmod 600 "$F"
old_inode=$(stat -c %i "$F")
check "--prometheus-file" 0 sh -c "umask 077; exec $OB_EMULATOR '$OB' --db '$DB' stats --prometheus-file '$F'"
equals "nothing on stdout" "$(wc -c <"$T/out")" 0
equals "file mode" "$(stat -c %a "$F")" 644
if [ "$(stat -c %i "$F")" != "$old_inode" ]; then pass=$((pass + 1)); else
  fail=$((fail + 1)); echo "FAIL file replaced in place (same inode)"; fi
equals "only the file" "$(ls -A "$T/textfile")" "oncebox.prom"
equals "file = stdout's figures" "$(value "$F" oncebox_failed_messages)" 1
equals "old content gone" "$(grep -cx old "$F")" 0
promcheck "promtool: --prometheus-file" "$F"
check "--prometheus-file=PATH" 0 $OB_EMULATOR "$OB" --db "$DB" stats "--prometheus-file=$F"
equals "still only the file" "$(ls -A "$T/textfile")" "oncebox.prom"

# A reader polling the file while it is rewritten never sees a part: every
# read is whole (ends with the timestamp sample, the last line).
(
  for _ in $(seq 1 25); do
    $OB_EMULATOR "$OB" --db "$DB" stats --prometheus-file "$F" || exit 1
  done
) &
writer=$!
partial=0
reads=0
while kill -0 "$writer" 2>/dev/null; do
  if [ -f "$F" ]; then
    last=$(tail -n 1 "$F")
    case "$last" in
      oncebox_stats_timestamp_seconds\ *) ;;
      *) partial=$((partial + 1)) ;;
    esac
    reads=$((reads + 1))
  fi
done
wait "$writer"
equals "writer ok" "$?" 0
equals "no partial read ($reads reads)" "$partial" 0
equals "no temp file after rewrites" "$(ls -A "$T/textfile")" "oncebox.prom"

# An unwritable place: exit 1, the path named, no temp file anywhere.
check "missing directory" 1 $OB_EMULATOR "$OB" --db "$DB" stats --prometheus-file "$T/nodir/x.prom"
contains "missing directory names the path" "$T/err" "$T/nodir/x.prom"
echo "not a directory" >"$T/plain"
check "parent is a file" 1 $OB_EMULATOR "$OB" --db "$DB" stats --prometheus-file "$T/plain/x.prom"
contains "parent is a file names the path" "$T/err" "$T/plain/x.prom"
# A directory as the target: the temp file is written, the rename fails,
# and the temp file is removed.
mkdir "$T/isdir"
check "target is a directory" 1 $OB_EMULATOR "$OB" --db "$DB" stats --prometheus-file "$T/isdir"
contains "target is a directory names it" "$T/err" "$T/isdir"
equals "no temp file after a failed rename" "$(ls -A "$T" | grep -c '\.tmp\.')" 0
if [ "$(id -u)" != 0 ]; then
  mkdir "$T/ro" && chmod 555 "$T/ro"
  check "read-only directory" 1 $OB_EMULATOR "$OB" --db "$DB" stats --prometheus-file "$T/ro/x.prom"
  contains "read-only directory names the path" "$T/err" "$T/ro/x.prom"
  equals "read-only directory stays empty" "$(ls -A "$T/ro")" ""
  chmod 755 "$T/ro"
fi

report
