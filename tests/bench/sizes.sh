#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The stripped size of the daemon (`oncebox`) and of the library
# (liboncebox.so) per architecture and build type, side by side, with the
# shared libraries each one names (docs/performance.md, "Footprint budget
# per architecture (issue 41)").
#
#   tests/bench/sizes.sh [--archs LIST] [--types LIST] [--install]
#                        [--csv FILE] [--no-werror]
#
#   --archs LIST  comma-separated, of amd64, arm64, armhf (all three)
#   --types LIST  comma-separated CMake build types (Release,MinSizeRel)
#   --install     first install what the ARM cross builds need, as
#                 tests/cross.sh does (dpkg --add-architecture, the cross
#                 compiler and the target's -dev libraries; root)
#   --csv FILE    also write arch,type,file,bytes,stripped_bytes,text,
#                 data,bss,ratio_to_amd64 lines
#   --no-werror   configure with -DOB_WERROR=OFF (the tree builds with
#                 warnings as errors by default)
#
# Environment: OB_SIZES_BUILD (build-sizes): each build goes to
# $OB_SIZES_BUILD/<arch>-<type>, reused when it is there.
#
# Each build is configured with -DOB_TESTS=OFF and builds only the two
# targets measured, `oncebox-cli` (the program, <build>/oncebox, the library
# linked in statically) and `oncebox_shared` (<build>/liboncebox.so.*), at
# -j2. The ARM builds use cmake/toolchain/<triplet>.cmake, which needs the
# packages --install (or tests/cross.sh) installs. The PostgreSQL dialect is
# left to the tree's default (ONCEBOX_POSTGRESQL=AUTO): on in the native
# build when libpq-dev is installed, off in the cross builds (libpq-dev
# cannot be installed for two architectures at once); the table says which.
# Copies are stripped with the architecture's own <triplet>-strip; the
# section sizes come from <triplet>-size (Berkeley format), the NEEDED
# entries from readelf -d. Nothing here runs the ARM programs.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
base=${OB_SIZES_BUILD:-$src/build-sizes}
archs=amd64,arm64,armhf
types=Release,MinSizeRel
install=0
csv=
werror=ON
while [ $# -gt 0 ]; do
  case "$1" in
    --archs) archs=$2; shift ;;
    --types) types=$2; shift ;;
    --install) install=1 ;;
    --csv) csv=$2; shift ;;
    --no-werror) werror=OFF ;;
    -h|--help) sed -n '2,34p' "$0"; exit 0 ;;
    *) echo "sizes.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
IFS=, read -r -a arch_list <<<"$archs"
IFS=, read -r -a type_list <<<"$types"

triplet_of() {
  case "$1" in
    amd64) echo x86_64-linux-gnu ;;
    arm64) echo aarch64-linux-gnu ;;
    armhf) echo arm-linux-gnueabihf ;;
    *) echo "sizes.sh: unknown architecture '$1' (amd64, arm64 or armhf)" >&2
       exit 2 ;;
  esac
}
tool() {  # tool TRIPLET NAME: <triplet>-NAME, or the host's NAME for amd64
  if command -v "$1-$2" >/dev/null; then echo "$1-$2"; else echo "$2"; fi
}
needed_of() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }
# closure TRIPLET FILE: the libraries FILE loads, its NEEDED followed through
# the target's /lib/<triplet> and /usr/lib/<triplet> (no program is run, so
# it works for the ARM files too); the loader itself left out.
closure() {
  local triplet=$1 todo seen="" lib path
  todo=$(needed_of "$2")
  while [ -n "$todo" ]; do
    lib=${todo%%$'\n'*}
    if [ "$lib" = "$todo" ]; then todo=""; else todo=${todo#*$'\n'}; fi
    case " $seen " in *" $lib "*) continue ;; esac
    case "$lib" in ld-linux*) continue ;; esac
    seen="$seen $lib"
    for path in "/lib/$triplet/$lib" "/usr/lib/$triplet/$lib"; do
      if [ -e "$path" ]; then
        todo=$(printf '%s\n%s' "$todo" "$(needed_of "$path")" | sed '/^$/d')
        break
      fi
    done
  done
  echo "${seen# }"
}

# ---- install (the build half of tests/cross.sh's) -------------------------
if [ "$install" = 1 ]; then
  for a in "${arch_list[@]}"; do
    [ "$a" = amd64 ] && continue
    triplet_of "$a" >/dev/null
    dpkg --print-foreign-architectures | grep -qx "$a" || {
      dpkg --add-architecture "$a"
      apt-get update -qq
    }
    bash "$src/tests/install-deps.sh" crossbuild-essential-"$a" \
      libsqlite3-dev:"$a" libuv1-dev:"$a" libmbedtls-dev:"$a" \
      libcjson-dev:"$a" pkgconf:"$a"
  done
fi

