/* SPDX-License-Identifier: Apache-2.0 */
/*
** The PostgreSQL test harness (tests/support/pg_server.h) and the semantics
** of PostgreSQL 15 the backend of issue 20 will stand on, through libpq on a
** real server the test starts itself (no mocks):
**   - the server is durable (fsync, synchronous_commit, full_page_writes on)
**     and has no TCP listener: SHOW, and the postmaster's own sockets;
**   - the dedup claim: INSERT ... ON CONFLICT DO NOTHING RETURNING gives the
**     row once; a concurrent duplicate waits for the first transaction and
**     then gives nothing (commit) or the row (rollback);
**   - the queue claim: FOR UPDATE SKIP LOCKED LIMIT 1 in open transactions
**     of several connections gives each a different row;
**   - an invariant as a constraint: a UNIQUE violation is SQLSTATE 23505
**     with the constraint's name, and aborts the transaction (25P02) unless
**     rolled back to a savepoint;
**   - acked => durable at the database level: a client SIGKILLed before
**     COMMIT leaves no row and no lock; one SIGKILLed after COMMIT returned
**     leaves its row, also after a crash of the server (pg_ctl -m immediate)
**     and the WAL replay of its restart;
**   - the harness leaves nothing running: after pg_server_stop, and after
**     the test process itself is SIGKILLed (its watchdog).
** Exits 77 (skipped) without the PostgreSQL server programs.
*/
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <libpq-fe.h>

#include "tests/support/pg_server.h"

static pg_server_t g_pg;

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- libpq helpers ------------------------------------------------------- */

/* PQexecParams with text parameters; the result's status must be `want`. */
static PGresult* exec_want(PGconn* c, ExecStatusType want, const char* sql,
                           int n, const char* const* v) {
  PGresult* r = PQexecParams(c, sql, n, NULL, v, NULL, NULL, 0);
  if (PQresultStatus(r) != want) {
    print_error("%s: %s, want %s: %s", sql, PQresStatus(PQresultStatus(r)),
                PQresStatus(want), PQresultErrorMessage(r));
    PQclear(r);
    fail();
  }
  return r;
}

static void cmd(PGconn* c, const char* sql) {
  PQclear(exec_want(c, PGRES_COMMAND_OK, sql, 0, NULL));
}

/* The one value of a one-row, one-column query, into out. */
static void value(PGconn* c, const char* sql, int n, const char* const* v,
                  char* out, size_t outsz) {
  PGresult* r = exec_want(c, PGRES_TUPLES_OK, sql, n, v);
  assert_int_equal(PQntuples(r), 1);
  assert_int_equal(PQnfields(r), 1);
  snprintf(out, outsz, "%s", PQgetvalue(r, 0, 0));
  PQclear(r);
}

static void show(PGconn* c, const char* setting, char* out, size_t outsz) {
  char sql[128];
  snprintf(sql, sizeof sql, "SHOW %s", setting);
  value(c, sql, 0, NULL, out, outsz);
}

/* A fresh database for one test, and a connection to it. */
static void fresh_db(const char* name, char* ci, size_t cisz) {
  assert_int_equal(pg_server_create_db(&g_pg, name, ci, cisz), 0);
}

static long long count_where_id(PGconn* c, const char* table, const char* id) {
  char sql[200], out[32];
  const char* v[1] = {id};
  snprintf(sql, sizeof sql, "SELECT count(*) FROM %s WHERE id = $1", table);
  value(c, sql, 1, v, out, sizeof out);
  return atoll(out);
}

/* Until the backend `pid` waits on a lock (pg_stat_activity), 10 s at most. */
static void wait_until_lock_wait(PGconn* observer, int pid) {
  char p[16];
  const char* v[1] = {p};
  snprintf(p, sizeof p, "%d", pid);
  for (int i = 0; i < 1000; i++) {
    PGresult* r = exec_want(observer, PGRES_TUPLES_OK,
                            "SELECT wait_event_type FROM pg_stat_activity "
                            "WHERE pid = $1",
                            1, v);
    int waiting = PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "Lock") == 0;
    PQclear(r);
    if (waiting) return;
    sleep_ms(10);
  }
  fail_msg("backend %d never waited on a lock", pid);
}

