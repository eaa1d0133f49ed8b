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

/* Map an SQLite result code to OB_E*, recording "what: detail" in errmsg.
** Returns the OB_E* code (never 0 for rc != OK). */
int ob__db_fail(ob__db_t* db, int rc, const char* what);

/* Run a fixed statement (no parameters), e.g. a PRAGMA. */
int ob__db_exec_fixed(ob__db_t* db, const char* sql);

#endif
