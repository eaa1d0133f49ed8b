#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Build oncebox (Release) and run every benchmark of docs/performance.md:
# the raw data go to CSV files under build-bench/results/, the
# tables to build-bench/results/tables.md, the plot to
# docs/performance-batch.png.
#
#   tests/bench/run-all.sh [--quick] [--no-install] [--only PARTS]
#
#   PARTS   comma-separated, in this order by default:
#           engine,growth,sweep,latency,peers,relay,sizes,footprint,scrape,
#           plot,tables
#           (issue 41's footprint budget: --only sizes,footprint)
#   --quick small sizes, one run each: checks that everything works (a
#           minute or two); the figures are NOT fit for the docs
#   --no-install  do not install the peers, gnuplot or strace, nor the ARM
#           cross compilers and libraries of the sizes part
#
# Environment: OB_BENCH_BUILD (build-bench), TMPDIR (the databases: a real
# disk, never tmpfs, or fsync costs nothing), OB_BENCH_IDLE_S (60: the
# quiet window of the idle measurement), OB_SIZES_BUILD (build-sizes: the
# sizes part's six builds, amd64/arm64/armhf x Release/MinSizeRel, each of
# only the program and liboncebox.so; tests/bench/sizes.sh).
#
# Each part takes the machine for at most a couple of minutes (the idle
# window is quiet by design). Every figure is a ratio measured side by
# side in the same part; absolute rates depend on the disk and the load.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${OB_BENCH_BUILD:-$src/build-bench}
res=$build/results
bin=$build/tests/bench
quick=0
install=1
only="engine,growth,sweep,latency,peers,relay,sizes,footprint,scrape,plot,tables"
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --no-install) install=0 ;;
    --only) only=$2; shift ;;
    -h|--help) sed -n '2,26p' "$0"; exit 0 ;;
    *) echo "run-all.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
