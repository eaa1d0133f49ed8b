#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Print the Markdown tables of docs/performance.md from the CSV files that
# tests/bench/run-all.sh writes (build-bench/results/).
#   tests/bench/tables.sh RESULTS_DIR > tables.md
# A missing CSV leaves its table out.
set -euo pipefail
r=${1:?usage: tables.sh RESULTS_DIR}

if [ -f "$r/machine.csv" ]; then
  echo "### Machine"
  echo
  awk -F, 'NR > 1 { v = $0; sub(/^[^,]*,/, "", v); gsub(/"/, "", v)
                    printf "- %s: %s\n", $1, v }' "$r/machine.csv"
  echo
fi

if [ -f "$r/engine.csv" ]; then
  echo "### Handling: oncebox against the raw SQLite limit (ob-bench-engine)"
  echo
  echo "| variant | messages | msg/s | fsync/msg | KiB/msg | peak RSS MiB |"
  echo "|---|---:|---:|---:|---:|---:|"
  awk -F, 'NR > 1 { printf "| %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6 }' "$r/engine.csv"
  awk -F, 'NR > 1 { rate[NR - 1] = $3 }
           END { if (NR >= 5)
             printf "\nRatios: per message %.2f, group commit %.2f of the raw limit; group commit x%.1f oncebox'"'"'s own per-message rate.\n",
                    rate[2] / rate[1], rate[4] / rate[3], rate[4] / rate[2] }' "$r/engine.csv"
  echo
fi

if [ -f "$r/sweep.csv" ]; then
  echo "### Batch size and durability (ob-bench-sweep)"
  echo
  echo "| sync | batch | messages | raw msg/s | oncebox msg/s | oncebox / raw | x batch 1 | fsync / commit | fsync / msg | KiB written / msg (SQLite) | (kernel) |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  awk -F, 'NR > 1 { if (!($1 in b1)) b1[$1] = $5
             printf "| %s | %s | %s | %.0f | %.0f | %.2f | %.1f | %.2f | %.4f | %.1f | %.1f |\n",
                    $1, $2, $3, $4, $5, $6, $5 / b1[$1], $7, $8, $9, $10 }' "$r/sweep.csv"
  awk -F, 'NR > 1 { k = $2; if ($1 == "FULL") f[k] = $5; else nn[k] = $5
                    if (!(k in seen)) { seen[k] = 1; order[++nk] = k } }
           END { printf "\noncebox at FULL over oncebox at NORMAL, same batch size:"
                 for (i = 1; i <= nk; i++) { k = order[i]
                   if (k in f && k in nn) printf " %s: %.2f%s", k, f[k] / nn[k], (i < nk ? ";" : ".") }
                 print "" }' "$r/sweep.csv"
  echo
fi

if [ -f "$r/latency.csv" ]; then
  echo "### Latency, enqueue to durable commit (ob-bench-latency)"
  echo
  echo "| msg/s | batch_size | counted | msg / commit | p50 ms | p90 ms | p99 ms | max ms | one enqueue p50 ms | p50 / enqueue p50 |"
  echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  awk -F, 'NR > 1 { printf "| %s | %s | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $11 }' "$r/latency.csv"
  echo
fi

if [ -f "$r/peers.csv" ]; then
  echo "### Peers (ob-bench-peers)"
  echo
  echo "| variant | messages | msg/s | oncebox batch 1 / this | oncebox group commit / this | fsync / msg | peak RSS MiB |"
  echo "|---|---:|---:|---:|---:|---:|---:|"
  awk -F, 'NR > 1 { if ($3 == "") { s = $0; sub(/^([^,]*,){7}/, "", s); gsub(/"/, "", s)
                                     printf "| %s | skipped: %s | | | | | |\n", $1, s; next }
                    printf "| %s | %s | %.0f | %.2f | %.2f | %s | %.1f |\n", $1, $2, $3, $4, $5, ($6 < 0 ? "-" : sprintf("%.2f", $6)), $7 }' "$r/peers.csv"
  echo
fi

if [ -f "$r/relay.csv" ]; then
  echo "### Relay (ob-bench-relay)"
  echo
  echo "| variant | events/s | requests / event | CPU us / event | process CPU us / event | server CPU us / event | peak RSS MiB |"
  echo "|---|---:|---:|---:|---:|---:|---:|"
  awk -F, 'NR > 1 { printf "| %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7 }' "$r/relay.csv"
  echo
fi

if [ -f "$r/footprint.csv" ]; then
  echo "### Footprint (ob-bench-footprint)"
  echo
  echo "| metric | value | unit |"
  echo "|---|---:|---|"
  awk -F, 'NR > 1 { printf "| %s | %s | %s |\n", $1, $2, $3 }' "$r/footprint.csv"
  echo
fi
