/* SPDX-License-Identifier: Apache-2.0 */
/* Test support: a PostgreSQL server of the test's own (issue 20). initdb
** into a fresh temporary directory, started with pg_ctl on a Unix socket in
** that directory and no TCP listener, durable settings (fsync=on,
** synchronous_commit=on), stopped and removed at the end. No mocks.
**
** As root (CI), initdb and the server run as the unprivileged `postgres`
** user (or $OB_PG_USER) in forked children that drop privileges, with the
** directory chowned to it; as any other user they run as that user. The
** binaries are looked up in $OB_PG_BINDIR, `pg_config --bindir`, then
** /usr/lib/postgresql/15/bin. docs/postgresql.md, "Tests".
**
** Never left running: pg_server_start forks a watchdog in its own session
** that stops the server (pg_ctl -m fast, then immediate, then SIGKILL) and
** removes the directory when pg_server_stop asks or when the test process
** dies in any way (a failed assertion's exit, abort, SIGKILL by ctest's
** timeout). Only libpq-using tests link this (target ob_pgsupport, built
** when ONCEBOX_HAVE_POSTGRESQL). */
#ifndef OB_TEST_PG_SERVER_H
#define OB_TEST_PG_SERVER_H

#include <sys/types.h>

#include <libpq-fe.h>

typedef struct pg_server_s {
  char dir[512];        /* the temporary directory: socket, logs, data/ */
  char data[560];       /* dir/data: PGDATA */
  char bindir[512];     /* initdb, pg_ctl, postgres */
  char user[64];        /* the database superuser (trust on the socket) */
  int port;             /* the number in dir/.s.PGSQL.<port> */
  int as_uid;           /* >= 0: run the server as this uid (we are root) */
  int as_gid;
  pid_t watchdog;       /* > 0 while started */
  int watchdog_fd;      /* write end: a byte or EOF means stop */
  char conninfo[1200];  /* the server's `postgres` database */
} pg_server_t;

/* Starts a server. NULL when it runs; else a static "skipped: ..." reason
** (no PostgreSQL binaries, root without a `postgres` user): the caller
** prints it and skips (exit 77). A server that should start but does not
** (initdb or pg_ctl failing) fails loudly: the tail of its log is printed
** and the process aborts. */
const char* pg_server_start(pg_server_t* s);

/* Stops the server (pg_ctl -m fast stop) and removes its directory (kept
** when $OB_KEEP_TMP is set; the server is stopped anyway). 0 when no
** process of the server is left: the postmaster's pid is gone and no
** process has the directory in its command line; -1 otherwise (said on
** stderr). Safe to call twice. */
int pg_server_stop(pg_server_t* s);

/* A crash of the server and a restart on the same directory: `pg_ctl -m
** immediate stop` (SIGQUIT: no shutdown checkpoint, WAL replayed at the
** next start), then start again. 0 or -1 (said on stderr). */
int pg_server_crash_restart(pg_server_t* s);

/* The postmaster's pid from data/postmaster.pid; 0 if none. */
pid_t pg_server_pid(const pg_server_t* s);

/* 1 if process pid exists and is not a zombie. */
int pg_pid_alive(pid_t pid);

/* 1 if a live process other than the caller has `needle` in its command
** line (what `pgrep -f needle` finds), else 0. */
int pg_process_with_arg(const char* needle);

/* Creates database `name` (CREATE DATABASE, as the superuser) and writes
** its connection string into out. 0, or -1 with the server's message on
** stderr. */
int pg_server_create_db(pg_server_t* s, const char* name, char* out,
                        size_t outsz);

/* The connection string of database `name` on s (no CREATE). */
void pg_server_conninfo(const pg_server_t* s, const char* name, char* out,
                        size_t outsz);

/* PQconnectdb(conninfo) that fails the process with the server's message
** (and the string with any password replaced by ***) when it does not
** connect. */
PGconn* pg_connect_or_die(const char* conninfo);

/* conninfo for messages: every keyword and value, a password's value
** replaced by "***". Writes "(unparsable connection string)" if libpq cannot
** parse it. */
void pg_conninfo_safe(const char* conninfo, char* out, size_t outsz);

#endif
