/* SPDX-License-Identifier: Apache-2.0 */
/* The SQLite backend's table: every entry of store_ops.h's list. */
#include "storage/sql.h"
#include "storage/sqlite/sqlite_store.h"

#define OB__SQLITE_ENTRY(ret, name, params, args) .name = ob__sqlite_##name,
#define OB__SQLITE_VENTRY(name, params, args) .name = ob__sqlite_##name,

const ob__store_ops_t ob__sqlite_store_ops = {
    .backend = "sqlite",
    .open = ob__sqlite_db_open_ext,
    OB__STORE_OPS(OB__SQLITE_ENTRY, OB__SQLITE_VENTRY)};
