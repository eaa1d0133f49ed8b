/* SPDX-License-Identifier: Apache-2.0 */
/*
** storage: one statement interface over the two dialects (issue 34), so
** that each operation of store.h is written once (storage/<op>.c) and only
** what SQLite and PostgreSQL really do differently lives in a dialect
** file: sql_sqlite.c (prepare, step, columns, SQLite's error codes) and
** postgresql/pg_sql.c (the same over libpq, SQLSTATEs; a plugin of its own,
** storage/dialect.h), reached through the dialect's table, as SQLite keeps
** one pager over its VFS.
**
** The SQL is written once, with ?N placeholders. On PostgreSQL ?N becomes
** $N when the statement is prepared, and each parameter is typed by the
** bind that supplied it the first time (bigint, text, bytea): no casts in
** the shared text. Where the dialects need different text (DML in a CTE,
** SKIP LOCKED, a lease on the server's clock, strpos against instr) an
** ob__sql_text_t holds both, next to the code that runs it.
**
** Use: ob__sql_prepare, bind by position, then ob__sql_step until it
** returns 0 and always ob__sql_finish (or ob__sql_done / ob__sql_int1 for
** the common shapes, which finish it). Columns are valid until the next
** step or the finish.
** On PostgreSQL the first step runs the statement and fetches every row,
** so a callback between steps may call other store functions there; on
** SQLite it must not use the same statement.
**
** Errors: every function returning int returns 0 (or a count) or a
** negative OB_E* code, with errmsg "what: detail" set and db->last_err
** holding the code, whichever the dialect.
*/
#ifndef OB_STORAGE_SQL_H
#define OB_STORAGE_SQL_H

#include "storage/store_ops.h"

#define OB__SQL_MAX_PARAMS 16

/* Prepared once per connection and cached (id names the slot on SQLite;
** on PostgreSQL the text's address is the key), or, with OB__SQL_ONCE,
** prepared for this use only on SQLite (operator paths, rare scripts). */
#define OB__SQL_ONCE (-1)

/* The SQL of one statement where the dialects differ. */
typedef struct ob__sql_text_s {
  const char* sqlite;
  const char* pg;
} ob__sql_text_t;

/* One bound parameter, kept until the step hands it to the dialect. */
typedef struct ob__sql_arg_s {
  int type;          /* OB__SQL_NULL, _INT, _TEXT, _BLOB */
  int64_t i;
  const void* p;     /* text or blob of n bytes; NULL is SQL NULL */
  size_t n;
} ob__sql_arg_t;

enum { OB__SQL_NULL = 0, OB__SQL_INT, OB__SQL_TEXT, OB__SQL_BLOB };

struct pg_result;

/* One statement in use, on the caller's stack. Fields are the dialects'. */
typedef struct ob__sql_s {
  ob__db_t* db;
  const char* sql;   /* the text for this dialect */
  const char* what;  /* for messages */
  int id;            /* the SQLite cache slot, or OB__SQL_ONCE */
  int nargs;
  ob__sql_arg_t arg[OB__SQL_MAX_PARAMS];
  sqlite3_stmt* st;
  struct pg_result* res;
  int row, nrows;
  void* held[4];     /* PostgreSQL: bytea decoded for this row */
  int nheld;
} ob__sql_t;

/* The server's wall clock, in the engine's milliseconds, as SQL. Every
** lease on PostgreSQL (outbox_event.claim_until, effect.lease_until) is
** on it, so hosts whose clocks disagree still agree on whether a lease is
** live: a lease is taken as a length (until - now on the caller's clock)
** added to this, and compared with this (docs/postgresql.md, "Several
** hosts, several clocks"). statement_timestamp(): one value per statement,
** read when the statement arrives. */
#define OB__PG_SERVER_MS                                                    \
  "(floor(extract(epoch FROM statement_timestamp()) * 1000))::bigint"