# ---- build and measure ------------------------------------------------------
declare -A prog lib prog_raw lib_raw pg text_of data_of bss_of needed loads
for t in "${type_list[@]}"; do
  for a in "${arch_list[@]}"; do
    triplet=$(triplet_of "$a")
    b=$base/$a-$t
    tc=()
    if [ "$a" != amd64 ]; then
      tc=(-DCMAKE_TOOLCHAIN_FILE="$src/cmake/toolchain/$triplet.cmake")
    fi
    echo "sizes.sh: $a $t in $b" >&2
    mkdir -p "$base"
    cmake -S "$src" -B "$b" -DCMAKE_BUILD_TYPE="$t" -DOB_TESTS=OFF \
      -DOB_WERROR="$werror" "${tc[@]}" >"$b.configure.log" 2>&1 || {
      cat "$b.configure.log" >&2; exit 1; }
    cmake --build "$b" -j2 --target oncebox-cli oncebox_shared \
      >"$b.build.log" 2>&1 || { tail -40 "$b.build.log" >&2; exit 1; }
    pg[$a-$t]=$(sed -n 's/^ONCEBOX_HAVE_POSTGRESQL:[A-Z]*=//p' "$b/CMakeCache.txt")
    [ -n "${pg[$a-$t]}" ] || pg[$a-$t]=$(grep -q 'PostgreSQL support: on' \
      "$b.configure.log" && echo ON || echo OFF)
    so=$(ls "$b"/liboncebox.so.*.*.* 2>/dev/null | head -n 1)
    [ -n "$so" ] || { echo "sizes.sh: no liboncebox.so in $b" >&2; exit 1; }
    mkdir -p "$b/stripped"
    cp "$b/oncebox" "$b/stripped/oncebox"
    cp "$so" "$b/stripped/liboncebox.so"
    "$(tool "$triplet" strip)" "$b/stripped/oncebox"
    "$(tool "$triplet" strip)" "$b/stripped/liboncebox.so"
    for f in oncebox liboncebox.so; do
      k=$a-$t-$f
      if [ "$f" = oncebox ]; then raw=$b/oncebox; else raw=$so; fi
      read -r tx dt bs _ < <("$(tool "$triplet" size)" "$b/stripped/$f" | tail -n 1)
      text_of[$k]=$tx data_of[$k]=$dt bss_of[$k]=$bs
      needed[$k]=$(needed_of "$raw" | tr '\n' ' ' | sed 's/ $//')
      loads[$k]=$(closure "$triplet" "$raw")
      if [ "$f" = oncebox ]; then
        prog[$a-$t]=$(stat -c %s "$b/stripped/$f"); prog_raw[$a-$t]=$(stat -c %s "$raw")
      else
        lib[$a-$t]=$(stat -c %s "$b/stripped/$f"); lib_raw[$a-$t]=$(stat -c %s "$raw")
      fi
    done
  done
done

# ---- the table --------------------------------------------------------------
commit=$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo '?')
dirty=$(git -C "$src" status --porcelain --untracked-files=no 2>/dev/null | grep -q . && echo '+changes' || true)
cc=$(cc --version 2>/dev/null | head -n 1)
ratio() {  # ratio A B
  if [ -n "${2:-}" ] && [ "$2" != 0 ]; then awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'
  else echo '-'; fi
}
echo
echo "stripped sizes at $commit$dirty (${cc:-cc ?}; -DOB_TESTS=OFF, OB_WERROR=$werror)"
printf '  %-6s %-10s %3s %12s %7s %9s %12s %7s %9s\n' arch type pg "oncebox B" "/amd64" "text B" \
  "liboncebox B" "/amd64" "text B"
[ -n "$csv" ] && echo "arch,type,postgresql,file,bytes,stripped_bytes,text,data,bss,ratio_to_amd64" >"$csv"
for t in "${type_list[@]}"; do
  for a in "${arch_list[@]}"; do
    printf '  %-6s %-10s %3s %12s %7s %9s %12s %7s %9s\n' "$a" "$t" "${pg[$a-$t]}" \
      "${prog[$a-$t]}" "$(ratio "${prog[$a-$t]}" "${prog[amd64-$t]:-}")" \
      "${text_of[$a-$t-oncebox]}" "${lib[$a-$t]}" \
      "$(ratio "${lib[$a-$t]}" "${lib[amd64-$t]:-}")" "${text_of[$a-$t-liboncebox.so]}"
    if [ -n "$csv" ]; then
      for f in oncebox liboncebox.so; do
        if [ "$f" = oncebox ]; then s=${prog[$a-$t]} r=${prog_raw[$a-$t]} rr=${prog[amd64-$t]:-}
        else s=${lib[$a-$t]} r=${lib_raw[$a-$t]} rr=${lib[amd64-$t]:-}; fi
        k=$a-$t-$f
        echo "$a,$t,${pg[$a-$t]},$f,$r,$s,${text_of[$k]},${data_of[$k]},${bss_of[$k]},$(ratio "$s" "$rr")" >>"$csv"
      done
    fi
  done
done
echo "  (pg: the PostgreSQL dialect compiled in; text: the text segment of the stripped file,"
echo "   <triplet>-size; /amd64: against the amd64 file of the same build type)"
echo
echo "NEEDED (readelf -d), then every library loaded (NEEDED followed through"
echo "/lib/<triplet> and /usr/lib/<triplet>; the dynamic loader not counted):"
for t in "${type_list[@]}"; do
  for a in "${arch_list[@]}"; do
    for f in oncebox liboncebox.so; do
      n=${needed[$a-$t-$f]}
      printf '  %-6s %-10s %-14s NEEDED %2d: %s\n' "$a" "$t" "$f" "$(wc -w <<<"$n")" "$n"
    done
    n=${loads[$a-$t-oncebox]}
    printf '  %-6s %-10s %-14s loads  %2d: %s\n' "$a" "$t" oncebox "$(wc -w <<<"$n")" "$n"
  done
done
echo
echo "reproduce: tests/bench/sizes.sh --archs $archs --types $types$([ "$werror" = OFF ] && echo ' --no-werror')"
