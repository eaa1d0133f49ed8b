/* SPDX-License-Identifier: Apache-2.0 */
/*
** storage/postgresql: the PostgreSQL backend of store.h (the head office's,
** docs/postgresql.md, docs/decisions/0018), built apart from the library
** as a plugin and an archive (docs/decisions/0025, storage/dialect.h).
** Its functions are store.h's with the prefix ob__pg_ (declared from
** storage/store_ops.h's list below), reached through its table
** (pg_dialect.c); the helpers below are its own.
**
** What it calls of the library's storage (sql.h's statement layer, errors,
** the embedder's schema steps) goes through the host table the library
** hands it at registration: the macros at the end of this file, which
** every source of the folder includes last, turn those calls into calls
** through ob__pg_host (as SQLite's sqlite3ext.h does for an extension).
**
** The operations of store.h are written once over storage/sql.h (sql_pg.c
** is its libpq side); what stays here is PostgreSQL's own: the connection
** and its transactions (pg_db.c), the schema and its daily partitions,
** retention by whole days, handler SQL. Their statements run through
** sql.h too (prepared once per connection, bound parameters, never text
** pasted into SQL); only scripts and DDL go through ob__pg_exec. Times are
** the engine's milliseconds (BIGINT), as in the SQLite schema.
*/
#ifndef OB_STORAGE_PG_INT_H
#define OB_STORAGE_PG_INT_H

#include <libpq-fe.h>

#include "storage/dialect.h"
#include "storage/sql.h"
#include "storage/store_ops.h"

#define OB__PG_MAX_PREPARED 192
#define OB__PG_MAX_PARAMS 16

typedef struct ob__pg_prepared_s {
  const char* sql;  /* the static string's address: the key */
  char name[24];
} ob__pg_prepared_t;

typedef struct ob__pg_user_stmt_s {
  char* sql;        /* the handler's text, as given (with ?) */
  char name[24];
  int nparams;      /* the placeholders it has */
  uint64_t last_used;
} ob__pg_user_stmt_t;

struct ob__pg_s {
  PGconn* conn;
  int broken;            /* the connection was lost: reset at next begin */
  int sync_full;
  int busy_timeout_ms;   /* lock_timeout */
  unsigned long next_name;
  ob__pg_prepared_t prepared[OB__PG_MAX_PREPARED];
  int nprepared;
  ob__pg_user_stmt_t user[OB__USER_STMT_CACHE];
  uint64_t user_clock;
  char shown[256];       /* the connection for messages: never a password */
  int read_only_tx;      /* the open transaction is READ ONLY */
};

/* A fixed script without parameters (several statements allowed), not
** prepared: schema, session settings, DDL. 0 or < 0. */
int ob__pg_exec(ob__db_t* db, const char* sql, const char* what);

/* 0 when the connection can run a statement; else OB_ESTATE (not open)
** or OB_EIO (lost: replaced at the next begin), errmsg naming what. */
int ob__pg_conn_ready(ob__db_t* db, const char* what);

/* Map res (may be NULL: the connection's error) to OB_E*, record
** "what: message (SQLSTATE xxxxx)" in errmsg, set db->last_err, mark the
** connection broken when it is gone. Returns the code (never 0). */
int ob__pg_fail(ob__db_t* db, const PGresult* res, const char* what);
/* ob_db_display_name of a connection string (host, port, dbname, user). */
void ob__pg_display_name(const char* conninfo, char* out, size_t n);
/* SQLSTATE to OB_E* (NULL: OB_EIO, no answer from the server). */
int ob__pg_map_sqlstate(const char* state);

/* Handler SQL for libpq (pg_user_sql.c): each ? (or ?NNN) outside string
** literals, quoted identifiers, dollar-quoted strings and comments becomes
** $n, into out (outsz bytes). *nparams gets the largest n. OB_EINVAL (with
** why in err) for more than one statement, an unterminated literal or
** comment, ?0 or a mix of ? and ?NNN; OB_ETOOBIG when out is too small. */
int ob__pg_rewrite_placeholders(const char* in, char* out, size_t outsz,
                                int* nparams, char* err, size_t errsz);

/* Partitions (pg_schema.c): make sure the daily partitions of
** processed_message and outbox_event exist from the day of from_ms through
** days_ahead days later. Each in its own statement, outside a transaction.
** 0 or < 0. */
#define OB__PG_DAY_MS 86400000LL
#define OB__PG_PARTITIONS_AHEAD 3
int ob__pg_partitions_ensure(ob__db_t* db, int64_t from_ms, int days_ahead);
/* ob__sql_retention_days on PostgreSQL (pg_retention.c). */
int ob__pg_retention_days(ob__db_t* db, int outbox, int64_t cutoff,
                          int64_t* deleted);

/* PostgreSQL's functions of store_ops.h's list, and its open. */
#define OB__PG_DECLARE(ret, name, params, args) ret ob__pg_##name params;
#define OB__PG_VDECLARE(name, params, args) void ob__pg_##name params;
OB__STORE_OPS(OB__PG_DECLARE, OB__PG_VDECLARE)
#undef OB__PG_DECLARE
#undef OB__PG_VDECLARE
int ob__pg_db_open_ext(ob__db_t* db, const char* conninfo, ob_sync_t sync,
                       int busy_timeout_ms, int64_t max_bytes,
                       const struct ob__schema_ext_s* ext);
/* sql.h's statement layer over libpq (pg_sql.c), for the table. */
int ob__sql_pg_step(ob__sql_t* s);
int ob__sql_pg_changes(ob__sql_t* s, int rows);
int64_t ob__sql_pg_col_int(ob__sql_t* s, int i);
const void* ob__sql_pg_col(ob__sql_t* s, int i, size_t* n, int blob);
int ob__sql_pg_col_null(ob__sql_t* s, int i);
void ob__sql_pg_finish(ob__sql_t* s);
/* An embedder's migration step on PostgreSQL (pg_schema.c). */
int ob__pg_migration_exec(ob__db_t* db, const ob_migration_t* m);
/* The dialect's table (pg_dialect.c). */
extern const ob__store_ops_t ob__pg_store_ops;

/* The library's functions, through the host table it registered the
** dialect with (pg_dialect.c sets it before any other call). */
extern const ob_dialect_host_t* ob__pg_host;
#define ob__db_seterr (ob__pg_host->db_seterr)
#define ob__assert_fail (ob__pg_host->assert_fail)
#define ob__observed_clock_load (ob__pg_host->observed_clock_load)
#define ob__schema_ext_check (ob__pg_host->schema_ext_check)
#define ob__schema_ext_missing (ob__pg_host->schema_ext_missing)
#define ob__schema_ext_apply (ob__pg_host->schema_ext_apply)
#define ob__sql_engine_clock_record (ob__pg_host->engine_clock_record)
#define ob__sql_prepare (ob__pg_host->sql_prepare)
#define ob__sql_int (ob__pg_host->sql_int)
#define ob__sql_text (ob__pg_host->sql_text)
#define ob__sql_step (ob__pg_host->sql_step)
#define ob__sql_col_int (ob__pg_host->sql_col_int)
#define ob__sql_col_text (ob__pg_host->sql_col_text)
#define ob__sql_finish (ob__pg_host->sql_finish)
#define ob__sql_done (ob__pg_host->sql_done)
#define ob__sql_int1 (ob__pg_host->sql_int1)
#define ob__sql_run (ob__pg_host->sql_run)
#define ob__sql_lock_key (ob__pg_host->sql_lock_key)

#endif
