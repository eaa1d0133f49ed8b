#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Mutation run: does the test suite catch plausible one-line bugs?
#
#   tests/mutants/run.sh [--list FILE] [--work DIR] [--jobs N]
#                        [--no-baseline] [--shard K/N] [--touching REGEX]
#                        [--resume] [NAME...]
#
# For each mutant of tests/mutants/mutants.txt (or only the NAMEs given), on
# a scratch copy of the source tree (the repository itself is never edited):
#   1. replace the mutant's original text by its replacement, refusing the
#      mutant unless the text occurs exactly once in the file;
#   2. build incrementally (one build directory, configured once, reused);
#   3. run the suite: ctest -j N --stop-on-failure, minus the long campaigns
#      (below); the mutant is killed if any test fails or times out, and
#      survives if every test passes;
#   4. put the original file back.
# It prints one line per mutant and finally "mutants: K killed of N (P%)".
# Exit status: 0 if every mutant was killed, 1 if one survived (or could not
# be applied or built), 2 if the unmutated suite fails (nothing to measure).
#
# Sharding and resuming (the whole list takes hours; no single run need):
#   --shard K/N      only the mutants whose position in the list is K modulo
#                    N (1 <= K <= N): N shards split the list evenly; each
#                    shard has its own default DIR (...-K-of-N), so shards
#                    run side by side on one machine or on N machines.
#   --touching REGEX only the mutants whose file matches REGEX (grep -E),
#                    e.g. '^storage/' after a change there.
#   --resume         keep DIR/results.txt and skip the mutants it already
#                    has a verdict for, if it was written for the same tree
#                    (commit, uncommitted diff and list: its "# tree" line);
#                    for another tree it starts afresh, and says so. An
#                    interrupted run (killed, a session's end) goes on
#                    from the mutant it was on.
# The final count covers the resumed verdicts too.
#
# Scratch tree: DIR/src (default DIR: $TMPDIR/oncebox-mutants-$UID), build
# directory DIR/build, one log per mutant in DIR/logs, results in
# DIR/results.txt. The copy is refreshed from the repository's working tree
# at every start (tracked and untracked-but-not-ignored files; modification
# times kept, so an unchanged file is not recompiled). tests/interop/
# node_modules and the sibling ../shared folder (SigV4 vectors) are linked,
# not copied: without them the tests that need them skip, as in a normal run.
#
# Excluded, by default (OB_MUTANT_EXCLUDE, a ctest -E regex, overrides):
# the crash campaigns, documented as long campaigns in docs/reliability.md
# ("CI" and "The relay under kill -9 and power loss"): crash_campaign_mixed,
# crash_campaign_exhaustive, crash_relay_campaign, and the campaign runs
# against the built-in mutant libraries (crash_mutant_*,
# crash_relay_mutant_*). Those campaigns check the engine and the relay
# under kill -9 and power loss, not the one-line bugs of this list, and
# together take several minutes per run.
#
# The slow tests (OB_MUTANT_SLOW, a ctest -R regex: fence_kill,
# fault_oom_loop, fault_io_loop, fault_io_loop_mutant_split_claim, kill9,
# consumer, provider_sim, hostile_cli, canary) run in a second pass, after
# every other test passed.
#
# OB_MUTANT_TESTS (a ctest -R regex) runs only those tests, in one pass,
# and OB_MUTANT_TARGETS (build targets, space-separated) builds only what
# they need: `OB_MUTANT_TESTS='^sim_seeds$' OB_MUTANT_TARGETS=ob-sim
# tests/mutants/run.sh NAME...` shows which mutants the simulator alone
# kills (docs/simulator.md, "Mutants").
#
# The script runs from a copy of itself (so that editing it during a run
# cannot break the run: bash reads a script as it goes).
#
# Takes long (a full suite run per surviving mutant): run it with nice,
# in the background, e.g.
#   nice tests/mutants/run.sh > /tmp/mutants.out 2>&1 &
set -uo pipefail
if [ -z "${OB_MUTANT_COPY:-}" ]; then
  self=$(mktemp "${TMPDIR:-/tmp}/oncebox-mutants-run.XXXXXX") || exit 2
  cp "$0" "$self" || exit 2
  OB_MUTANT_COPY=1 OB_MUTANT_REPO=$(cd "$(dirname "$0")/../.." && pwd) \
    bash "$self" "$@"
  rc=$?
  rm -f "$self"
  exit $rc
fi

repo=$OB_MUTANT_REPO
here=$repo/tests/mutants
list=$here/mutants.txt
work=${TMPDIR:-/tmp}/oncebox-mutants-$(id -u)
jobs=2
baseline=1
exclude=${OB_MUTANT_EXCLUDE:-'^crash_(campaign_mixed|campaign_exhaustive|relay_campaign|mutant_.*|relay_mutant_.*)$'}
# The slow tests (a minute or more here), run in the second pass.
slow=${OB_MUTANT_SLOW:-'^(fence_kill|fault_oom_loop|fault_io_loop|fault_io_loop_mutant_split_claim|kill9|consumer|provider_sim|hostile_cli|canary)$'}
only=()
shard=""
work_given=""
touching=""
resume=0
while [ $# -gt 0 ]; do
  case $1 in
    --list) list=$2; shift 2 ;;
    --work) work=$2; work_given=1; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --no-baseline) baseline=0; shift ;;
    --shard) shard=$2; shift 2 ;;
    --touching) touching=$2; shift 2 ;;
    --resume) resume=1; shift ;;
    -h|--help) sed -n '2,72p' "$0"; exit 0 ;;
    -*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
    *) only+=("$1"); shift ;;
  esac
