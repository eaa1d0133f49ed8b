/* SPDX-License-Identifier: Apache-2.0 */
/*
** storage: the table of functions a dialect provides its own way
** (docs/decisions/0018). The operations written once over storage/sql.h
** (storage/<operation>.c) are not here: store.h's functions of the same
** name are defined there and called directly.
**
** Every other function of store.h that touches the database is one entry here:
** X(return type, name, parameters, arguments) for one returning a code,
** V(name, parameters, arguments) for one returning nothing. The list makes
** the things that must agree: the table's members (below), each
** dialect's declarations (ob__sqlite_<name> below, ob__pg_<name> in
** storage/postgresql/pg_int.h), the dispatchers of store.h
** (storage/store.c) and each dialect's table. A member
** left NULL (none today) would make its dispatcher answer OB_ENOTSUP with
** the function's name in errmsg, and a void one do nothing. Included by
** storage/ only.
*/
#ifndef OB_STORAGE_STORE_OPS_H
#define OB_STORAGE_STORE_OPS_H

#include "storage/store.h"

#define OB__STORE_OPS(X, V)                                                   \
  X(int, db_page_size,                                                        \
    (ob__db_t* db, int* out),                                                 \
    (db, out))                                                                \
  X(int, db_repage,                                                           \
    (ob__db_t* db, int page_size, int64_t max_bytes),                         \
    (db, page_size, max_bytes))                                               \
  X(int, db_set_wal_policy,                                                   \
    (ob__db_t* db, int checkpoint_pages, int64_t size_limit_bytes),           \
    (db, checkpoint_pages, size_limit_bytes))                                 \
  V(db_close,                                                                 \
    (ob__db_t* db),                                                           \
    (db))                                                                     \
  X(int, db_begin,                                                            \
    (ob__db_t* db),                                                           \
    (db))                                                                     \
  X(int, db_begin_relaxed,                                                    \
    (ob__db_t* db),                                                           \
    (db))                                                                     \
  X(int, db_begin_read,                                                       \
    (ob__db_t* db),                                                           \
    (db))                                                                     \
  X(int, db_commit,                                                           \
    (ob__db_t* db),                                                           \
    (db))                                                                     \
  V(db_rollback,                                                              \
    (ob__db_t* db),                                                           \
    (db))                                                                     \
  X(int, schema_migrate,                                                      \
    (ob__db_t* db, const ob__schema_ext_t* ext),                              \
    (db, ext))                                                                \
  X(int, schema_identify,                                                     \
    (ob__db_t* db, int adopt),                                                \
    (db, adopt))                                                              \
  X(int, space_checkpoint,                                                    \
    (ob__db_t* db, int truncate),                                             \
    (db, truncate))                                                           \
  X(int, user_exec,                                                           \
    (ob__db_t* db, const char* sql, const ob_value_t* params, size_t          \
     nparams, ob_row_cb row, void* arg),                                      \
    (db, sql, params, nparams, row, arg))                                     \
  V(user_cache_clear,                                                         \
    (ob__db_t* db),                                                           \
    (db))

typedef int (*ob__store_open_fn)(ob__db_t* db, const char* name,
                                 ob_sync_t sync, int busy_timeout_ms,
                                 int64_t max_bytes,
                                 const struct ob__schema_ext_s* ext);

struct ob__sql_s;
struct ob_migration_s;

typedef struct ob__store_ops_s {
  const char* backend;     /* "sqlite", "postgresql": for messages */
  int dialect;             /* OB_DIALECT_SQLITE, OB_DIALECT_POSTGRESQL */
  /* Open name (a file path, or a connection string) into a zeroed db, set
  ** db->ops, migrate. On failure nothing stays open and errmsg says why. */
  ob__store_open_fn open;
#define OB__STORE_OP_MEMBER(ret, name, params, args) ret(*name) params;
#define OB__STORE_VOP_MEMBER(name, params, args) void(*name) params;
  OB__STORE_OPS(OB__STORE_OP_MEMBER, OB__STORE_VOP_MEMBER)
#undef OB__STORE_OP_MEMBER
#undef OB__STORE_VOP_MEMBER
  /* The statement layer of storage/sql.h (sql_sqlite.c, the dialect's own
  ** for the others): what sql.c's functions of the same name call. */
  int (*sql_step)(struct ob__sql_s* s);
  int (*sql_changes)(struct ob__sql_s* s, int rows);
  int64_t (*sql_col_int)(struct ob__sql_s* s, int i);
  const void* (*sql_col)(struct ob__sql_s* s, int i, size_t* n, int blob);
  int (*sql_col_null)(struct ob__sql_s* s, int i);
  void (*sql_finish)(struct ob__sql_s* s);
  /* An embedder's migration step as the dialect runs it (sql.h). */
  int (*migration_exec)(ob__db_t* db, const struct ob_migration_s* m);
  /* ob__sql_retention_days; NULL: the dialect keeps no partitions. */
  int (*retention_days)(ob__db_t* db, int outbox, int64_t cutoff,
                        int64_t* deleted);
  /* ob_db_display_name of a name of this dialect; NULL: as given. */
  void (*display_name)(const char* name, char* out, size_t n);
} ob__store_ops_t;

/* SQLite's table (storage/sqlite); the other dialects' are registered
** (storage/dialect.h). */
extern const ob__store_ops_t ob__sqlite_store_ops;

/* SQLite's functions of the list (storage/sqlite/, ob__sqlite_). A
** dialect of its own declares its own the same way (OB__STORE_OPS). */
#define OB__STORE_DECLARE(ret, name, params, args) ret ob__sqlite_##name params;
#define OB__STORE_VDECLARE(name, params, args) void ob__sqlite_##name params;
OB__STORE_OPS(OB__STORE_DECLARE, OB__STORE_VDECLARE)
#undef OB__STORE_DECLARE
#undef OB__STORE_VDECLARE
int ob__sqlite_db_open_ext(ob__db_t* db, const char* path, ob_sync_t sync,
                           int busy_timeout_ms, int64_t max_bytes,
                           const struct ob__schema_ext_s* ext);

#endif
