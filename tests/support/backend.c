/* SPDX-License-Identifier: Apache-2.0 */
#include "tests/support/backend.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support/testsupport.h"

#if defined(OB_TEST_HAVE_PG)
#include "tests/support/pg_server.h"
#endif

int ts_backend_is_pg(void) {
  const char* b = getenv("OB_TEST_BACKEND");
  if (b == NULL || b[0] == '\0' || strcmp(b, "sqlite") == 0) return 0;
  if (strcmp(b, "postgresql") != 0) {
    fprintf(stderr, "OB_TEST_BACKEND=%s: sqlite or postgresql\n", b);
    exit(2);
  }
#if defined(OB_TEST_HAVE_PG)
  return 1;
#else
  printf("skipped: OB_TEST_BACKEND=postgresql, and this build has no "
         "PostgreSQL support\n");
  exit(77);
#endif
}

#if defined(OB_TEST_HAVE_PG)
static pg_server_t server;
static int server_started;
static int databases;

static void start_once(void) {
  const char* skip;
  if (server_started) return;
  skip = pg_server_start(&server);
  if (skip != NULL) {
    printf("%s\n", skip);
    exit(77);
  }
  server_started = 1;
}

/* json_extract(col, '$.key') at *in: (col::json ->> 'key') to *out, both
** moved past it. 0 (nothing written) for any other shape. Its value is
** text, as SQLite's is for a string; compared with a number (`= 12500`),
** numeric, as SQLite's is for a number. */
static int json_path(const char* in, char** out, const char** next) {
  const char* col = in + 13;
  const char* comma = strchr(col, ',');
  const char* key;
  const char* end;
  if (comma == NULL || strncmp(comma, ", '$.", 5) != 0) return 0;
  key = comma + 5;
  end = strstr(key, "')");
  if (end == NULL) return 0;
  *next = end + 2;
  *out += sprintf(*out, "(%.*s::json ->> '%.*s')%s", (int)(comma - col), col,
                  (int)(end - key), key,
                  strncmp(*next, " = ", 3) == 0 &&
                          ((*next)[3] == '-' ||
                           ((*next)[3] >= '0' && (*next)[3] <= '9'))
                      ? "::numeric"
                      : "");
  return 1;
}

/* The tests' inspections are written in SQLite's dialect; these are the
** few places PostgreSQL's differs. */
static char* translate(const char* sql) {
  size_t n = strlen(sql);
  char* out = malloc(n * 2 + 128);
  const char* p = sql;
  char* o = out;
  static const char tables_from[] = "sqlite_schema WHERE name =";
  static const char tables_to[] =
      "pg_tables WHERE schemaname = current_schema() AND tablename =";
  int in_hex = 0;
  while (*p) {
    if (strncmp(p, tables_from, sizeof tables_from - 1) == 0) {
      o += sprintf(o, "%s", tables_to);
      p += sizeof tables_from - 1;
    } else if (strncmp(p, "CAST(body AS TEXT)", 18) == 0) {
      /* A message body is BLOB there, bytea here: its text is UTF-8. */
      o += sprintf(o, "convert_from(body, 'UTF8')");
      p += 18;
    } else if (strncmp(p, " ->> '$.", 8) == 0 && strchr(p + 8, '\'')) {
      /* SQLite's col ->> '$.a.b' is PostgreSQL's col::json #>> '{a,b}'. */
      const char* end = strchr(p + 8, '\'');
      o += sprintf(o, "::json #>> '{");
      for (const char* k = p + 8; k < end; k++) *o++ = *k == '.' ? ',' : *k;
      o += sprintf(o, "}'");
      p = end + 1;
    } else if (strncmp(p, "json_extract(", 13) == 0 && json_path(p, &o, &p)) {
      /* done: json_path wrote it */
    } else if (strncmp(p, "CAST(", 5) == 0 && strstr(p, " AS BLOB)")) {
      o += sprintf(o, "convert_to(");
      p += 5;
    } else if (strncmp(p, " AS BLOB)", 9) == 0) {
      o += sprintf(o, ", 'UTF8')");
      p += 9;
    } else if (!in_hex && (p == sql || p[-1] == ' ') && p[0] == 'x' &&
               p[1] == '\'') {
      o += sprintf(o, "'\\x");
      p += 2;
      in_hex = 1;
    } else if (in_hex && *p == '\'') {
      o += sprintf(o, "'::bytea");
      p++;
      in_hex = 0;
    } else {
      *o++ = *p++;
    }
  }
  *o = '\0';
  return out;
}
#endif

