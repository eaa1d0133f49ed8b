#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The ctest suite of a normal (non-sanitizer) build under valgrind memcheck
# (T14; docs/reliability.md, "valgrind"). Not part of CI: it takes
# far longer than the ASan+UBSan pass of tests/run-all.sh.
#
#   bash tests/valgrind.sh [-B BUILD_DIR] [-R REGEX] [-E REGEX] [-j N]
#                          [--no-build] [--keep-logs]
#
#   -B DIR       build directory (default: build-valgrind, configured as a
#                normal RelWithDebInfo build; an existing one is reused)
#   -R / -E      run only the tests whose name matches / does not match
#   -j N         tests run at once (default 2)
#   --no-build   use the build directory as it is
#
# Every process of the suite that runs our code is checked:
#   - each test executable runs under
#       valgrind --leak-check=full --errors-for-leak-kinds=definite
#                --trace-children=yes
#     (forked children are checked too; programs it execs from /usr, /bin
#     and node are not: the fauxqs/provider servers, sh, openssl);
#   - the `oncebox` binary that tests run ($OB_BINARY_DIR/oncebox, or the
#     path the shell tests take as their argument) is replaced by a wrapper
#     that runs it under the same valgrind, so every CLI invocation is
#     checked too.
# The verdict comes from the log of every process, not from an exit code:
# --error-exitcode=99 would also change the exit status of the forked
# workers the tests wait for (and assert), so it is not used. A process's
# log counts if its ERROR SUMMARY is not 0: a memory error (invalid
# read/write, use of uninitialised memory, bad free) or a definite leak.
# One exception, printed but not counted: definite leaks in a FORKED CHILD
# of a test process. The child inherits the parent's heap (fixtures, the
# resolver's state, a libuv loop the parent attached) and exits without
# owning it; those blocks are "definitely lost" in the child only because
# the compiler dropped the parent's pointers. Memory errors in children
# count. Valgrind false positives in test code are suppressed (the list is
# below, each with its reason).
#
# Skipped, with the reason printed: the tests that SIGKILL forked workers
# at chosen instants or depend on their timing, and the long loops (label
# crash, fence_kill and the mutants built on it). They run under ASan+UBSan
# in tests/run-all.sh.
#
# Valgrind artifacts: valgrind runs code 20-50 times slower and handles
# every signal itself. A few checks wait a fixed short time or read the
# kernel's signal mask (listed in TIMING below, each with the exact failure
# line it excuses). Such a failure is printed as "valgrind artifact" and not
# counted, nor are the leaks of the test case cmocka abandoned; any other
# failure line or leak of the same test counts.
#
# Output: one line per test, then
#   valgrind: N tests, E with errors, L with definite leaks, F failed
#   (A more: valgrind artifacts); P processes checked
# and exit 1 if E, L or F is not 0.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
B="$here/build-valgrind"
only="" except="" jobs=2 build=1 keep=0
while [ $# -gt 0 ]; do
  case $1 in
    -B) B=$(cd "$2" 2>/dev/null && pwd || echo "$2"); shift 2 ;;
    -R) only=$2; shift 2 ;;
    -E) except=$2; shift 2 ;;
    -j) jobs=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    --keep-logs) keep=1; shift ;;
    -h|--help) sed -n '2,/^set /p' "$0" | grep '^#' | cut -c3-; exit 0 ;;
    *) echo "valgrind.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
for tool in valgrind jq ctest; do
  command -v $tool >/dev/null || { echo "valgrind.sh: $tool not found (apt-get install valgrind jq cmake)" >&2; exit 2; }
done
if [ $build = 1 ]; then
  if [ ! -f "$B/CMakeCache.txt" ]; then
    cmake -S "$here" -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOB_SANITIZE=OFF || exit 2
  fi
  cmake --build "$B" -j"$jobs" || exit 2
fi
if grep -q '^OB_SANITIZE:BOOL=ON' "$B/CMakeCache.txt" 2>/dev/null; then
  echo "valgrind.sh: $B is a sanitizer build; valgrind needs a normal one" >&2
  exit 2
fi

