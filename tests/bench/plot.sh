#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Render handling throughput against batch size and durability setting from
# the CSV ob-bench-sweep writes (-o), to a PNG, with gnuplot (Debian's
# gnuplot-nox).
#   tests/bench/plot.sh SWEEP.csv OUT.png [MACHINE-LINE]
# CSV columns: sync,batch,messages,raw_msg_per_s,oncebox_msg_per_s,ratio,...
set -euo pipefail
csv=${1:?usage: plot.sh SWEEP.csv OUT.png [MACHINE-LINE]}
png=${2:?usage: plot.sh SWEEP.csv OUT.png [MACHINE-LINE]}
machine=${3:-"$(nproc) cores, Linux $(uname -r), $(date -u +%Y-%m-%d)"}
command -v gnuplot >/dev/null || {
  echo "plot.sh: gnuplot not found (apt-get install gnuplot-nox)" >&2
  exit 1
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# One data file per setting: batch raw oncebox ratio
for s in FULL NORMAL; do
  awk -F, -v s="$s" 'NR > 1 && $1 == s { print $2, $4, $5, $6 }' "$csv" \
    > "$tmp/$s.dat"
  [ -s "$tmp/$s.dat" ] || { echo "plot.sh: no $s rows in $csv" >&2; exit 1; }
done
gnuplot <<EOF
set terminal pngcairo size 900,560 enhanced font "DejaVu Sans,10"
set output "$png"
set title "oncebox handling throughput against batch size and durability\n{/*0.85 dedup claim + payout + outbox row + ack per message; SQLite WAL; medians of one sweep ($machine)}"
set logscale xy
set xrange [0.7:1500]
set xtics ("1" 1, "10" 10, "100" 100, "1000" 1000)
set xlabel "messages per transaction (batch\\\\_size)"
set ylabel "messages handled per second (log scale)"
set grid xtics ytics mytics lc rgb "#dddddd"
set key bottom right box opaque
set style textbox opaque noborder margins 1,1
set style line 1 lc rgb "#1f6fb4" lw 2.5 pt 7 ps 1.2
set style line 2 lc rgb "#1f6fb4" lw 1.5 dt 2 pt 6 ps 1.0
set style line 3 lc rgb "#d0661a" lw 2.5 pt 5 ps 1.2
set style line 4 lc rgb "#d0661a" lw 1.5 dt 2 pt 4 ps 1.0
plot "$tmp/FULL.dat" using 1:3 with linespoints ls 1 title "oncebox, synchronous=FULL (default: survives power loss)", \
     "$tmp/FULL.dat" using 1:2 with linespoints ls 2 title "raw SQLite limit, same statements, FULL", \
     "$tmp/NORMAL.dat" using 1:3 with linespoints ls 3 title "oncebox, synchronous=NORMAL (--unsafe-sync-normal)", \
     "$tmp/NORMAL.dat" using 1:2 with linespoints ls 4 title "raw SQLite limit, NORMAL", \
     "$tmp/FULL.dat" using 1:3:(sprintf("%.0f/s", \$3)) with labels boxed offset 0,-1.3 font ",9" tc rgb "#1f6fb4" notitle, \
     "$tmp/NORMAL.dat" using 1:3:(sprintf("%.0f/s", \$3)) with labels boxed offset 0,1.3 font ",9" tc rgb "#d0661a" notitle
EOF
echo "wrote $png"
