/* SPDX-License-Identifier: Apache-2.0 */
/* The PostgreSQL backend's table: every member of store_ops.h. (A member
** left NULL would make its dispatcher, storage/store.c, answer OB_ENOTSUP
** naming the function.) */
#include "storage/postgresql/pg_int.h"
#include "storage/sql.h"

const ob__store_ops_t ob__pg_store_ops = {
    .backend = "postgresql",
    .open = ob__pg_db_open_ext,
    /* pg_db.c: the connection and its transactions */
    .db_page_size = ob__pg_db_page_size,
    .db_repage = ob__pg_db_repage,
    .db_set_wal_policy = ob__pg_db_set_wal_policy,
    .db_close = ob__pg_db_close,
    .db_data_version = ob__pg_db_data_version,
    .db_begin = ob__pg_db_begin,
    .db_begin_relaxed = ob__pg_db_begin_relaxed,
    .db_begin_read = ob__pg_db_begin_read,
    .db_commit = ob__pg_db_commit,
    .db_rollback = ob__pg_db_rollback,
    .db_savepoint = ob__sql_db_savepoint,
    .db_release = ob__sql_db_release,
    .db_rollback_to = ob__sql_db_rollback_to,
    /* pg_schema.c */
    .schema_migrate = ob__pg_schema_migrate,
    .schema_identify = ob__pg_schema_identify,
    /* storage/queue.c, storage/processed.c: the handling transaction */
    .queue_insert = ob__sql_queue_insert,
    .queue_claim_ready = ob__sql_queue_claim_ready,
    .queue_delete = ob__sql_queue_delete,
    .queue_reschedule = ob__sql_queue_reschedule,
    .queue_next_due = ob__sql_queue_next_due,
    .queue_next_due_unwaited = ob__sql_queue_next_due_unwaited,
    .queue_insert_held = ob__sql_queue_insert_held,
    .queue_group_busy = ob__sql_queue_group_busy,
    .queue_wait = ob__sql_queue_wait,
    .queue_insert_waiting = ob__sql_queue_insert_waiting,
    .queue_claim_waiting = ob__sql_queue_claim_waiting,
    .processed_claim = ob__sql_processed_claim,
    .processed_has_legacy = ob__sql_processed_has_legacy,
    .event_source_ref = ob__sql_event_source_ref,
    /* storage/outbox.c: the outbox */
    .outbox_insert = ob__sql_outbox_insert,
    .outbox_due = ob__sql_outbox_due,
    .outbox_mark_published = ob__sql_outbox_mark_published,
    .outbox_mark_failed = ob__sql_outbox_mark_failed,
    .outbox_list = ob__sql_outbox_list,
    /* storage/relay.c: the relay's claims (leases on the server's clock) */
    .relay_claim = ob__sql_relay_claim,
    .relay_mark_published = ob__sql_relay_mark_published,
    .relay_mark_failed = ob__sql_relay_mark_failed,
    .relay_release = ob__sql_relay_release,
    .relay_retry_parked = ob__sql_relay_retry_parked,
    .relay_backlog = ob__sql_relay_backlog,
    .relay_pending = ob__sql_relay_pending,
    .relay_next_due = ob__sql_relay_next_due,
    .relay_status_set = ob__sql_relay_status_set,
    /* storage/effect.c: the fence's effects (leases on the server's clock) */
    .effect_get = ob__sql_effect_get,
    .effect_insert = ob__sql_effect_insert,
    .effect_due = ob__sql_effect_due,
    .effect_lease = ob__sql_effect_lease,
    .effect_mark_call = ob__sql_effect_mark_call,
    .effect_unlease = ob__sql_effect_unlease,
    .effect_lease_renew = ob__sql_effect_lease_renew,
    .effect_update = ob__sql_effect_update,
    .effect_next_due_db = ob__sql_effect_next_due_db,
    .effect_list = ob__sql_effect_list,
    .effect_reconcile = ob__sql_effect_reconcile,
    /* storage/retention.c: the engine's clocks */
    .engine_clock_load = ob__sql_engine_clock_load,
    .observed_clock_load = ob__sql_observed_clock_load,
    .observed_clock_store = ob__sql_observed_clock_store,
    .deadlines_ahead = ob__sql_deadlines_ahead,
    /* storage/deadline.c: deadlines after a wall-clock jump */
    .deadlines_rebase = ob__sql_deadlines_rebase,
    .deadlines_shift = ob__sql_deadlines_shift,
    /* storage/retention.c (pg_retention.c its days): giving space back */
    .space_delete_published = ob__sql_space_delete_published,
    .space_checkpoint = ob__pg_space_checkpoint,
    .retention_sweep = ob__sql_retention_sweep,
    /* pg_user_sql.c: handler SQL */
    .user_exec = ob__pg_user_exec,
    .user_cache_clear = ob__pg_user_cache_clear,
    /* pg_stats.c: statistics, checks, size */
    .stats = ob__pg_stats,
    .check = ob__pg_check,
    .space_used_bytes = ob__pg_space_used_bytes,
    /* storage/failed.c: the failure store */
    .failed_insert = ob__sql_failed_insert,
    .failed_insert_effect = ob__sql_failed_insert_effect,
    .failed_list = ob__sql_failed_list,
    .failed_retry = ob__sql_failed_retry,
    .failed_remove = ob__sql_failed_remove,
    .failed_list_filter = ob__sql_failed_list_filter,
    .failed_count = ob__sql_failed_count,
    .failed_apply_filter = ob__sql_failed_apply_filter,
    .effect_park_waiting = ob__sql_effect_park_waiting,
    .effect_requeue_failed = ob__sql_effect_requeue_failed,
};