want() { case ",$only," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
say() { printf '\n== %s ==\n' "$*"; }

# ---- install -------------------------------------------------------------
if [ "$install" = 1 ]; then
  if want peers || want footprint; then bash "$src/tests/bench/peers/install.sh"; fi
  if want plot && ! command -v gnuplot >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends gnuplot-nox
  fi
  if (want relay || want footprint) && [ ! -d "$src/tests/interop/node_modules" ]; then
    (cd "$src/tests/interop" && npm ci --no-audit --no-fund --loglevel=error)
  fi
fi

# ---- build ---------------------------------------------------------------
say "build (Release) in $build"
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
# oncebox-cli is the program ($build/oncebox, which footprint and scrape
# run); the target named oncebox is the library.
cmake --build "$build" -j"$(nproc)" --target oncebox oncebox-cli ob-bench-engine \
  ob-bench-relay ob-bench-growth ob-bench-sweep ob-bench-latency ob-bench-peers \
  ob-bench-footprint >/dev/null
mkdir -p "$res"

# ---- machine facts -------------------------------------------------------
tmp_base=${TMPDIR:-/tmp}
{
  echo "key,value"
  echo "date,$(date -u +%Y-%m-%dT%H:%MZ)"
  echo "nproc,$(nproc)"
  echo "kernel,$(uname -r)"
  echo "cpu,\"$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)\""
  echo "memory_gib,$(awk '/MemTotal/ {printf "%.0f", $2/1048576}' /proc/meminfo)"
  echo "tmp_fs,$(df -T "$tmp_base" | awk 'NR==2 {print $2}')"
  echo "sqlite,$(pkg-config --modversion sqlite3 2>/dev/null || echo ?)"
  echo "oncebox_commit,$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo ?)"
  echo "load_at_start,\"$(cut -d' ' -f1-3 /proc/loadavg)\""
  echo "quick,$quick"
} > "$res/machine.csv"
cat "$res/machine.csv"

if [ "$quick" = 1 ]; then
  engine_args=(-n 300 -g 3000 -r 1 -d 0.2); growth_args=(-H 1000,5000 -n 1000 -r 1)
  sweep_args=(-m 0.2 -r 1)
  latency_args=(-t 2); peers_args=(-n 300 -r 1 -S)
  relay_args=(-n 500 -r 1 -w 100); fp_args=(-n 1000 -f 200 -i 5 -k 5 -P 2000)
  sizes_args=(--types Release)
else
  engine_args=(-n 2000 -g 20000 -r 3); growth_args=(-r 3)
  sweep_args=(-r 3)
  latency_args=(-t 5); peers_args=(-n 2000 -r 3 -S)
  relay_args=(-n 2000 -r 3)
  fp_args=(-n 5000 -i "${OB_BENCH_IDLE_S:-60}" -k 21 -P 20000)
  sizes_args=(--types Release,MinSizeRel)
fi

# ---- the benchmarks ------------------------------------------------------
if want engine; then
  say "engine: oncebox against the raw SQLite limit "
  "$bin/ob-bench-engine" "${engine_args[@]}" | tee "$res/engine.txt"
  # variant,messages,msg_per_s,fsync_per_msg,kib_per_msg,peak_rss_mib
  awk '/^end to end/ {exit}
       /^  \((a|b)\) / {
         line = $0; sub(/^  /, "", line)
         n = split(line, f, /  +/)
         # f: label, messages, msg/s, (min-max), fsync/msg, KiB/msg, RSS
         gsub(/ MiB/, "", f[n]); gsub(/,/, "", f[1])
         printf "%s,%s,%s,%s,%s,%s\n", f[1], f[2], f[3], f[5], f[6], f[7]
       }
       BEGIN { print "variant,messages,msg_per_s,fsync_per_msg,kib_per_msg,peak_rss_mib" }' \
    "$res/engine.txt" > "$res/engine.csv"
fi
if want growth; then
  say "growth: the cost of each new message on 10k, 100k and 500k rows of history"
  "$bin/ob-bench-growth" "${growth_args[@]}" | tee "$res/growth.txt"
fi
if want sweep; then
  say "sweep: batch size x durability"
  "$bin/ob-bench-sweep" "${sweep_args[@]}" -o "$res/sweep.csv" \
    -O "$res/sweep-runs.csv" | tee "$res/sweep.txt"
fi
if want latency; then
  say "latency: enqueue -> durable commit under a steady load"
  "$bin/ob-bench-latency" "${latency_args[@]}" -o "$res/latency.csv" \
    | tee "$res/latency.txt"
fi
if want peers; then
  say "peers: plainjob, Symfony Messenger"
  "$bin/ob-bench-peers" "${peers_args[@]}" -o "$res/peers.csv" \
    | tee "$res/peers.txt"
fi
if want relay; then
  say "relay: against the AWS SDK for JavaScript"
  "$bin/ob-bench-relay" "${relay_args[@]}" | tee "$res/relay.txt"
  awk 'BEGIN { print "variant,events_per_s,req_per_event,cpu_us_per_event,process_cpu_us_per_event,server_cpu_us_per_event,peak_rss_mib" }
       /^  \((a|b|b.)\) / {
         line = $0; sub(/^  /, "", line)
         n = split(line, f, /  +/)
         # f: label, events/s, (min-max), req/event, CPU us/event, process
         # CPU, server CPU, RSS
         gsub(/ MiB/, "", f[n]); gsub(/,/, "", f[1])
         printf "%s,%s,%s,%s,%s,%s,%s\n", f[1], f[2], f[4], f[5], f[6], f[7], f[n]
       }' "$res/relay.txt" > "$res/relay.csv"
fi
if want sizes; then
  say "sizes: the stripped program and library per architecture and build type"
  if [ "$install" = 1 ]; then sizes_args+=(--install); fi
  bash "$src/tests/bench/sizes.sh" "${sizes_args[@]}" --csv "$res/sizes.csv" \
    | tee "$res/sizes.txt"
fi
if want footprint; then
  say "footprint: size, RSS, idle, start-up, fsyncs of the CLI, issue 41's budget"
  "$bin/ob-bench-footprint" -x "$build/oncebox" "${fp_args[@]}" \
    -o "$res/footprint.csv" | tee "$res/footprint.txt"
fi
if want scrape; then
  say "scrape: a run scraped every 100 ms against one not scraped"
  if [ "$quick" = 1 ]; then scrape_args=(20000 1); else scrape_args=(100000 3); fi
  bash "$src/tests/bench/scrape.sh" "$build/oncebox" "${scrape_args[@]}" 100 \
    | tee "$res/scrape.txt"
fi
if want plot; then
  say "plot"
  if [ -f "$res/sweep.csv" ]; then
    m="$(nproc) cores, Linux $(uname -r), $(date -u +%Y-%m-%d)"
    bash "$src/tests/bench/plot.sh" "$res/sweep.csv" \
      "$src/docs/performance-batch.png" "$m"
  else
    echo "no $res/sweep.csv: run the sweep part first"
  fi
fi
if want tables; then
  say "tables"
  bash "$src/tests/bench/tables.sh" "$res" > "$res/tables.md"
  echo "wrote $res/tables.md"
fi
