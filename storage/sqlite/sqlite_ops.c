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
#define ob__sqlite_failed_insert ob__sql_failed_insert
#define ob__sqlite_failed_insert_effect ob__sql_failed_insert_effect
#define ob__sqlite_failed_list ob__sql_failed_list
#define ob__sqlite_failed_retry ob__sql_failed_retry
#define ob__sqlite_failed_remove ob__sql_failed_remove
#define ob__sqlite_failed_list_filter ob__sql_failed_list_filter
#define ob__sqlite_failed_count ob__sql_failed_count
#define ob__sqlite_failed_apply_filter ob__sql_failed_apply_filter
#define ob__sqlite_effect_park_waiting ob__sql_effect_park_waiting
#define ob__sqlite_effect_requeue_failed ob__sql_effect_requeue_failed
#define ob__sqlite_effect_get ob__sql_effect_get
#define ob__sqlite_effect_insert ob__sql_effect_insert
#define ob__sqlite_effect_due ob__sql_effect_due
#define ob__sqlite_effect_lease ob__sql_effect_lease
#define ob__sqlite_effect_mark_call ob__sql_effect_mark_call
#define ob__sqlite_effect_unlease ob__sql_effect_unlease
#define ob__sqlite_effect_lease_renew ob__sql_effect_lease_renew
#define ob__sqlite_effect_update ob__sql_effect_update
#define ob__sqlite_effect_next_due_db ob__sql_effect_next_due_db
#define ob__sqlite_effect_list ob__sql_effect_list
#define ob__sqlite_effect_reconcile ob__sql_effect_reconcile
#define ob__sqlite_outbox_insert ob__sql_outbox_insert
#define ob__sqlite_outbox_due ob__sql_outbox_due
#define ob__sqlite_outbox_mark_published ob__sql_outbox_mark_published
#define ob__sqlite_outbox_mark_failed ob__sql_outbox_mark_failed
#define ob__sqlite_outbox_list ob__sql_outbox_list
#define ob__sqlite_engine_clock_load ob__sql_engine_clock_load
#define ob__sqlite_observed_clock_load ob__sql_observed_clock_load
#define ob__sqlite_observed_clock_store ob__sql_observed_clock_store
#define ob__sqlite_retention_sweep ob__sql_retention_sweep
#define ob__sqlite_space_delete_published ob__sql_space_delete_published

#define OB__SQLITE_ENTRY(ret, name, params, args) .name = ob__sqlite_##name,
#define OB__SQLITE_VENTRY(name, params, args) .name = ob__sqlite_##name,

const ob__store_ops_t ob__sqlite_store_ops = {
    .backend = "sqlite",
    .open = ob__sqlite_db_open_ext,
    OB__STORE_OPS(OB__SQLITE_ENTRY, OB__SQLITE_VENTRY)};
