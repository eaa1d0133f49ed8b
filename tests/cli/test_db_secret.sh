#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_db_secret.sh ONCEBOX: a PostgreSQL connection string's password is
# never printed by the command line: not when the database cannot be
# opened, not by `config show` (text and JSON), not by `init`/`stats`.
# Runs without a server (the host is a directory that does not exist).
set -u
bin=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/lib.sh"

db='host=/nonexistent-oncebox-dir port=1 dbname=x user=u password=s3cr3t-pw'
uri='postgresql://u:s3cr3t-pw@/x?host=/nonexistent-oncebox-dir'
for name in "$db" "$uri"; do
  for cmd in init stats "config show" "config show --json"; do
    # shellcheck disable=SC2086
    "$bin" --db "$name" $cmd >"$T/out" 2>"$T/err"
    lacks "$cmd: no password on stdout" out "s3cr3t"
    lacks "$cmd: no password on stderr" err "s3cr3t"
  done
  ONCEBOX_DB="$name" "$bin" config show >"$T/out" 2>"$T/err"
  lacks "ONCEBOX_DB config show: no password" out "s3cr3t"
done
# What is shown still says which database.
"$bin" --db "$db" init >"$T/out" 2>"$T/err"
contains "the failure names the database" err "dbname=x"
report