done
list=$(cd "$(dirname "$list")" && pwd)/$(basename "$list")
shard_k=1 shard_n=1
if [ -n "$shard" ]; then
  if ! [[ $shard =~ ^([0-9]+)/([0-9]+)$ ]] || [ "${BASH_REMATCH[1]}" -lt 1 ] \
     || [ "${BASH_REMATCH[1]}" -gt "${BASH_REMATCH[2]}" ]; then
    echo "run.sh: --shard wants K/N with 1 <= K <= N, not '$shard'" >&2; exit 2
  fi
  shard_k=${BASH_REMATCH[1]} shard_n=${BASH_REMATCH[2]}
  [ -n "$work_given" ] || work=$work-$shard_k-of-$shard_n
fi

src=$work/src
build=$work/build
logs=$work/logs
results=$work/results.txt
mkdir -p "$src" "$logs" || exit 2

# ---- the scratch tree -------------------------------------------------------
echo "mutants: copying $repo to $src"
(cd "$repo" && git ls-files -co --exclude-standard -z |
   tar --null -T - -cf -) | (cd "$src" && tar -xpf -) || exit 2
if [ -d "$repo/tests/interop/node_modules" ]; then
  ln -sfn "$repo/tests/interop/node_modules" "$src/tests/interop/node_modules"
fi
# The build reads ${CMAKE_SOURCE_DIR}/../shared, i.e. $work/shared here.
if [ -d "$repo/../shared" ]; then
  ln -sfn "$(cd "$repo/../shared" && pwd)" "$work/shared"
fi

if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    > "$logs/configure.log" 2>&1 || { echo "configure failed: $logs/configure.log"; exit 2; }
fi

build_tree() {  # $1: log file
  local targets=()
  for t in ${OB_MUTANT_TARGETS:-}; do targets+=(--target "$t"); done
  cmake --build "$build" -j"$jobs" "${targets[@]}" > "$1" 2>&1
}

# Two passes, so that a killed mutant is usually known in a minute or two:
# first every test but the slow ones, then the slow ones (each pass stops at
# the first failure). Together they are the whole suite minus the excluded
# campaigns.
run_suite() {  # $1: log file; returns non-zero if a test failed
  if [ -n "${OB_MUTANT_TESTS:-}" ]; then
    ctest --test-dir "$build" -j"$jobs" --stop-on-failure --output-on-failure \
      -R "$OB_MUTANT_TESTS" > "$1" 2>&1
    return
  fi
  ctest --test-dir "$build" -j"$jobs" --stop-on-failure --output-on-failure \
    -E "($exclude)|($slow)" > "$1" 2>&1 || return 1
  ctest --test-dir "$build" -j"$jobs" --stop-on-failure --output-on-failure \
    -R "$slow" -E "$exclude" >> "$1" 2>&1
}

# Names of the tests that failed, from a ctest log.
failed_tests() {
  sed -n 's/^[[:space:]]*[0-9][0-9]* - \([^ ]*\) (.*/\1/p' "$1" | sort -u | tr '\n' ' '
}

# ---- the list ---------------------------------------------------------------
# Parsed by python3: one record per mutant, fields separated by the ASCII
# unit separator (0x1f: not blank, so an empty replacement stays a field);
# \n is kept escaped until the mutant is applied.
parse_list() {
  python3 - "$list" <<'EOF'
import re, sys
cur, out = None, []
for no, line in enumerate(open(sys.argv[1], encoding="utf-8"), 1):
    line = line.rstrip("\n")
    if line.startswith("#") or not line.strip():
        continue
    m = re.match(r"^\[([A-Za-z0-9_.-]+)\]$", line)
    if m:
        cur = {"name": m.group(1)}
        out.append(cur)
        continue
    m = re.match(r"^(file|from|to|why):(.*)$", line)
    if not m or cur is None:
        sys.exit("%s:%d: not a mutant line: %s" % (sys.argv[1], no, line))
    cur[m.group(1)] = m.group(2).strip()
for c in out:
    for k in ("file", "from", "to", "why"):
        if k not in c:
            sys.exit("%s: mutant %s has no %s:" % (sys.argv[1], c["name"], k))
    print("\x1f".join((c["name"], c["file"], c["from"], c["to"], c["why"])))
EOF
}

