/* SPDX-License-Identifier: Apache-2.0 */
/*
** storage/postgresql: the PostgreSQL backend of store.h (the head office's,
** docs/postgresql.md, docs/decisions/0018). Its functions are store.h's
** with the prefix ob__pg_ (declared from storage/store_ops.h's list),
** reached through ob__pg_store_ops; the helpers below are its own.
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

#endif
