/* SPDX-License-Identifier: Apache-2.0 */
/*
** storage: the boundary between the library and a dialect built apart
** (docs/decisions/0025-dialect-plugin.md). SQLite is compiled into the
** library; PostgreSQL is a plugin (postgresql.so, package
** oncebox-postgresql) or, for a static embedder, an archive
** (liboncebox-postgresql.a) registered with one call, as SQLite registers
** a VFS.
**
** Nothing but two tables crosses the boundary, so that no hidden symbol
** of liboncebox has to be visible to the dialect, and the dialect links
** neither liboncebox.so nor liboncebox.a:
**   - the host (ob_dialect_host_t): what the library lends the dialect,
**     the storage functions its code calls (sql.h's statement layer,
**     errors, the embedder's schema steps);
**   - the dialect (ob_dialect_t): its store_ops.h table.
** The dialect's single entry point, oncebox_dialect_entry (its only
** exported symbol in the plugin), receives the host and returns the
** dialect, or NULL when the host is not the library it was built with.
**
** Both tables are checked on both sides: the ABI number below, the
** library's version string (a dialect serves the release it was built
** with, exactly) and the size of ob__db_t, whose fields the dialect reads.
** Any change to this file, to store_ops.h's list or to ob__db_t is an ABI
** change: raise OB__DIALECT_ABI.
*/
#ifndef OB_STORAGE_DIALECT_H
#define OB_STORAGE_DIALECT_H

#include "storage/sql.h"

#define OB__DIALECT_ABI 1
/* The symbol the loader looks up in a plugin. */
#define OB__DIALECT_ENTRY_NAME "oncebox_dialect_entry"

struct ob_dialect_host_s {
  int abi;                 /* OB__DIALECT_ABI */
  const char* version;     /* OB_VERSION_STRING */
  size_t db_size;          /* sizeof(ob__db_t) */
  int (*db_seterr)(ob__db_t* db, int code, const char* fmt, ...)
      __attribute__((format(printf, 3, 4)));
  void (*assert_fail)(const char* file, int line, const char* expr);
  int (*observed_clock_load)(ob__db_t* db, int64_t* ms);
  int (*schema_ext_check)(ob__db_t* db, const ob__schema_ext_t* ext);
  int (*schema_ext_missing)(ob__db_t* db, const ob__schema_ext_t* ext,
                            int recorded, size_t* missing);
  int (*schema_ext_apply)(ob__db_t* db, const ob__schema_ext_t* ext);
  int (*engine_clock_record)(ob__db_t* db);
  void (*sql_prepare)(ob__db_t* db, ob__sql_t* s, int id, const char* sql,
                      const char* what);
  void (*sql_int)(ob__sql_t* s, int i, int64_t v);
  void (*sql_text)(ob__sql_t* s, int i, const char* v);
  int (*sql_step)(ob__sql_t* s);
  int64_t (*sql_col_int)(ob__sql_t* s, int i);
  const char* (*sql_col_text)(ob__sql_t* s, int i);
  void (*sql_finish)(ob__sql_t* s);
  int (*sql_done)(ob__sql_t* s);
  int (*sql_int1)(ob__sql_t* s, int64_t* out);
  int (*sql_run)(ob__db_t* db, int id, const char* sql, const char* what);
  int (*sql_lock_key)(ob__db_t* db, const char* key);
};

struct ob_dialect_s {
  int abi;                 /* OB__DIALECT_ABI the dialect was built with */
  const char* version;     /* OB_VERSION_STRING the dialect was built with */
  size_t db_size;          /* sizeof(ob__db_t) the dialect was built with */
  const ob__store_ops_t* ops;  /* ops->backend names it: "postgresql" */
};

/* The library's host table (storage/dialect.c). */
extern const ob_dialect_host_t ob__dialect_host;

/* The registered dialect (OB_DIALECT_*), or NULL (storage/dialect.c). */
const ob__store_ops_t* ob__dialect_find(int dialect);
/* Load the plugin of a dialect (platform/posix/plugin.c) and register it:
** 0 with its table in *out, or < 0 (OB_ENOTSUP: missing or refused,
** OB_EPERM: writable by others, OB_EIO: fails to load) with *out NULL and
** why (n bytes, may be NULL) saying what and, when it is not installed,
** which package installs it. */
int ob__dialect_load(int dialect, const ob__store_ops_t** out, char* why,
                     size_t n);

#endif