# Why each skipped test is skipped (name regex -> reason).
SKIP_RE=(
  '^(crash_campaign_|crash_mutant_)'
  '^(kill9|concurrent)$'
  '^fault_oom_loop$'
  '^fence_kill$'
  '^(fence_mutant_|relay_mutant_|fault_io_loop_mutant_)'
)
SKIP_WHY=(
  "label crash: forks workers and SIGKILLs them at random instants, 300 cycles and more (ASan run: tests/run-all.sh)"
  "label crash: SIGKILLs forked workers at chosen instants"
  "label crash: thousands of engine runs (3,734 OOM runs); hours under valgrind"
  "SIGKILLs the engine at chosen points against the provider simulator"
  "mutants: pass only when the test they run fails"
)
skip_reason() {
  for i in "${!SKIP_RE[@]}"; do
    if [[ $1 =~ ${SKIP_RE[$i]} ]]; then echo "${SKIP_WHY[$i]}"; return 0; fi
  done
  return 1
}

# Failures that are valgrind's doing, not the code's: test name -> the
# failure lines (one a line) that are excused. Anything else still fails.
declare -A TIMING=(
  [cli]="FAIL run SIGTERM exit: got '143', want '0'"
  [fence_auth]="[  FAILED  ] test_cli_credentials"
  [consumer]="[  FAILED  ] test_visibility_shorter_than_handler
[  FAILED  ] test_lost_and_failed_deletes"
  [sqs_client]="[  FAILED  ] test_transport_errors_retried"
  [http_hostile]="[  FAILED  ] test_one_byte_per_second_hits_deadline"
)
declare -A TIMING_WHY=(
  [cli]="test_cli.sh sends SIGTERM 0.5 s after starting \`run\`; under valgrind the handler is not installed yet"
  [fence_auth]="\`effects reconcile --timeout 2\` against the provider simulator: 2 s is too short under valgrind"
  [consumer]="1 s SQS visibility timeouts: a message slowed 20-50 times becomes visible again before its delete"
  [sqs_client]="a 1 s request deadline: the retry's TLS handshake under valgrind can take longer"
  [http_hostile]="a 1.5 s deadline must fire within 4 s of wall time"
)

W="$B/valgrind"
L="$W/logs"
rm -rf "$L"
mkdir -p "$W/bin" "$L"
# Valgrind false positives in test code (never in oncebox's own code).
cat >"$W/suppressions" <<'EOF'
# tests/crash/test_faults.c: mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL)
# passes no file system type, as mount(2) allows with MS_PRIVATE; valgrind
# checks the type string anyway.
{
   mount-private-without-type
   Memcheck:Param
   mount(type)
   fun:mount
   ...
}
EOF
VG_OPTS="--leak-check=full --errors-for-leak-kinds=definite --show-leak-kinds=definite --num-callers=30 --error-limit=no --suppressions=$W/suppressions"
SKIP_CHILDREN="/usr/*,/bin/*,/sbin/*,*node*,$W/*"
# The oncebox wrapper: same checks, exit code untouched, one log a process.
cat >"$W/bin/oncebox" <<EOF
#!/bin/sh
exec valgrind $VG_OPTS --log-file="\${OB_VG_LOG_DIR:-$L}/oncebox.%p.log" "$B/oncebox" "\$@"
EOF
chmod +x "$W/bin/oncebox"

ctest --test-dir "$B" --show-only=json-v1 >"$W/tests.json" 2>/dev/null || {
  echo "valgrind.sh: ctest --show-only failed" >&2; exit 2; }