/* 1 when db is a PostgreSQL connection (then the pg text is used). */
#define ob__sql_is_pg(db) ob__db_is_postgresql(db)

/* Get the statement sql (a static string: its address is the cache key)
** ready to bind. Never fails: preparing happens at the first step. */
void ob__sql_prepare(ob__db_t* db, ob__sql_t* s, int id, const char* sql,
                     const char* what);
/* The same with the dialect's text of t. */
void ob__sql_prepare2(ob__db_t* db, ob__sql_t* s, int id,
                      const ob__sql_text_t* t, const char* what);

/* Bind ?i (1-based). Text and blobs are not copied: they must live until
** the finish. A NULL text or blob binds NULL (typed on PostgreSQL). */
void ob__sql_int(ob__sql_t* s, int i, int64_t v);
void ob__sql_text(ob__sql_t* s, int i, const char* v);
/* Text of n bytes (v[n] need not be NUL on SQLite; PostgreSQL's text ends
** at the first NUL). */
void ob__sql_textn(ob__sql_t* s, int i, const char* v, size_t n);
void ob__sql_blob(ob__sql_t* s, int i, const void* v, size_t n);
void ob__sql_null(ob__sql_t* s, int i);

/* The next row: 1 (a row), 0 (no more) or < 0. */
int ob__sql_step(ob__sql_t* s);
/* Column i of the current row (0-based). NULL reads as 0 or NULL; a blob
** is never NULL when it is not SQL NULL (an empty one is ""), and a text
** or blob read NULL from a non-NULL value means out of memory (check
** with ob__sql_col_null). */
int64_t ob__sql_col_int(ob__sql_t* s, int i);
const char* ob__sql_col_text(ob__sql_t* s, int i);
/* A text column and its length in bytes (*n). */
const char* ob__sql_col_textn(ob__sql_t* s, int i, size_t* n);
const void* ob__sql_col_blob(ob__sql_t* s, int i, size_t* n);
int ob__sql_col_null(ob__sql_t* s, int i);
/* Column i (a blob's bytes, or text) copied into *out with a terminating
** NUL, its length in *len (may be NULL); NULL stays NULL. 0, or 1 when out
** of memory (to be or'ed over a row's columns). */
int ob__sql_col_dup(ob__sql_t* s, int i, int blob, char** out, size_t* len);
/* Release the statement (reset, or finalized when ONCE; the result freed).
** Safe after any outcome. */
void ob__sql_finish(ob__sql_t* s);

/* Run to the end and finish: the rows it changed (or returned), or < 0. */
int ob__sql_done(ob__sql_t* s);
/* Prepare (id as for ob__sql_prepare) and run sql, which has no
** parameters, to the end: the rows it changed (or returned), or < 0. */
int ob__sql_run(ob__db_t* db, int id, const char* sql, const char* what);
/* Run, the first column of the first row into *out, finish: 0, or
** OB_ENOTFOUND (no row, or NULL; errmsg untouched), or < 0. */
int ob__sql_int1(ob__sql_t* s, int64_t* out);

/* Run stmts[0..n) (each with the same ?1..?nargs from args) in their own
** transaction (relaxed: ob__db_begin_relaxed), rolled back at the first
** error. The rows they changed, summed, or < 0. */
int ob__sql_run_own_tx(ob__db_t* db, const char* const* stmts, int n,
                       const int64_t* args, int nargs, int relaxed,
                       const char* what);

/* Bind a message's queue_name, message_id, type, headers and body as
** ?1..?5, the first five parameters of every statement that stores one. */
void ob__sql_message(ob__sql_t* s, const ob__queue_row_t* r);

/* The current row of a SELECT of OB__QUEUE_ROW_COLUMNS into r (copies).
** 0, or OB_ENOMEM with r freed (queue.c). */
int ob__sql_queue_row_read(ob__sql_t* s, ob__queue_row_t* r);
/* Step such a SELECT (bound, LIMIT <= max, the size of rows) into rows,
** then finish it. The count, or < 0 with every row read so far freed. */
int ob__sql_queue_rows_read(ob__sql_t* s, ob__queue_row_t* rows, int max);

