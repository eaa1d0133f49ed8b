#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What scraping costs: `oncebox run --until-idle --batch B` over N queued
# payments with the metrics listener on, scraped every 100 ms (GET
# /metrics, then GET /health) or not scraped at all, in pairs of runs in
# alternating order on copies of one database. Prints each run's
# messages/s, the ratio scraped/quiet of each pair, and the ratio of two
# quiet runs (the noise) for comparison. A benchmark, not a test: it
# asserts nothing.
#
#   tests/bench/scrape.sh [PATH/TO/oncebox] [N] [PAIRS] [BATCH]
#
# Defaults: build-bench/oncebox (else build/oncebox), N 100000, PAIRS 3,
# BATCH 100. TMPDIR should be a real disk (fsync costs nothing on tmpfs).
# The scraper is bash's /dev/tcp: no curl needed.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
ob=${1:-}
if [ -z "$ob" ]; then
  ob=$src/build-bench/oncebox
  [ -x "$ob" ] || ob=$src/build/oncebox
fi
n=${2:-100000}
pairs=${3:-3}
batch=${4:-100}
[ -x "$ob" ] || { echo "scrape.sh: no oncebox program at $ob" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/oncebox-scrape-XXXXXX")
scraper=
trap '[ -n "$scraper" ] && kill "$scraper" 2>/dev/null; rm -rf "$work"' EXIT

# N distinct payments, ids and payment ids derived from the line number.
awk -v n="$n" 'BEGIN {
  for (i = 0; i < n; i++)
    printf "{\"id\":\"0190b6d8-3ae7-7ca2-a653-%012d\",\"type\":\"PaymentCaptured\",\"body\":{\"paymentId\":\"5c4080b1-b5d2-4e91-8de8-%012d\",\"merchantId\":\"3727331a-b533-4c6e-a0f8-48532237307b\",\"amountInMinorUnits\":%d,\"currency\":\"EUR\"}}\n", i, i, 100 + i % 9000
}' > "$work/in.ndjson"
"$ob" --db "$work/base.db" init >/dev/null
"$ob" --db "$work/base.db" enqueue --ndjson "$work/in.ndjson" >/dev/null 2>&1
sqlite3 "$work/base.db" 'PRAGMA wal_checkpoint(TRUNCATE);' >/dev/null

port=$(( 20000 + RANDOM % 20000 ))

scrape_loop() {  # GET /metrics and /health every 100 ms until killed
  while :; do
    for path in /metrics /health; do
      if exec 3<>"/dev/tcp/127.0.0.1/$port"; then
        printf 'GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n' "$path" >&3
        # Builtins only: a scraper that forks would compete for the CPU.
        IFS= read -r status <&3 || status=
        while IFS= read -r _ <&3; do :; done
        [[ $status == "HTTP/1.1 200"* ]] && echo >>"$work/scrapes"
        exec 3<&- 3>&-
      fi 2>/dev/null
    done
    sleep 0.1
  done
}

# run_once scraped|quiet: prints messages/s; the answered scrapes of the
# last scraped run are counted in $work/scrapes
run_once() {
  local mode=$1 db=$work/run.db t0 t1
  rm -f "$db" "$db-wal" "$db-shm"
  cp "$work/base.db" "$db"
  scraper=
  : >"$work/scrapes"
  if [ "$mode" = scraped ]; then scrape_loop & scraper=$!; fi
  t0=$(date +%s%N)
  "$ob" --db "$db" --log-level error run --until-idle --batch "$batch" \
    --metrics-listen "127.0.0.1:$port" >/dev/null 2>"$work/err" \
    || { cat "$work/err" >&2; exit 1; }
  t1=$(date +%s%N)
  if [ -n "$scraper" ]; then kill "$scraper" 2>/dev/null; wait "$scraper" 2>/dev/null || true; scraper=; fi
  awk -v n="$n" -v ns=$((t1 - t0)) 'BEGIN { printf "%.0f", n / (ns / 1e9) }'
}

echo "scrape bench: $n payments, batch $batch, $pairs pairs, $(nproc) cpu, $(df -T "${TMPDIR:-/tmp}" | awk 'NR==2 {print $2}')"
echo "pair,order,scraped_msg_s,quiet_msg_s,ratio_scraped_quiet,quiet2_msg_s,ratio_quiet2_quiet,scrapes_answered"
for p in $(seq 1 "$pairs"); do
  if [ $((p % 2)) = 1 ]; then
    s=$(run_once scraped); k=$(wc -l <"$work/scrapes")
    q=$(run_once quiet); q2=$(run_once quiet); order=s-q-q
  else
    q=$(run_once quiet); q2=$(run_once quiet); s=$(run_once scraped)
    k=$(wc -l <"$work/scrapes"); order=q-q-s
  fi
  awk -v p="$p" -v o="$order" -v s="$s" -v q="$q" -v q2="$q2" -v k="$k" 'BEGIN {
    printf "%d,%s,%d,%d,%.3f,%d,%.3f,%d\n", p, o, s, q, s / q, q2, q2 / q, k }'
done
