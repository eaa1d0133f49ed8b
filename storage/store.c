/* SPDX-License-Identifier: Apache-2.0 */
/* store.h's functions as dispatchers to the open database's backend
** (docs/decisions/0018), both backends' tables, the choice of the backend
** by name, and what is the same for both (errors, the joined reads, the
** data version). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/util/errbuf.h"
#include "storage/sql.h"

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

#if defined(ONCEBOX_HAVE_POSTGRESQL)
void ob__pg_display_name(const char* conninfo, char* out, size_t n);
#endif

/* Each dialect's table: every entry of store_ops.h's list. */
#define OB__SQLITE_ENTRY(ret, name, params, args) .name = ob__sqlite_##name,
#define OB__SQLITE_VENTRY(name, params, args) .name = ob__sqlite_##name,
const ob__store_ops_t ob__sqlite_store_ops = {
    .backend = "sqlite",
    .open = ob__sqlite_db_open_ext,
    OB__STORE_OPS(OB__SQLITE_ENTRY, OB__SQLITE_VENTRY)};

#if defined(ONCEBOX_HAVE_POSTGRESQL)
#define OB__PG_ENTRY(ret, name, params, args) .name = ob__pg_##name,
#define OB__PG_VENTRY(name, params, args) .name = ob__pg_##name,
const ob__store_ops_t ob__pg_store_ops = {
    .backend = "postgresql",
    .open = ob__pg_db_open_ext,
    OB__STORE_OPS(OB__PG_ENTRY, OB__PG_VENTRY)};
#endif

void ob_db_display_name(const char* db_path, char* out, size_t n) {
  if (out == NULL || n == 0) return;
  if (db_path == NULL) {
    snprintf(out, n, "(none)");
  } else if (ob__db_name_is_postgresql(db_path)) {
#if defined(ONCEBOX_HAVE_POSTGRESQL)
    ob__pg_display_name(db_path, out, n);
#else
    snprintf(out, n, "a PostgreSQL connection string");
#endif
  } else {
    snprintf(out, n, "%s", db_path);
  }
}

int ob__db_is_postgresql(const ob__db_t* db) {
#if defined(ONCEBOX_HAVE_POSTGRESQL)
  return db->ops == &ob__pg_store_ops;
#else
  (void)db;
  return 0;
#endif
}

int ob__db_open_ext(ob__db_t* db, const char* name, ob_sync_t sync,
                    int busy_timeout_ms, int64_t max_bytes,
                    const struct ob__schema_ext_s* ext) {
  if (ob__db_name_is_postgresql(name)) {
#if defined(ONCEBOX_HAVE_POSTGRESQL)
    return ob__pg_store_ops.open(db, name, sync, busy_timeout_ms, max_bytes,
                                 ext);
#else
    /* The name is not printed: a connection string may hold a password. */
    memset(db, 0, sizeof *db);
    return ob__db_seterr(db, OB_EINVAL,
                         "the database is named by a PostgreSQL connection "
                         "string, and this build of oncebox has no "
                         "PostgreSQL support (built without libpq or with "
                         "ONCEBOX_POSTGRESQL=OFF); a file path names an "
                         "SQLite database");
#endif
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