char* ts_backend_db(const char* dir, const char* name) {
#if defined(OB_TEST_HAVE_PG)
  if (ts_backend_is_pg()) {
    char db[64], conninfo[1400];
    start_once();
    snprintf(db, sizeof db, "t%d_%d", (int)getpid(), ++databases);
    if (pg_server_create_db(&server, db, conninfo, sizeof conninfo) != 0)
      fail_msg("CREATE DATABASE %s failed", db);
    (void)dir;
    (void)name;
    return strdup(conninfo);
  }
#endif
  return ts_path(dir, name);
}

/* The first row's first column, as sqlite3_column_int64 reads it (NULL or
** not a number: 0). */
typedef struct first_int_s {
  int seen;
  long long v;
} first_int_t;

static void first_int(void* arg, int ncols, const char* const* cols) {
  first_int_t* f = arg;
  if (f->seen++ || ncols < 1) return;
  f->v = cols[0] != NULL ? strtoll(cols[0], NULL, 10) : 0;
}

long long ts_backend_count(const char* db, const char* sql) {
  first_int_t f = {0, -1};
  ts_backend_rows(db, sql, first_int, &f);
  return f.v;
}

int ts_backend_rows(const char* db, const char* sql, ts_backend_row_cb cb,
                    void* arg) {
  const char* cols[TS_BACKEND_MAX_COLS];
  int rows = 0;
#if defined(OB_TEST_HAVE_PG)
  if (ts_backend_is_pg()) {
    PGconn* c = pg_connect_or_die(db);
    char* q = translate(sql);
    PGresult* r = PQexec(c, q);
    int n;
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
      fail_msg("%s: %s", q, PQresultErrorMessage(r));
    n = PQnfields(r);
    if (n > TS_BACKEND_MAX_COLS) fail_msg("%s: %d columns", q, n);
    for (int i = 0; i < PQntuples(r); i++, rows++) {
      for (int k = 0; k < n; k++)
        cols[k] = PQgetisnull(r, i, k) ? NULL : PQgetvalue(r, i, k);
      cb(arg, n, cols);
    }
    PQclear(r);
    PQfinish(c);
    free(q);
    return rows;
  }
#endif
  {
    sqlite3* s;
    sqlite3_stmt* st;
    int n;
    if (sqlite3_open_v2(db, &s, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
      fail_msg("open %s: %s", db, sqlite3_errmsg(s));
    /* A writer killed mid-commit leaves its WAL for the next to recover. */
    sqlite3_busy_timeout(s, 30000);
    if (sqlite3_prepare_v2(s, sql, -1, &st, NULL) != SQLITE_OK)
      fail_msg("prepare %s: %s", sql, sqlite3_errmsg(s));
    n = sqlite3_column_count(st);
    if (n > TS_BACKEND_MAX_COLS) fail_msg("%s: %d columns", sql, n);
    while (sqlite3_step(st) == SQLITE_ROW) {
      for (int k = 0; k < n; k++)
        cols[k] = (const char*)sqlite3_column_text(st, k);
      cb(arg, n, cols);
      rows++;
    }
    sqlite3_finalize(st);
    sqlite3_close(s);
  }
  return rows;
}

void ts_backend_exec(const char* db, const char* sql) {
#if defined(OB_TEST_HAVE_PG)
  if (ts_backend_is_pg()) {
    PGconn* c = pg_connect_or_die(db);
    PGresult* r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_COMMAND_OK &&
        PQresultStatus(r) != PGRES_TUPLES_OK)
      fail_msg("%s: %s", sql, PQresultErrorMessage(r));
    PQclear(r);
    PQfinish(c);
    return;
  }
#endif
  {
    sqlite3* s;
    char* msg = NULL;
    if (sqlite3_open_v2(db, &s, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK)
      fail_msg("open %s: %s", db, sqlite3_errmsg(s));
    sqlite3_busy_timeout(s, 5000);
    if (sqlite3_exec(s, sql, NULL, NULL, &msg) != SQLITE_OK)
      fail_msg("%s: %s", sql, msg ? msg : "?");
    sqlite3_close(s);
  }
}
