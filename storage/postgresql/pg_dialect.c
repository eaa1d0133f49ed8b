/* SPDX-License-Identifier: Apache-2.0 */
/* The PostgreSQL dialect's side of storage/dialect.h: its table, and its
** entry point, which checks the library it is handed and keeps its host
** table. The only symbol the plugin exports. */
#include <string.h>

#include "storage/postgresql/pg_int.h"

const ob_dialect_host_t* ob__pg_host;

#define OB__PG_ENTRY(ret, name, params, args) .name = ob__pg_##name,
#define OB__PG_VENTRY(name, params, args) .name = ob__pg_##name,
const ob__store_ops_t ob__pg_store_ops = {
    .backend = "postgresql",
    .dialect = OB_DIALECT_POSTGRESQL,
    .open = ob__pg_db_open_ext,
    OB__STORE_OPS(OB__PG_ENTRY, OB__PG_VENTRY)
    .sql_step = ob__sql_pg_step,
    .sql_changes = ob__sql_pg_changes,
    .sql_col_int = ob__sql_pg_col_int,
    .sql_col = ob__sql_pg_col,
    .sql_col_null = ob__sql_pg_col_null,
    .sql_finish = ob__sql_pg_finish,
    .migration_exec = ob__pg_migration_exec,
    .retention_days = ob__pg_retention_days,
    .display_name = ob__pg_display_name};

static const ob_dialect_t dialect = {
    .abi = OB__DIALECT_ABI,
    .version = OB_VERSION_STRING,
    .db_size = sizeof(ob__db_t),
    .ops = &ob__pg_store_ops};

__attribute__((visibility("default"))) const ob_dialect_t*
oncebox_dialect_entry(const ob_dialect_host_t* host);

const ob_dialect_t* oncebox_dialect_entry(const ob_dialect_host_t* host) {
  /* A library of another release would read ob__db_t, or call us, with
  ** another layout: answer nothing rather than guess. */
  if (host == NULL || host->abi != OB__DIALECT_ABI || host->version == NULL ||
      strcmp(host->version, OB_VERSION_STRING) != 0 ||
      host->db_size != sizeof(ob__db_t))
    return NULL;
  ob__pg_host = host;
  return &dialect;
}