/* Until no session of backend `pid` is left, 10 s at most. */
static void wait_until_backend_gone(PGconn* observer, int pid) {
  char p[16], out[32];
  const char* v[1] = {p};
  snprintf(p, sizeof p, "%d", pid);
  for (int i = 0; i < 1000; i++) {
    value(observer, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", 1,
          v, out, sizeof out);
    if (strcmp(out, "0") == 0) return;
    sleep_ms(10);
  }
  fail_msg("backend %d still there 10 s after its client was killed", pid);
}

/* ---- the server ---------------------------------------------------------- */

/* Socket inodes of process pid (socket:[N] in /proc/pid/fd). */
static size_t socket_inodes(pid_t pid, unsigned long* out, size_t max) {
  char dir[64];
  size_t n = 0;
  snprintf(dir, sizeof dir, "/proc/%ld/fd", (long)pid);
  for (int fd = 0; fd < 1024 && n < max; fd++) {
    char p[96], link[128];
    ssize_t k;
    snprintf(p, sizeof p, "%s/%d", dir, fd);
    k = readlink(p, link, sizeof link - 1);
    if (k <= 0) continue;
    link[k] = '\0';
    if (sscanf(link, "socket:[%lu]", &out[n]) == 1) n++;
  }
  return n;
}

static int in_set(unsigned long x, const unsigned long* set, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (set[i] == x) return 1;
  return 0;
}

