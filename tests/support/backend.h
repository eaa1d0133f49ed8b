/* SPDX-License-Identifier: Apache-2.0 */
/* Test support: the database backend a test runs on (docs/decisions/0018,
** "The suite runs twice, not copied"). $OB_TEST_BACKEND=postgresql runs a
** test written for the engine on PostgreSQL: each database is a fresh one
** on a server of the test process's own (support/pg_server.h: initdb, a
** Unix socket, durable settings, stopped when the process ends); unset or
** "sqlite", on an SQLite file in the test's temporary directory. */
#ifndef OB_TEST_BACKEND_H
#define OB_TEST_BACKEND_H

/* 1 when this run is on PostgreSQL. A build without PostgreSQL support
** asked for it exits 77 (skipped) with a message. */
int ts_backend_is_pg(void);

/* A fresh database for the engine (ob_options_t.db_path): dir/name on
** SQLite, a new database's connection string on PostgreSQL. malloc'd. */
char* ts_backend_db(const char* dir, const char* name);

/* One integer from sql, read on a connection of its own (what is durable,
** not the engine's view); -1 when no row. The SQLite dialect of the tests'
** inspections is translated for PostgreSQL where it differs
** (sqlite_schema, x'..' and CAST(.. AS BLOB) literals). Fails the test when
** the query does not run. */
long long ts_backend_count(const char* db, const char* sql);

/* Visit each row of sql (translated as for ts_backend_count), read on a
** connection of its own: cb gets the row's columns as text (NULL for
** NULL; at most TS_BACKEND_MAX_COLS). Returns the number of rows. Fails
** the test when the query does not run. */
#define TS_BACKEND_MAX_COLS 16
typedef void (*ts_backend_row_cb)(void* arg, int ncols,
                                  const char* const* cols);
int ts_backend_rows(const char* db, const char* sql, ts_backend_row_cb cb,
                    void* arg);

/* Run sql (no rows) on a connection of its own; fails the test on error. */
void ts_backend_exec(const char* db, const char* sql);

#endif
