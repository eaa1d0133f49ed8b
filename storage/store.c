/* SPDX-License-Identifier: Apache-2.0 */
/* store.h's functions as dispatchers to the open database's backend
** (docs/decisions/0018), both backends' tables, the choice of the backend
** by name, and what is the same for both (errors, the joined reads, the
** data version). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/util/errbuf.h"
#include "storage/dialect.h"

int ob__db_vseterr(ob__db_t* db, int code, const char* fmt, va_list ap) {
  return ob__errbuf_vset(db->errmsg, sizeof db->errmsg, code, fmt, ap);
}

int ob__db_seterr(ob__db_t* db, int code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ob__db_vseterr(db, code, fmt, ap);
  va_end(ap);
  return code;
}

int ob__db_name_is_postgresql(const char* name) {
  const char* eq;
  const char* slash;
  if (name == NULL) return 0;
  if (strncmp(name, "postgresql://", 13) == 0 ||
      strncmp(name, "postgres://", 11) == 0)
    return 1;
  eq = strchr(name, '=');
  slash = strchr(name, '/');
  return eq != NULL && (slash == NULL || eq < slash);
}

/* SQLite's table: every entry of store_ops.h's list. */
#define OB__SQLITE_ENTRY(ret, name, params, args) .name = ob__sqlite_##name,
#define OB__SQLITE_VENTRY(name, params, args) .name = ob__sqlite_##name,
const ob__store_ops_t ob__sqlite_store_ops = {
    .backend = "sqlite",
    .dialect = OB_DIALECT_SQLITE,
    .open = ob__sqlite_db_open_ext,
    OB__STORE_OPS(OB__SQLITE_ENTRY, OB__SQLITE_VENTRY)
    .sql_step = ob__sql_sqlite_step,
    .sql_changes = ob__sql_sqlite_changes,
    .sql_col_int = ob__sql_sqlite_col_int,
    .sql_col = ob__sql_sqlite_col,
    .sql_col_null = ob__sql_sqlite_col_null,
    .sql_finish = ob__sql_sqlite_finish,
    .migration_exec = ob__sqlite_migration_exec};

void ob_db_display_name(const char* db_path, char* out, size_t n) {
  const ob__store_ops_t* pg;
  if (out == NULL || n == 0) return;
  if (db_path == NULL) {
    snprintf(out, n, "(none)");
  } else if (ob__db_name_is_postgresql(db_path)) {
    /* The dialect parses the string; without it nothing of it is shown
    ** (it may hold a password). */
    pg = ob__dialect_find(OB_DIALECT_POSTGRESQL);
    if (pg == NULL) ob__dialect_load(OB_DIALECT_POSTGRESQL, &pg, NULL, 0);
    if (pg != NULL && pg->display_name != NULL)
      pg->display_name(db_path, out, n);
    else
      snprintf(out, n, "a PostgreSQL connection string");
  } else {
    snprintf(out, n, "%s", db_path);
  }
}

int ob__db_is_postgresql(const ob__db_t* db) {
  return db->ops != NULL && db->ops->dialect == OB_DIALECT_POSTGRESQL;
}

int ob__db_open_ext(ob__db_t* db, const char* name, ob_sync_t sync,
                    int busy_timeout_ms, int64_t max_bytes,
                    const struct ob__schema_ext_s* ext) {
  if (ob__db_name_is_postgresql(name)) {
    const ob__store_ops_t* pg = ob__dialect_find(OB_DIALECT_POSTGRESQL);
    char why[OB__ERRMSG_LEN - 64];
    int rc = 0;
    if (pg == NULL)
      rc = ob__dialect_load(OB_DIALECT_POSTGRESQL, &pg, why, sizeof why);
    if (rc < 0) {
      /* The name is not printed: a connection string may hold a
      ** password. */
      memset(db, 0, sizeof *db);
      return ob__db_seterr(db, rc, "%s", why);
    }
    return pg->open(db, name, sync, busy_timeout_ms, max_bytes, ext);
  }
  return ob__sqlite_store_ops.open(db, name, sync, busy_timeout_ms,
                                   max_bytes, ext);
}

int ob__db_open(ob__db_t* db, const char* name, ob_sync_t sync,
                int busy_timeout_ms, int64_t max_bytes) {
  return ob__db_open_ext(db, name, sync, busy_timeout_ms, max_bytes, NULL);
}

int ob__db_join_read(ob__db_t* db, int* began) {
  *began = 0;
  if (db->in_tx) return 0;
  int rc = ob__db_begin_read(db);
  if (rc == 0) *began = 1;
  return rc;
}

void ob__db_end_joined_read(ob__db_t* db, int began) {
  if (began) ob__db_rollback(db);
}

/* SQLite's data_version. On PostgreSQL the WAL insert position: it moves
** when anyone commits (and, unlike data_version, for this connection's own
** commits and the server's housekeeping too: a wake-up too many, never one
** missed). */
int ob__db_data_version(ob__db_t* db, int64_t* v) {
  static const ob__sql_text_t sql = {
      "PRAGMA data_version",
      "SELECT (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint"};
  ob__sql_t s;
  int rc;
  ob__sql_prepare2(db, &s, OB__D_DATA_VERSION, &sql, "data version");
  rc = ob__sql_int1(&s, v);
  return rc == OB_ENOTFOUND ? ob__db_seterr(db, OB_EDB, "data version") : rc;
}

static int unsupported(ob__db_t* db, const char* what) {
  if (db->ops == NULL)
    return ob__db_seterr(db, OB_ESTATE, "%s: the database is not open",
                         what);
  db->last_err = OB_ENOTSUP;
  return ob__db_seterr(db, OB_ENOTSUP,
                       "%s is not available on the %s backend in this "
                       "version (docs/postgresql.md lists what is)",
                       what, db->ops->backend);
}

#define OB__STORE_DISPATCH(ret, name, params, args)             \
  ret ob__##name params {                                       \
    if (db->ops == NULL || db->ops->name == NULL)               \
      return unsupported(db, "ob__" #name);                     \
    return db->ops->name args;                                  \
  }
#define OB__STORE_VDISPATCH(name, params, args)                 \
  void ob__##name params {                                      \
    if (db->ops != NULL && db->ops->name != NULL) db->ops->name args; \
  }

OB__STORE_OPS(OB__STORE_DISPATCH, OB__STORE_VDISPATCH)
