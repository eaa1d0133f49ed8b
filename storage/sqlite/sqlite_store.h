/* SPDX-License-Identifier: Apache-2.0 */
/*
** storage/sqlite: the SQLite backend of store.h (the terminal's, and the
** default: a file path names it). Its functions are store.h's with the
** prefix ob__sqlite_ (declared from storage/store_ops.h's list), reached
** through ob__sqlite_store_ops; the helpers below are its own.
*/
#ifndef OB_STORAGE_SQLITE_STORE_H
#define OB_STORAGE_SQLITE_STORE_H

#include "storage/store_ops.h"

int ob__sqlite_db_open_ext(ob__db_t* db, const char* path, ob_sync_t sync,
                           int busy_timeout_ms, int64_t max_bytes,
                           const struct ob__schema_ext_s* ext);
#define OB__SQLITE_DECLARE(ret, name, params, args) ret ob__sqlite_##name params;
#define OB__SQLITE_VDECLARE(name, params, args) void ob__sqlite_##name params;
OB__STORE_OPS(OB__SQLITE_DECLARE, OB__SQLITE_VDECLARE)

#undef OB__SQLITE_DECLARE
#undef OB__SQLITE_VDECLARE

/* Map an SQLite result code to OB_E*, recording "what: detail" in errmsg.
** Returns the OB_E* code (never 0 for rc != OK). */
int ob__db_fail(ob__db_t* db, int rc, const char* what);

/* The cached statement for id, prepared from sql on first use (the SQL text
** lives next to the code that runs it). Returned reset and unbound; the
** caller resets it after use. NULL on error: errmsg set, and the code
** (OB_ENOMEM, OB_EIO, ...) in db->last_err for the caller to return. */
sqlite3_stmt* ob__db_stmt(ob__db_t* db, ob__stmt_id_t id, const char* sql);

/* Run a fixed statement (no parameters), e.g. a PRAGMA. */
int ob__db_exec_fixed(ob__db_t* db, const char* sql);

#endif
