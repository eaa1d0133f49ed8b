/* SPDX-License-Identifier: Apache-2.0 */
/* The SQLite backend's table: every entry of store_ops.h's list. */
#include "storage/sql.h"
#include "storage/sqlite/sqlite_store.h"

/* The operations written once over storage/sql.h (storage/<operation>.c). */
#define ob__sqlite_deadlines_ahead ob__sql_deadlines_ahead
#define ob__sqlite_deadlines_rebase ob__sql_deadlines_rebase
#define ob__sqlite_deadlines_shift ob__sql_deadlines_shift
#define ob__sqlite_processed_claim ob__sql_processed_claim
#define ob__sqlite_processed_has_legacy ob__sql_processed_has_legacy
#define ob__sqlite_event_source_ref ob__sql_event_source_ref

#define OB__SQLITE_ENTRY(ret, name, params, args) .name = ob__sqlite_##name,
#define OB__SQLITE_VENTRY(name, params, args) .name = ob__sqlite_##name,

const ob__store_ops_t ob__sqlite_store_ops = {
    .backend = "sqlite",
    .open = ob__sqlite_db_open_ext,
    OB__STORE_OPS(OB__SQLITE_ENTRY, OB__SQLITE_VENTRY)};
