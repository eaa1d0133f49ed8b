#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_db_secret.sh ONCEBOX [DIALECT_DIR]: a PostgreSQL connection string's
# password is never printed by the command line: not when the database
# cannot be opened, not by `config show` (text and JSON), not by
# `init`/`stats`. Runs without a server (the host is a directory that does
# not exist). With the dialect's plugin (DIALECT_DIR holds postgresql.so:
# a build with PostgreSQL) and without it: then the command exits 4 and
# names the package that installs it, and creates nothing.
set -u
bin=$1
plugins=${2:-}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/lib.sh"

db='host=/nonexistent-oncebox-dir port=1 dbname=x user=u password=s3cr3t-pw'
uri='postgresql://u:s3cr3t-pw@/x?host=/nonexistent-oncebox-dir'
mkdir "$T/none" "$T/cwd"
dirs=("$T/none")
if [ -n "$plugins" ] && [ -f "$plugins/postgresql.so" ]; then
  dirs+=("$plugins")
fi
for dir in "${dirs[@]}"; do
  export ONCEBOX_DIALECT_DIR=$dir
  for name in "$db" "$uri"; do
    for cmd in init stats "config show" "config show --json"; do
      # shellcheck disable=SC2086
      (cd "$T/cwd" && "$bin" --db "$name" $cmd) >"$T/out" 2>"$T/err"
      lacks "$cmd: no password on stdout" out "s3cr3t"
      lacks "$cmd: no password on stderr" err "s3cr3t"
    done
    ONCEBOX_DB="$name" "$bin" config show >"$T/out" 2>"$T/err"
    lacks "ONCEBOX_DB config show: no password" out "s3cr3t"
  done
done

# Without the plugin: exit 4 (the database cannot be opened), the package
# to install named, nothing created where the program ran.
export ONCEBOX_DIALECT_DIR=$T/none
check "no plugin: exit 4" 4 \
  bash -c 'cd "$0" && exec "$1" --db "$2" init' "$T/cwd" "$bin" "$uri"
contains "no plugin: names the package to install" err "install the package oncebox-postgresql"
contains "no plugin: says the dialect is missing" err "postgresql dialect is not installed"
lacks "no plugin: no password" err "s3cr3t"
check "no plugin: nothing created" 0 test -z "$(ls -A "$T/cwd")"

# With it, what is shown still says which database.
if [ "${#dirs[@]}" = 2 ]; then
  export ONCEBOX_DIALECT_DIR=$plugins
  "$bin" --db "$db" init >"$T/out" 2>"$T/err"
  contains "the failure names the database" err "dbname=x"
  lacks "the plugin was found" err "not installed"
fi
report