# One test: run it under valgrind, then read every log of its processes.
run_one() {
  local name=$1 dir="$L/$1" out rc timeout wd
  eval "$TIMING_DECL"   # associative arrays do not cross into xargs' bash
  mkdir -p "$dir"
  chmod 1777 "$dir"   # tests run some commands as nobody
  local -a cmd env
  mapfile -t cmd < <(jq -r --arg n "$name" '.tests[] | select(.name == $n) | .command[]' "$W/tests.json")
  mapfile -t env < <(jq -r --arg n "$name" '.tests[] | select(.name == $n) | .properties[]? | select(.name == "ENVIRONMENT") | .value[]' "$W/tests.json")
  timeout=$(jq -r --arg n "$name" '[.tests[] | select(.name == $n) | .properties[]? | select(.name == "TIMEOUT") | .value][0] // 120' "$W/tests.json")
  wd=$(jq -r --arg n "$name" '[.tests[] | select(.name == $n) | .properties[]? | select(.name == "WORKING_DIRECTORY") | .value][0] // empty' "$W/tests.json")
  timeout=$((timeout * 10))
  [ $timeout -gt 3600 ] && timeout=3600
  # The CLI is the wrapper, wherever the test finds it.
  for i in "${!cmd[@]}"; do [ "${cmd[$i]}" = "$B/oncebox" ] && cmd[$i]="$W/bin/oncebox"; done
  env+=("OB_BINARY_DIR=$W/bin" "OB_VG_LOG_DIR=$dir")
  case $(basename "${cmd[0]}") in
    bash|sh|dash) ;;   # a shell script: its oncebox runs are the wrapper's
    *) cmd=(valgrind $VG_OPTS --trace-children=yes
            "--trace-children-skip=$SKIP_CHILDREN" --log-file="$dir/test.%p.log"
            "${cmd[@]}") ;;
  esac
  local t0=$SECONDS
  (cd "${wd:-$B}" && env "${env[@]}" timeout -k 10 "$timeout" "${cmd[@]}") >"$dir/output" 2>&1
  rc=$?
  local secs=$((SECONDS - t0)) nlogs=0 errs=0 leaks=0 child_leaks=0 aborted=0 f e d lr pp
  # Failure lines of the test itself (cmocka and the shell tests' formats),
  # and whether each is a listed valgrind artifact.
  local fails excused="" fns=""
  fails=$(grep -E '^\[  FAILED  \] test_|^FAIL[ :(]' "$dir/output" | sort -u)
  if [ $rc != 0 ] && [ -n "${TIMING[$name]:-}" ] && [ -n "$fails" ] &&
     [ -z "$(printf '%s\n' "$fails" | grep -vxF -- "${TIMING[$name]}")" ]; then
    excused=1
    # cmocka abandons a failed case half-way: what it had allocated is lost.
    fns=$(printf '%s\n' "$fails" | sed -n 's/^\[  FAILED  \] \(test_[A-Za-z0-9_]*\)$/\1/p' | paste -sd'|')
  fi
  local pids=" "
  for f in "$dir"/*.log; do
    [ -e "$f" ] && pids+="$(sed -n 's/^==\([0-9]*\)== Command:.*/\1/p' "$f" | head -1) "
  done
  for f in "$dir"/*.log; do
    [ -e "$f" ] || continue
    nlogs=$((nlogs + 1))
    e=$(sed -n 's/.*ERROR SUMMARY: \([0-9][0-9]*\) errors.*/\1/p' "$f" | tail -1)
    d=$(sed -n 's/.*definitely lost: \([0-9,][0-9,]*\) bytes.*/\1/p' "$f" | tail -1 | tr -d ,)
    # No summary: the process was killed (SIGKILL by the test) or exec'd.
    [ -z "$e" ] && continue
    [ "$e" = 0 ] && continue
    lr=$(grep -c 'are definitely lost in loss record' "$f")
    pp=$(sed -n 's/^==[0-9]*== Parent PID: \([0-9]*\)/\1/p' "$f" | head -1)
    if [[ $pids == *" $pp "* ]]; then
      # A forked child of a checked process: its leaks are inherited.
      [ "$lr" -gt 0 ] && child_leaks=$((child_leaks + 1)) && cp "$f" "$dir/CHILD-LEAKS.$(basename "$f")"
      e=$((e - lr))
      [ $e -gt 0 ] && errs=$((errs + 1)) && cp "$f" "$dir/ERRORS.$(basename "$f")"
      continue
    fi
    if [ -n "$fns" ] && [ $((e - lr)) = 0 ]; then
      # Only leaks: are they all allocated by an excused, abandoned case?
      local other
      other=$(awk -v pat="($fns) \\\\(" '
        /are definitely lost in loss record/ { if (inb && !m) bad++; inb = 1; m = 0; next }
        inb && /^==[0-9]+== *$/ { if (!m) bad++; inb = 0; next }
        inb && $0 ~ pat { m = 1 }
        END { if (inb && !m) bad++; print bad + 0 }' "$f")
      if [ "$other" = 0 ]; then
        aborted=$((aborted + 1))
        cp "$f" "$dir/ABORTED-CASE-LEAKS.$(basename "$f")"
        continue
      fi
    fi
    errs=$((errs + 1))
    [ -n "$d" ] && [ "$d" != 0 ] && leaks=$((leaks + 1))
    cp "$f" "$dir/ERRORS.$(basename "$f")"
  done
  local verdict=ok
  if [ $rc = 124 ] || [ $rc = 137 ]; then verdict="TIMEOUT (${timeout}s)"
  elif [ $rc != 0 ] && [ -n "$excused" ]; then verdict="valgrind artifact"
  elif [ $rc != 0 ]; then verdict="FAILED (exit $rc)"; fi
  [ $errs != 0 ] && verdict="VALGRIND ERRORS"
  local notes=""
  [ $child_leaks -gt 0 ] && notes+="; $child_leaks forked children with inherited leaks"
  [ $aborted -gt 0 ] && notes+="; leaks of the abandoned case"
  printf '%-52s %-18s %5ss  %4s processes, %s with errors, %s with definite leaks%s\n' \
    "$name" "$verdict" "$secs" "$nlogs" "$errs" "$leaks" \
    "${notes:+ (not counted$notes)}" >"$dir/verdict"
  cat "$dir/verdict"
}
export -f run_one
export W L B VG_OPTS SKIP_CHILDREN
export TIMING_DECL="$(declare -p TIMING)"