/* Listening TCP sockets (state 0A) of /proc/net/tcp or tcp6 among `set`. */
static int tcp_listeners(const char* file, const unsigned long* set, size_t n) {
  FILE* f = fopen(file, "r");
  char line[512];
  int found = 0;
  if (f == NULL) return 0;
  if (fgets(line, sizeof line, f) == NULL) line[0] = '\0';  /* header */
  while (fgets(line, sizeof line, f) != NULL) {
    char st[8];
    unsigned long inode;
    /* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
    if (sscanf(line, "%*s %*s %*s %7s %*s %*s %*s %*s %*s %lu", st, &inode) ==
            2 &&
        strcmp(st, "0A") == 0 && in_set(inode, set, n))
      found++;
  }
  fclose(f);
  return found;
}

/* Unix sockets among `set` bound to `path` (/proc/net/unix). */
static int unix_bound(const char* path, const unsigned long* set, size_t n) {
  FILE* f = fopen("/proc/net/unix", "r");
  char line[1024];
  int found = 0;
  if (f == NULL) return 0;
  while (fgets(line, sizeof line, f) != NULL) {
    unsigned long inode;
    char p[600] = "";
    /* Num RefCount Protocol Flags Type St Inode Path */
    if (sscanf(line, "%*s %*s %*s %*s %*s %*s %lu %599s", &inode, p) == 2 &&
        strcmp(p, path) == 0 && in_set(inode, set, n))
      found++;
  }
  fclose(f);
  return found;
}

static void test_durable_settings_no_tcp(void** state) {
  PGconn* c = pg_connect_or_die(g_pg.conninfo);
  char out[600], sock[700];
  unsigned long inodes[256];
  size_t n;
  pid_t pm = pg_server_pid(&g_pg);
  (void)state;
  show(c, "fsync", out, sizeof out);
  assert_string_equal(out, "on");
  show(c, "synchronous_commit", out, sizeof out);
  assert_string_equal(out, "on");
  show(c, "full_page_writes", out, sizeof out);
  assert_string_equal(out, "on");
  show(c, "listen_addresses", out, sizeof out);
  assert_string_equal(out, "");
  show(c, "unix_socket_directories", out, sizeof out);
  assert_string_equal(out, g_pg.dir);
  show(c, "port", out, sizeof out);
  assert_int_equal(atoi(out), g_pg.port);
  show(c, "max_connections", out, sizeof out);
  assert_true(atoi(out) >= 30);
  value(c, "SELECT current_setting('server_version_num')::int >= 150000", 0,
        NULL, out, sizeof out);
  assert_string_equal(out, "t");
  /* This very connection came over the socket in the directory. */
  assert_string_equal(PQhost(c), g_pg.dir);
  value(c, "SELECT inet_server_addr() IS NULL", 0, NULL, out, sizeof out);
  assert_string_equal(out, "t");
  PQfinish(c);

  /* The postmaster's own sockets: its Unix socket is seen (so the look
  ** works), and no TCP socket of its listens, on IPv4 or IPv6. */
  assert_true(pm > 0);
  n = socket_inodes(pm, inodes, 256);
  assert_true(n > 0);
  snprintf(sock, sizeof sock, "%s/.s.PGSQL.%d", g_pg.dir, g_pg.port);
  assert_int_equal(unix_bound(sock, inodes, n), 1);
  assert_int_equal(tcp_listeners("/proc/net/tcp", inodes, n), 0);
  assert_int_equal(tcp_listeners("/proc/net/tcp6", inodes, n), 0);
}

/* ---- the dedup claim ----------------------------------------------------- */

#define CLAIM "INSERT INTO processed(id) VALUES ($1) ON CONFLICT DO NOTHING " \
              "RETURNING id"

static void test_dedup_claim_on_conflict_returning(void** state) {
  char ci[1200];
  PGconn *a, *b, *obs;
  PGresult* r;
  const char* id1[1] = {"0190b6d8-3ae7-7ca2-a653-000000000001"};
  const char* id2[1] = {"0190b6d8-3ae7-7ca2-a653-000000000002"};
  const char* id3[1] = {"0190b6d8-3ae7-7ca2-a653-000000000003"};
  (void)state;
  fresh_db("dedup", ci, sizeof ci);
  a = pg_connect_or_die(ci);
  b = pg_connect_or_die(ci);
  obs = pg_connect_or_die(ci);
  cmd(a, "CREATE TABLE processed (id text PRIMARY KEY)");

  /* First time: the row; second time: no row, no error. */
  r = exec_want(a, PGRES_TUPLES_OK, CLAIM, 1, id1);
  assert_int_equal(PQntuples(r), 1);
  assert_string_equal(PQgetvalue(r, 0, 0), id1[0]);
  PQclear(r);
  r = exec_want(a, PGRES_TUPLES_OK, CLAIM, 1, id1);
  assert_int_equal(PQntuples(r), 0);
  PQclear(r);

  /* Two processes, one message: the second claim waits for the first
  ** transaction, and once it commits, gets nothing. */
  cmd(a, "BEGIN");
  r = exec_want(a, PGRES_TUPLES_OK, CLAIM, 1, id2);
  assert_int_equal(PQntuples(r), 1);
  PQclear(r);
  assert_int_equal(PQsendQueryParams(b, CLAIM, 1, NULL, id2, NULL, NULL, 0), 1);
  wait_until_lock_wait(obs, PQbackendPID(b));
  assert_int_equal(PQconsumeInput(b), 1);
  assert_int_equal(PQisBusy(b), 1);
  cmd(a, "COMMIT");
  r = PQgetResult(b);
  assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
  assert_int_equal(PQntuples(r), 0);
  PQclear(r);
  assert_null(PQgetResult(b));

  /* The same, but the first handling rolls back: the waiting claim gets
  ** the row (the message is handled once, by the second). */
  cmd(a, "BEGIN");
  r = exec_want(a, PGRES_TUPLES_OK, CLAIM, 1, id3);
  assert_int_equal(PQntuples(r), 1);
  PQclear(r);
  assert_int_equal(PQsendQueryParams(b, CLAIM, 1, NULL, id3, NULL, NULL, 0), 1);
  wait_until_lock_wait(obs, PQbackendPID(b));
  cmd(a, "ROLLBACK");
  r = PQgetResult(b);
  assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
  assert_int_equal(PQntuples(r), 1);
  assert_string_equal(PQgetvalue(r, 0, 0), id3[0]);
  PQclear(r);
  assert_null(PQgetResult(b));
  assert_int_equal(count_where_id(obs, "processed", id3[0]), 1);
  PQfinish(a);
  PQfinish(b);
  PQfinish(obs);
}

/* ---- the queue claim ----------------------------------------------------- */

#define NCLAIM 4
#define QCLAIM "SELECT id FROM queue WHERE NOT done ORDER BY id LIMIT 1 " \
               "FOR UPDATE SKIP LOCKED"

static void test_queue_claim_skip_locked(void** state) {
  char ci[1200];
  PGconn* c[NCLAIM + 1];
  PGresult* r;
  char got[NCLAIM][32];
  (void)state;
  fresh_db("queue", ci, sizeof ci);
  for (int i = 0; i <= NCLAIM; i++) c[i] = pg_connect_or_die(ci);
  cmd(c[0], "CREATE TABLE queue (id bigint PRIMARY KEY, body text NOT NULL, "
            "done boolean NOT NULL DEFAULT false)");
  cmd(c[0], "INSERT INTO queue(id, body) SELECT g, 'm' || g "
            "FROM generate_series(1, 5) g");

  /* NCLAIM processes, each in an open transaction: each its own row. */
  for (int i = 0; i < NCLAIM; i++) {
    cmd(c[i], "BEGIN");
    r = exec_want(c[i], PGRES_TUPLES_OK, QCLAIM, 0, NULL);
    assert_int_equal(PQntuples(r), 1);
    snprintf(got[i], sizeof got[i], "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    for (int j = 0; j < i; j++) assert_string_not_equal(got[i], got[j]);
  }
  assert_string_equal(got[0], "1");
  assert_string_equal(got[1], "2");

  /* The rows are really locked: NOWAIT on the first one fails with
  ** 55P03 (lock_not_available). */
  r = PQexecParams(c[NCLAIM], "SELECT id FROM queue WHERE id = 1 FOR UPDATE "
                              "NOWAIT", 0, NULL, NULL, NULL, NULL, 0);
  assert_int_equal(PQresultStatus(r), PGRES_FATAL_ERROR);
  assert_string_equal(PQresultErrorField(r, PG_DIAG_SQLSTATE), "55P03");
  PQclear(r);
  /* One row is left for the fifth. */
  cmd(c[NCLAIM], "BEGIN");
  r = exec_want(c[NCLAIM], PGRES_TUPLES_OK, QCLAIM, 0, NULL);
  assert_int_equal(PQntuples(r), 1);
  assert_string_equal(PQgetvalue(r, 0, 0), "5");
  PQclear(r);
  /* The first handles its row and commits; the second dies (rolls back):
  ** its row is claimable again and is the next one claimed. */
  {
    const char* v[1] = {got[0]};
    PQclear(exec_want(c[0], PGRES_COMMAND_OK,
                      "UPDATE queue SET done = true WHERE id = $1", 1, v));
  }
  cmd(c[0], "COMMIT");
  cmd(c[1], "ROLLBACK");
  cmd(c[0], "BEGIN");
  r = exec_want(c[0], PGRES_TUPLES_OK, QCLAIM, 0, NULL);
  assert_int_equal(PQntuples(r), 1);
  assert_string_equal(PQgetvalue(r, 0, 0), got[1]);
  PQclear(r);
  /* Everything is claimed now: nothing, at once, for another. */
  cmd(c[1], "BEGIN");
  r = exec_want(c[1], PGRES_TUPLES_OK, QCLAIM, 0, NULL);
  assert_int_equal(PQntuples(r), 0);
  PQclear(r);
  for (int i = 0; i <= NCLAIM; i++) PQfinish(c[i]);
}

/* ---- invariants as constraints ------------------------------------------- */

#define PAYOUT "INSERT INTO payout(payment_id, amount) VALUES ($1, $2)"

static void expect_unique_violation(PGconn* c, const char* const* v) {
  PGresult* r = PQexecParams(c, PAYOUT, 2, NULL, v, NULL, NULL, 0);
  const char* st = PQresultErrorField(r, PG_DIAG_SQLSTATE);
  const char* cn = PQresultErrorField(r, PG_DIAG_CONSTRAINT_NAME);
  assert_int_equal(PQresultStatus(r), PGRES_FATAL_ERROR);
  assert_non_null(st);
  assert_string_equal(st, "23505");
  assert_non_null(cn);
  assert_string_equal(cn, "payout_payment_unique");
  PQclear(r);
}

static void test_unique_violation_is_23505(void** state) {
  char ci[1200], out[32];
  PGconn* c;
  PGresult* r;
  const char* p1[2] = {"pay-1", "1250"};
  const char* p1b[2] = {"pay-1", "999"};
  const char* p2[2] = {"pay-2", "300"};
  (void)state;
  fresh_db("payout", ci, sizeof ci);
  c = pg_connect_or_die(ci);
  cmd(c, "CREATE TABLE payout (payment_id text NOT NULL CONSTRAINT "
         "payout_payment_unique UNIQUE, amount bigint NOT NULL)");
  PQclear(exec_want(c, PGRES_COMMAND_OK, PAYOUT, 2, p1));
  expect_unique_violation(c, p1b);

  /* In a transaction the violation aborts it: the next statement is
  ** refused with 25P02 until ROLLBACK. */
  cmd(c, "BEGIN");
  PQclear(exec_want(c, PGRES_COMMAND_OK, PAYOUT, 2, p2));
  expect_unique_violation(c, p1b);
  r = PQexecParams(c, "SELECT 1", 0, NULL, NULL, NULL, NULL, 0);
  assert_int_equal(PQresultStatus(r), PGRES_FATAL_ERROR);
  assert_string_equal(PQresultErrorField(r, PG_DIAG_SQLSTATE), "25P02");
  PQclear(r);
  cmd(c, "ROLLBACK");
  value(c, "SELECT count(*) FROM payout", 0, NULL, out, sizeof out);
  assert_string_equal(out, "1");

  /* Rolled back to a savepoint instead, the transaction goes on and
  ** commits what came before it. */
  cmd(c, "BEGIN");
  PQclear(exec_want(c, PGRES_COMMAND_OK, PAYOUT, 2, p2));
  cmd(c, "SAVEPOINT handler");
  expect_unique_violation(c, p1b);
  cmd(c, "ROLLBACK TO SAVEPOINT handler");
  cmd(c, "COMMIT");
  value(c, "SELECT string_agg(payment_id || ':' || amount, ',' ORDER BY "
           "payment_id) FROM payout", 0, NULL, out, sizeof out);
  assert_string_equal(out, "pay-1:1250,pay-2:300");
  PQfinish(c);
}

/* ---- acked => durable ---------------------------------------------------- */

/* A child process connects, BEGINs, INSERTs id into acked (and COMMITs if
** `commit`), tells the parent its backend pid and that it got there, and
** waits to be killed. The parent SIGKILLs it. Returns the child's backend
** pid. */
static int killed_client(const char* ci, const char* id, int commit) {
  int p[2], backend = 0;
  char msg[32];
  ssize_t n = 0;
  struct pollfd pfd;
  int st;
  pid_t pid;
  assert_int_equal(pipe(p), 0);
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    const char* v[1] = {id};
    PGconn* c;
    PGresult* r;
    close(p[0]);
    c = PQconnectdb(ci);
    if (PQstatus(c) != CONNECTION_OK) _exit(2);
    r = PQexec(c, "BEGIN");
    if (PQresultStatus(r) != PGRES_COMMAND_OK) _exit(3);
    PQclear(r);
    r = PQexecParams(c, "INSERT INTO acked(id) VALUES ($1)", 1, NULL, v, NULL,
                     NULL, 0);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) _exit(4);
    PQclear(r);
    if (commit) {
      /* Returns once the server has flushed the commit record (fsync=on,
      ** synchronous_commit=on): the ack. */
      r = PQexec(c, "COMMIT");
      if (PQresultStatus(r) != PGRES_COMMAND_OK) _exit(5);
      PQclear(r);
    }
    snprintf(msg, sizeof msg, "%c %d\n", commit ? 'c' : 'i', PQbackendPID(c));
    if (write(p[1], msg, strlen(msg)) < 0) _exit(6);
    for (;;) pause();
  }
  close(p[1]);
  pfd.fd = p[0];
  pfd.events = POLLIN;
  if (poll(&pfd, 1, 30000) == 1) n = read(p[0], msg, sizeof msg - 1);
  close(p[0]);
  kill(pid, SIGKILL);
  assert_int_equal(waitpid(pid, &st, 0), pid);
  if (n <= 0) fail_msg("the client never got there (exit status %d)", st);
  msg[n] = '\0';
  assert_int_equal(msg[0], commit ? 'c' : 'i');
  assert_true(WIFSIGNALED(st));
  assert_int_equal(WTERMSIG(st), SIGKILL);
  backend = atoi(msg + 2);
  assert_true(backend > 0);
  return backend;
}

static void test_sigkill_before_and_after_commit(void** state) {
  char ci[1200];
  PGconn* c;
  PGresult* r;
  int backend;
  const char* lost[1] = {"killed-before-commit"};
  (void)state;
  fresh_db("acked", ci, sizeof ci);
  c = pg_connect_or_die(ci);
  cmd(c, "CREATE TABLE acked (id text PRIMARY KEY)");

  /* Killed with its INSERT done and no COMMIT: no row, and once the
  ** server has seen the connection go, no lock either (the same key
  ** inserts at once, within a lock timeout). */
  backend = killed_client(ci, lost[0], 0);
  wait_until_backend_gone(c, backend);
  assert_int_equal(count_where_id(c, "acked", lost[0]), 0);
  cmd(c, "SET lock_timeout = '5s'");
  r = exec_want(c, PGRES_TUPLES_OK,
                "INSERT INTO acked(id) VALUES ($1) ON CONFLICT DO NOTHING "
                "RETURNING id", 1, lost);
  assert_int_equal(PQntuples(r), 1);
  PQclear(r);
  cmd(c, "DELETE FROM acked");

  /* Killed after COMMIT returned: the row is there. */
  (void)killed_client(ci, "killed-after-commit", 1);
  assert_int_equal(count_where_id(c, "acked", "killed-after-commit"), 1);
  /* And one more left uncommitted when the server itself crashes. */
  (void)killed_client(ci, "uncommitted-at-crash", 0);
  PQfinish(c);

  /* The server crashes (immediate stop: no shutdown checkpoint) and
  ** replays its WAL at the restart: the acked row survives, the other
  ** does not appear. */
  assert_int_equal(pg_server_crash_restart(&g_pg), 0);
  c = pg_connect_or_die(ci);
  assert_int_equal(count_where_id(c, "acked", "killed-after-commit"), 1);
  assert_int_equal(count_where_id(c, "acked", "uncommitted-at-crash"), 0);
  PQfinish(c);
}

/* ---- the harness leaves nothing running ---------------------------------- */

static void test_stop_leaves_nothing(void** state) {
  pg_server_t s;
  char dir[sizeof s.dir];
  const char* why;
  pid_t pm;
  (void)state;
  why = pg_server_start(&s);
  assert_null(why);
  snprintf(dir, sizeof dir, "%s", s.dir);
  pm = pg_server_pid(&s);
  assert_true(pm > 0);
  assert_true(pg_pid_alive(pm));
  /* The check below sees a running server (it can fail). */
  assert_true(pg_process_with_arg(dir));
  assert_int_equal(pg_server_stop(&s), 0);
  assert_false(pg_pid_alive(pm));
  assert_false(pg_process_with_arg(dir));
  if (getenv("OB_KEEP_TMP") == NULL) assert_int_equal(access(dir, F_OK), -1);
  /* Twice is harmless. */
  assert_int_equal(pg_server_stop(&s), 0);
}

/* A test process that starts a server and is SIGKILLed (ctest's timeout):
** its watchdog stops the server and removes the directory. */
static void test_killed_test_leaves_nothing(void** state) {
  int p[2], st;
  pid_t pid, pm = 0;
  char dir[sizeof g_pg.dir] = "";
  struct pollfd pfd;
  int gone = 0;
  (void)state;
  assert_int_equal(pipe(p), 0);
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    static pg_server_t s;
    close(p[0]);
    if (pg_server_start(&s) != NULL) _exit(2);
    pm = pg_server_pid(&s);
    if (write(p[1], &pm, sizeof pm) != (ssize_t)sizeof pm ||
        write(p[1], s.dir, sizeof s.dir) != (ssize_t)sizeof s.dir)
      _exit(3);
    for (;;) pause();
  }
  close(p[1]);
  pfd.fd = p[0];
  pfd.events = POLLIN;
  if (poll(&pfd, 1, 60000) == 1 &&
      read(p[0], &pm, sizeof pm) == (ssize_t)sizeof pm &&
      read(p[0], dir, sizeof dir) == (ssize_t)sizeof dir) {
  }
  close(p[0]);
  dir[sizeof dir - 1] = '\0';
  assert_true(pm > 0);
  assert_true(pg_pid_alive(pm));
  assert_true(pg_process_with_arg(dir));
  kill(pid, SIGKILL);
  assert_int_equal(waitpid(pid, &st, 0), pid);
  for (int i = 0; i < 300 && !gone; i++) {
    gone = !pg_pid_alive(pm) && !pg_process_with_arg(dir) &&
           (getenv("OB_KEEP_TMP") != NULL || access(dir, F_OK) != 0);
    if (!gone) sleep_ms(100);
  }
  if (!gone)
    fail_msg("30 s after the test process was killed: postmaster %s, "
             "process naming %s %s, directory %s",
             pg_pid_alive(pm) ? "alive" : "gone", dir,
             pg_process_with_arg(dir) ? "present" : "absent",
             access(dir, F_OK) == 0 ? "present" : "removed");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_durable_settings_no_tcp),
      cmocka_unit_test(test_dedup_claim_on_conflict_returning),
      cmocka_unit_test(test_queue_claim_skip_locked),
      cmocka_unit_test(test_unique_violation_is_23505),
      cmocka_unit_test(test_sigkill_before_and_after_commit),
      cmocka_unit_test(test_stop_leaves_nothing),
      cmocka_unit_test(test_killed_test_leaves_nothing),
  };
  double t0 = mono_s();
  const char* why = pg_server_start(&g_pg);
  int failed;
  if (why != NULL) {
    printf("%s\n", why);
    return 77;
  }
  printf("pg_harness: PostgreSQL started in %.2f s (%s, as %s)\n",
         mono_s() - t0, g_pg.bindir,
         g_pg.as_uid >= 0 ? "the server's user: we are root" : "this user");
  failed = cmocka_run_group_tests_name("pg_harness", tests, NULL, NULL);
  t0 = mono_s();
  if (pg_server_stop(&g_pg) != 0) {
    fprintf(stderr, "pg_harness: the server was not stopped cleanly\n");
    failed++;
  }
  printf("pg_harness: stopped in %.2f s\n", mono_s() - t0);
  return failed == 0 ? 0 : 1;
}