# apply FILE FROM TO: replace FROM (exactly once) by TO in FILE.
apply_mutant() {
  python3 - "$1" "$2" "$3" <<'EOF'
import sys
path, old, new = sys.argv[1], sys.argv[2].replace("\\n", "\n"), sys.argv[3].replace("\\n", "\n")
text = open(path, encoding="utf-8").read()
n = text.count(old)
if n != 1:
    sys.exit("the original text occurs %d times in %s (must be once)" % (n, path))
open(path, "w", encoding="utf-8").write(text.replace(old, new))
EOF
}

records=$(parse_list) || exit 2
[ -n "$records" ] || { echo "no mutants in $list"; exit 2; }

# ---- baseline ---------------------------------------------------------------
echo "mutants: building $build"
if ! build_tree "$logs/build-baseline.log"; then
  echo "the unmutated tree does not build: $logs/build-baseline.log"
  exit 2
fi
if [ $baseline -eq 1 ]; then
  echo "mutants: the unmutated suite (excluded: $exclude)"
  start=$(date +%s)
  if ! run_suite "$logs/baseline.log"; then
    echo "the unmutated suite fails ($(failed_tests "$logs/baseline.log")): $logs/baseline.log"
    exit 2
  fi
  echo "mutants: baseline passed in $(( $(date +%s) - start )) s:" \
       "$(grep -E 'tests passed' "$logs/baseline.log" | tr '\n' ' ')"
fi

# ---- the mutants ------------------------------------------------------------
backup=$work/original
current=
restore() {
  if [ -n "$current" ]; then
    cp "$backup" "$src/$current" && touch "$src/$current"
    current=
  fi
}
trap 'restore; exit 130' INT TERM

# What the verdicts were measured on: the commit, the uncommitted diff and
# the list. --resume trusts a results file only for the same key.
tree_key=$( { git -C "$repo" rev-parse HEAD 2>/dev/null; git -C "$repo" diff HEAD 2>/dev/null;
              cat "$list"; } | sha256sum | cut -c1-16)
killed=0 total=0 bad=0
declare -A done_names=()
if [ $resume -eq 1 ] && [ -f "$results" ] \
   && [ "$(sed -n 's/^# tree //p' "$results" | head -1)" = "$tree_key" ]; then
  while read -r verdict vname _; do
    case $verdict in
      KILLED) killed=$((killed + 1)); total=$((total + 1)) ;;
      SURVIVED) total=$((total + 1)) ;;
      REFUSED|NOBUILD) bad=$((bad + 1)) ;;
      *) continue ;;
    esac
    done_names[${vname%:}]=1
  done < "$results"
  sed -i '/^mutants: /d' "$results"
  echo "mutants: resuming: ${#done_names[@]} verdicts kept from $results"
else
  [ $resume -eq 1 ] && [ -f "$results" ] &&
    echo "mutants: $results was written for another tree: starting afresh"
  printf '# tree %s\n' "$tree_key" > "$results"
fi
index=0
while IFS=$'\x1f' read -r name file from to why; do
  index=$((index + 1))
  if [ ${#only[@]} -gt 0 ]; then
    skip=1
    for o in "${only[@]}"; do [ "$o" = "$name" ] && skip=0; done
    [ $skip -eq 1 ] && continue
  fi
  [ $(( (index - 1) % shard_n + 1 )) -eq "$shard_k" ] || continue
  if [ -n "$touching" ] && ! grep -qE -- "$touching" <<< "$file"; then continue; fi
  [ -n "${done_names[$name]:-}" ] && continue
  if [ ! -f "$src/$file" ]; then
    line="REFUSED  $name: no file $file"
    echo "$line" | tee -a "$results"; bad=$((bad + 1)); continue
  fi
  cp "$src/$file" "$backup"
  if ! why_not=$(apply_mutant "$src/$file" "$from" "$to" 2>&1); then
    line="REFUSED  $name: $why_not"
    echo "$line" | tee -a "$results"; bad=$((bad + 1)); continue
  fi
  current=$file
  start=$(date +%s)
  log=$logs/$name.log
  if ! build_tree "$log.build"; then
    restore
    line="NOBUILD  $name ($file): the mutant does not compile ($log.build)"
    echo "$line" | tee -a "$results"; bad=$((bad + 1)); continue
  fi
  total=$((total + 1))
  if run_suite "$log"; then
    verdict=SURVIVED
    detail="every test passed"
  else
    verdict=KILLED
    killed=$((killed + 1))
    detail="by $(failed_tests "$log")"
  fi
  restore
  line=$(printf '%-8s %s (%s, %d s) %s -- %s' "$verdict" "$name" "$file" \
           $(( $(date +%s) - start )) "$detail" "$why")
  echo "$line" | tee -a "$results"
done <<< "$records"
trap - INT TERM

# Leave the build matching the unmutated tree.
build_tree "$logs/build-final.log" || true

if [ $total -gt 0 ]; then
  pct=$(( (killed * 1000 / total + 5) / 10 ))
else
  pct=0
fi
summary="mutants: $killed killed of $total ($pct%)"
[ $bad -gt 0 ] && summary="$summary; $bad not run (refused or not compiling)"
echo "$summary" | tee -a "$results"
[ $killed -eq $total ] && [ $bad -eq 0 ]