mapfile -t all < <(jq -r '.tests[].name' "$W/tests.json")
torun=()
nskip=0
for t in "${all[@]}"; do
  [ -n "$only" ] && ! [[ $t =~ $only ]] && continue
  [ -n "$except" ] && [[ $t =~ $except ]] && continue
  if why=$(skip_reason "$t"); then
    printf '%-52s %-18s %s\n' "$t" "skipped" "$why"
    nskip=$((nskip + 1))
    continue
  fi
  torun+=("$t")
done
t0=$SECONDS
printf '%s\n' "${torun[@]}" | xargs -P "$jobs" -I{} bash -c 'run_one "$1"' _ {}

n=0 errs=0 leaks=0 failed=0 timing=0 procs=0
for t in "${torun[@]}"; do
  v=$(cat "$L/$t/verdict" 2>/dev/null || echo "$t NOT RUN")
  n=$((n + 1))
  case $v in *"VALGRIND ERRORS"*) errs=$((errs + 1)) ;; esac
  case $v in *"valgrind artifact"*) timing=$((timing + 1)); echo "$t: failed under valgrind only: ${TIMING_WHY[$t]}" ;; esac
  case $v in *" ok "*|*"VALGRIND ERRORS"*|*"valgrind artifact"*) ;; *) failed=$((failed + 1)) ;; esac
  p=$(printf '%s' "$v" | sed -n 's/.* \([0-9][0-9]*\) processes.*/\1/p')
  procs=$((procs + ${p:-0}))
  l=$(printf '%s' "$v" | sed -n 's/.*, \([0-9][0-9]*\) with definite leaks.*/\1/p')
  [ "${l:-0}" != 0 ] && leaks=$((leaks + 1))
done
echo
for t in "${torun[@]}"; do
  for f in "$L/$t"/ERRORS.*; do
    [ -e "$f" ] || continue
    echo "==== $t: $(basename "$f")"
    grep -v '^==[0-9]*== *$' "$f" | head -60
  done
done
echo "valgrind: $n tests, $errs with errors, $leaks with definite leaks, $failed failed ($timing more: valgrind artifacts); $procs processes checked; $nskip skipped; $((SECONDS - t0)) s"
echo "logs: $L"
[ $keep = 1 ] || find "$L" -name '*.log' ! -name 'ERRORS.*' ! -name 'CHILD-LEAKS.*' ! -name 'ABORTED-CASE-LEAKS.*' -delete
[ $errs = 0 ] && [ $leaks = 0 ] && [ $failed = 0 ]
