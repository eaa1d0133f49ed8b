/* SPDX-License-Identifier: Apache-2.0 */
/*
** storage: the table of functions a backend provides (docs/decisions/0018).
**
** Every function of store.h that touches the database is one entry here:
** X(return type, name, parameters, arguments) for one returning a code,
** V(name, parameters, arguments) for one returning nothing. The list makes
** three things that must agree: the table's members (below), the
** dispatchers of store.h (storage/store.c) and each backend's declarations
** (storage/sqlite/sqlite_store.h, storage/postgresql/pg_store.h). A
** backend leaves a member NULL for what it does not provide: its
** dispatcher then answers OB_ENOTSUP with the function's name in errmsg,
** and a void one does nothing. Included by storage/ only.
*/
#ifndef OB_STORAGE_STORE_OPS_H
#define OB_STORAGE_STORE_OPS_H

#include "storage/store.h"

#define OB__STORE_OPS(X, V)                                                   \
  X(int, db_page_size,                                                        \
    (ob__db_t* db, int* out),                                                 \
    (db, out))                                                                \
  X(int, db_repage,                                                           \
    (ob__db_t* db, int page_size, int64_t max_bytes),                         \
    (db, page_size, max_bytes))                                               \
  X(int, db_set_wal_policy,                                                   \
    (ob__db_t* db, int checkpoint_pages, int64_t size_limit_bytes),           \
    (db, checkpoint_pages, size_limit_bytes))                                 \
  V(db_close,                                                                 \
    (ob__db_t* db),                                                           \
    (db))                                                                     \
  X(int, engine_clock_load,                                                   \
    (ob__db_t* db, int64_t* ms),                                              \
    (db, ms))                                                                 \
  X(int, observed_clock_load,                                                 \
    (ob__db_t* db, int64_t* ms),                                              \
    (db, ms))                                                                 \
  X(int, observed_clock_store,                                                \
    (ob__db_t* db, int64_t ms),                                               \
    (db, ms))                                                                 \
  X(int, db_data_version,                                                     \
    (ob__db_t* db, int64_t* v),                                               \
    (db, v))                                                                  \
  X(int, db_begin,                                                            \
    (ob__db_t* db),                                                           \
    (db))                                                                     \
  X(int, db_begin_relaxed,                                                    \
    (ob__db_t* db),                                                           \
    (db))                                                                     \
  X(int, db_begin_read,                                                       \
    (ob__db_t* db),                                                           \
    (db))                                                                     \
  X(int, db_commit,                                                           \
    (ob__db_t* db),                                                           \
    (db))                                                                     \
  V(db_rollback,                                                              \
    (ob__db_t* db),                                                           \
    (db))                                                                     \
  X(int, db_savepoint,                                                        \
    (ob__db_t* db),                                                           \
    (db))                                                                     \
  X(int, db_release,                                                          \
    (ob__db_t* db),                                                           \
    (db))                                                                     \
  X(int, db_rollback_to,                                                      \
    (ob__db_t* db),                                                           \
    (db))                                                                     \
  X(int, schema_migrate,                                                      \
    (ob__db_t* db, const ob__schema_ext_t* ext),                              \
    (db, ext))                                                                \
  X(int, schema_identify,                                                     \
    (ob__db_t* db, int adopt),                                                \
    (db, adopt))                                                              \
  X(int, queue_insert,                                                        \
    (ob__db_t* db, const char* queue, const char* message_id, const           \
     char* type, const char* headers, const void* body, size_t                \
     body_len, int64_t available_at, int64_t now),                            \
    (db, queue, message_id, type, headers, body, body_len,                    \
     available_at, now))                                                      \
  X(int, queue_insert_held,                                                   \
    (ob__db_t* db, const ob__queue_row_t* r, int64_t now),                    \
    (db, r, now))                                                             \
  X(int, queue_group_busy,                                                    \
    (ob__db_t* db, const char* group_key),                                    \
    (db, group_key))                                                          \
  X(int, queue_claim_ready,                                                   \
    (ob__db_t* db, int64_t now, int max, ob__queue_row_t* rows),              \
    (db, now, max, rows))                                                     \
  X(int, queue_delete,                                                        \
    (ob__db_t* db, int64_t rowid),                                            \
    (db, rowid))                                                              \
  X(int, queue_reschedule,                                                    \
    (ob__db_t* db, int64_t rowid, int attempts, int64_t available_at,         \
     int64_t first_failed_at, const char* last_error, int64_t now),           \
    (db, rowid, attempts, available_at, first_failed_at, last_error,          \
     now))                                                                    \
  X(int, queue_next_due,                                                      \
    (ob__db_t* db, int64_t* at),                                              \
    (db, at))                                                                 \
  X(int, queue_next_due_unwaited,                                             \
    (ob__db_t* db, int64_t* at),                                              \
    (db, at))                                                                 \
  X(int, processed_claim,                                                     \
    (ob__db_t* db, const char* consumer, const char* message_id,              \
     int64_t source_ref, const char* legacy_id, int64_t now),                 \
    (db, consumer, message_id, source_ref, legacy_id, now))                   \
  X(int, processed_has_legacy,                                                \
    (ob__db_t* db, int* has),                                                 \
    (db, has))                                                                \
  X(int, event_source_ref,                                                    \
    (ob__db_t* db, const char* uri, int64_t* ref),                            \
    (db, uri, ref))                                                           \
  X(int, outbox_insert,                                                       \
    (ob__db_t* db, const char* id, const char* causation_id, const            \
     char* event_type, const char* aggregate_id, const char* payload,         \
     size_t payload_len, const char* traceparent, const char*                 \
     tracestate, int64_t now, int64_t wall_behind_ms),                        \
    (db, id, causation_id, event_type, aggregate_id, payload,                 \
     payload_len, traceparent, tracestate, now, wall_behind_ms))              \
  X(int, outbox_due,                                                          \
    (ob__db_t* db, int64_t now, size_t max, int (*cb)(void* arg, const        \
     ob_event_t* ev), void* arg),                                             \
    (db, now, max, cb, arg))                                                  \
  X(int, outbox_mark_published,                                               \
    (ob__db_t* db, const char* id, int64_t now),                              \
    (db, id, now))                                                            \
  X(int, outbox_mark_failed,                                                  \
    (ob__db_t* db, const char* id, int64_t next_attempt_at, const             \
     char* error, int64_t now),                                               \
    (db, id, next_attempt_at, error, now))                                    \
  X(int, failed_insert,                                                       \
    (ob__db_t* db, const ob__queue_row_t* r, const char* error_class,         \
     const char* reason, int attempts, int64_t now),                          \
    (db, r, error_class, reason, attempts, now))                              \
  X(int, failed_insert_effect,                                                \
    (ob__db_t* db, const ob__queue_row_t* r, const char* error_class,         \
     const char* reason, int attempts, const char* effect_key, int64_t        \
     now),                                                                    \
    (db, r, error_class, reason, attempts, effect_key, now))                  \
  X(int, failed_list,                                                         \
    (ob__db_t* db, int64_t id, const char* type, int (*cb)(void* arg,         \
     const ob_failed_t* f), void* arg),                                       \
    (db, id, type, cb, arg))                                                  \
  X(int, failed_retry,                                                        \
    (ob__db_t* db, int64_t id, int64_t now),                                  \
    (db, id, now))                                                            \
  X(int, failed_remove,                                                       \
    (ob__db_t* db, int64_t id),                                               \
    (db, id))                                                                 \
  X(int, failed_list_filter,                                                  \
    (ob__db_t* db, const ob_failed_filter_t* fl, int (*cb)(void* arg,         \
     const ob_failed_t* f), void* arg),                                       \
    (db, fl, cb, arg))                                                        \
  X(int, failed_count,                                                        \
    (ob__db_t* db, const ob_failed_filter_t* fl),                             \
    (db, fl))                                                                 \
  X(int, failed_apply_filter,                                                 \
    (ob__db_t* db, int retry, const ob_failed_filter_t* fl, int batch,        \
     int64_t now, ob_failed_progress_fn progress, void* arg),                 \
    (db, retry, fl, batch, now, progress, arg))                               \
  X(int, stats,                                                               \
    (ob__db_t* db, int64_t now, ob_stats_t* s),                               \
    (db, now, s))                                                             \
  X(int, check,                                                               \
    (ob__db_t* db, void (*cb)(void* arg, const char* v), void* arg),          \
    (db, cb, arg))                                                            \
  X(int, space_used_bytes,                                                    \
    (ob__db_t* db, int64_t* used),                                            \
    (db, used))                                                               \
  X(int, space_delete_published,                                              \
    (ob__db_t* db, int batch, int64_t* deleted),                              \
    (db, batch, deleted))                                                     \
  X(int, space_checkpoint,                                                    \
    (ob__db_t* db, int truncate),                                             \
    (db, truncate))                                                           \
  X(int, retention_sweep,                                                     \
    (ob__db_t* db, int64_t cutoff, int batch, int64_t* deleted),              \
    (db, cutoff, batch, deleted))                                             \
  X(int, relay_claim,                                                         \
    (ob__db_t* db, const char* token, int64_t now, int64_t                    \
     lease_until, int max, int ordered, const char* const* priority,          \
     int npriority, ob__relay_row_t* rows),                                   \
    (db, token, now, lease_until, max, ordered, priority, npriority,          \
     rows))                                                                   \
  X(int, relay_mark_published,                                                \
    (ob__db_t* db, const char* id, const char* token, int64_t now),           \
    (db, id, token, now))                                                     \
  X(int, relay_mark_failed,                                                   \
    (ob__db_t* db, const char* id, const char* token, int64_t                 \
     next_attempt_at, const char* error, int park_after, int64_t now),        \
    (db, id, token, next_attempt_at, error, park_after, now))                 \
  X(int, relay_release,                                                       \
    (ob__db_t* db, const char* token),                                        \
    (db, token))                                                              \
  X(int, relay_retry_parked,                                                  \
    (ob__db_t* db, int64_t now),                                              \
    (db, now))                                                                \
  X(int, relay_backlog,                                                       \
    (ob__db_t* db, int64_t* unpublished, int64_t* parked),                    \
    (db, unpublished, parked))                                                \
  X(int, relay_pending,                                                       \
    (ob__db_t* db, int64_t now, int due_only),                                \
    (db, now, due_only))                                                      \
  X(int, relay_next_due,                                                      \
    (ob__db_t* db, int64_t now, int ordered, int64_t* at),                    \
    (db, now, ordered, at))                                                   \
  X(int, relay_status_set,                                                    \
    (ob__db_t* db, const char* name, int online, int64_t                      \
     last_publish_at, const char* last_error, int64_t now),                   \
    (db, name, online, last_publish_at, last_error, now))                     \
  X(int, outbox_list,                                                         \
    (ob__db_t* db, int filter, size_t limit, int (*cb)(void* arg,             \
     const ob_outbox_row_t* r), void* arg),                                   \
    (db, filter, limit, cb, arg))                                             \
  X(int, deadlines_ahead,                                                     \
    (ob__db_t* db, int64_t now, int64_t ahead_ms, int64_t* max_ref),          \
    (db, now, ahead_ms, max_ref))                                             \
  X(int, deadlines_rebase,                                                    \
    (ob__db_t* db, int64_t now, int64_t jump, int64_t ahead_ms),              \
    (db, now, jump, ahead_ms))                                                \
  X(int, deadlines_shift,                                                     \
    (ob__db_t* db, int64_t now, int64_t jump),                                \
    (db, now, jump))                                                          \
  X(int, user_exec,                                                           \
    (ob__db_t* db, const char* sql, const ob_value_t* params, size_t          \
     nparams, ob_row_cb row, void* arg),                                      \
    (db, sql, params, nparams, row, arg))                                     \
  V(user_cache_clear,                                                         \
    (ob__db_t* db),                                                           \
    (db))                                                                     \
  X(int, effect_get,                                                          \
    (ob__db_t* db, const char* key, ob__effect_row_t* r),                     \
    (db, key, r))                                                             \
  X(int, effect_insert,                                                       \
    (ob__db_t* db, const char* key, const char* idem_key, const               \
     ob_effect_request_t* req, const char* message_id, const char*            \
     consumer, int64_t now),                                                  \
    (db, key, idem_key, req, message_id, consumer, now))                      \
  X(int, effect_due,                                                          \
    (ob__db_t* db, const char* provider, int64_t now, int max,                \
     ob__effect_row_t* rows),                                                 \
    (db, provider, now, max, rows))                                           \
  X(int, effect_lease,                                                        \
    (ob__db_t* db, const char* key, const char* token, int64_t until,         \
     int64_t now, int for_call, int64_t observed),                            \
    (db, key, token, until, now, for_call, observed))                         \
  X(int, effect_mark_call,                                                    \
    (ob__db_t* db, const char* key, const char* token, int64_t now,           \
     int64_t observed),                                                       \
    (db, key, token, now, observed))                                          \
  X(int, effect_unlease,                                                      \
    (ob__db_t* db, const char* key, const char* token, int64_t now),          \
    (db, key, token, now))                                                    \
  X(int, effect_lease_renew,                                                  \
    (ob__db_t* db, const char* key, const char* token, int64_t until,         \
     int64_t now),                                                            \
    (db, key, token, until, now))                                             \
  X(int, effect_update,                                                       \
    (ob__db_t* db, const char* key, const char* token, const                  \
     ob__effect_update_t* u, int64_t now),                                    \
    (db, key, token, u, now))                                                 \
  X(int, effect_next_due_db,                                                  \
    (ob__db_t* db, const char* provider, int64_t now, int64_t* at),           \
    (db, provider, now, at))                                                  \
  X(int, effect_list,                                                         \
    (ob__db_t* db, int state, const char* key, int (*cb)(void* arg,           \
     const ob_effect_t* ef), void* arg),                                      \
    (db, state, key, cb, arg))                                                \
  X(int, effect_reconcile,                                                    \
    (ob__db_t* db, const char* key, int64_t now),                             \
    (db, key, now))                                                           \
  X(int, queue_wait,                                                          \
    (ob__db_t* db, int64_t rowid, const char* key, int64_t                    \
     available_at, int64_t now),                                              \
    (db, rowid, key, available_at, now))                                      \
  X(int, queue_insert_waiting,                                                \
    (ob__db_t* db, const ob__queue_row_t* r, const char* key, int64_t         \
     available_at, int64_t now),                                              \
    (db, r, key, available_at, now))                                          \
  X(int, queue_claim_waiting,                                                 \
    (ob__db_t* db, const char* key, int max, ob__queue_row_t* rows),          \
    (db, key, max, rows))                                                     \
  X(int, effect_park_waiting,                                                 \
    (ob__db_t* db, const char* key, const char* reason, int64_t now),         \
    (db, key, reason, now))                                                   \
  X(int, effect_requeue_failed,                                               \
    (ob__db_t* db, const char* key, int64_t now),                             \
    (db, key, now))

typedef int (*ob__store_open_fn)(ob__db_t* db, const char* name,
                                 ob_sync_t sync, int busy_timeout_ms,
                                 int64_t max_bytes,
                                 const struct ob__schema_ext_s* ext);

typedef struct ob__store_ops_s {
  const char* backend;     /* "sqlite", "postgresql": for messages */
  /* Open name (a file path, or a connection string) into a zeroed db, set
  ** db->ops, migrate. On failure nothing stays open and errmsg says why. */
  ob__store_open_fn open;
#define OB__STORE_OP_MEMBER(ret, name, params, args) ret(*name) params;
#define OB__STORE_VOP_MEMBER(name, params, args) void(*name) params;
  OB__STORE_OPS(OB__STORE_OP_MEMBER, OB__STORE_VOP_MEMBER)
#undef OB__STORE_OP_MEMBER
#undef OB__STORE_VOP_MEMBER
} ob__store_ops_t;

extern const ob__store_ops_t ob__sqlite_store_ops;
#if defined(ONCEBOX_HAVE_POSTGRESQL)
extern const ob__store_ops_t ob__pg_store_ops;
#endif

#endif