/* Move rows from one table into another, inside the open transaction.
** PostgreSQL: one statement (move->pg), a DELETE ... RETURNING feeding the
** INSERT, so a row moves exactly once even when two processes move the
** same rows at once (the second DELETE waits for the first's row locks,
** then skips what it took). SQLite: the INSERT ... SELECT (move->sqlite),
** then, when it moved any, then_sqlite (may be NULL), the DELETE of the
** same rows, under the write lock that excludes every other writer. bind
** binds each statement's parameters (the same numbers in every text).
** The rows moved, or < 0. */
int ob__sql_move(ob__db_t* db, const ob__sql_text_t* move,
                 const char* then_sqlite,
                 void (*bind)(ob__sql_t* s, const void* arg),
                 const void* arg, const char* what);

/* Serialise on key until the open transaction ends: PostgreSQL's
** transaction-scoped advisory lock (pg_advisory_xact_lock on
** hashtextextended(key, 0)); nothing on SQLite, whose write
** transaction already excludes every other writer. 0 or < 0. */
int ob__sql_lock_key(ob__db_t* db, const char* key);

/* Retention by whole days: PostgreSQL drops the daily partitions of
** processed_message (outbox 0) or outbox_event (1) entirely older than
** cutoff, their rows counted into *deleted; called for the dedup records
** first, that call also makes the coming days' partitions
** (pg_retention.c). Nothing on SQLite. 0 or < 0. */
int ob__sql_retention_days(ob__db_t* db, int outbox, int64_t cutoff,
                           int64_t* deleted);

/* Record db->clock_pending in engine_clock, inside the open write
** transaction (each backend's db_commit, just before COMMIT). 0 or < 0. */
int ob__sql_engine_clock_record(ob__db_t* db);

/* The embedder's schema (schema_ext.c), around each dialect's own
** migrations (ob__schema_migrate). check: the list is well formed (each
** name's steps 1, 2, ... in order), OB_EINVAL saying why. missing: how
** many steps of ext the database lacks (recorded 0: it has no
** schema_migration yet, so none), OB_EVERSION when it holds a newer
** version of a name than ext gives. apply: run and record each missing
** step, inside the open transaction. 0 or < 0. */
int ob__schema_ext_check(ob__db_t* db, const ob__schema_ext_t* ext);
int ob__schema_ext_missing(ob__db_t* db, const ob__schema_ext_t* ext,
                           int recorded, size_t* missing);
int ob__schema_ext_apply(ob__db_t* db, const ob__schema_ext_t* ext);
/* A step's SQL, as SQLite runs it (sqlite/schema.c; each dialect's
** migration_exec): OB_EINVAL naming the step when it fails. */
int ob__sqlite_migration_exec(ob__db_t* db, const ob_migration_t* m);

/* ---- SQLite's statement layer (sql_sqlite.c), for its table only ---------
** step prepares (or finds in the cache) and binds at the first call, and
** maps a failure to OB_E* with errmsg set; changes is the rows a write
** changed (or a query returned: rows); col is column i's text or, blob
** set, its bytes, *n (may be NULL) its length, NULL for SQL NULL or out of
** memory; finish releases what step took. */

int ob__sql_sqlite_step(ob__sql_t* s);
int ob__sql_sqlite_changes(ob__sql_t* s, int rows);
int64_t ob__sql_sqlite_col_int(ob__sql_t* s, int i);
const void* ob__sql_sqlite_col(ob__sql_t* s, int i, size_t* n, int blob);
int ob__sql_sqlite_col_null(ob__sql_t* s, int i);
void ob__sql_sqlite_finish(ob__sql_t* s);

/* The operations written once (storage/<operation>.c) are store.h's
** functions themselves, called directly: no table stands between them and
** the engine. Only what a dialect does its own way is in store_ops.h. */

#endif
