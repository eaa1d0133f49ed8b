/* SPDX-License-Identifier: Apache-2.0 */
/*
** storage: every SQL statement of oncebox lives behind this header.
**
** Conventions: functions return 0 or a negative OB_E* code and, on error,
** leave the detail in db->errmsg. Functions that read rows hand out
** pointers valid only until the next call on the same statement (documented
** per function). Transactions are explicit: ob__db_begin / commit /
** rollback and savepoints; no function here opens one implicitly unless it
** says so.
*/
#ifndef OB_STORAGE_STORE_H
#define OB_STORAGE_STORE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "oncebox.h"

typedef struct sqlite3 sqlite3;
typedef struct sqlite3_stmt sqlite3_stmt;

/* Internal statements, prepared once (lazily) and reused. */
typedef enum {
  OB__Q_ENQUEUE = 0,
  OB__Q_CLAIM_READY,
  OB__Q_DELETE,
  OB__Q_RESCHEDULE,
  OB__Q_NEXT_DUE,
  OB__P_CLAIM,
  OB__P_LEGACY_PROBE,
  OB__P_SOURCE_FIND,
  OB__P_SOURCE_ADD,
  OB__O_INSERT,
  OB__O_DUE,
  OB__O_MARK_PUBLISHED,
  OB__O_MARK_FAILED,
  OB__F_INSERT,
  OB__R_CLAIM,
  OB__R_CLAIM_ORDERED,
  OB__R_MARK_PUBLISHED,
  OB__R_MARK_FAILED,
  OB__R_NEXT_DUE,
  OB__R_NEXT_DUE_ORDERED,
  OB__R_STATUS,
  OB__R_CLAIM_PRIORITY,
  OB__R_CLAIM_PRIORITY_ORDERED,
  OB__R_BACKLOG,
  OB__R_PENDING,
  OB__E_GET,
  OB__E_INSERT,
  OB__E_DUE,
  OB__E_LEASE,
  OB__E_UPDATE,
  OB__E_NEXT_DUE,
  OB__E_STORED_GET,
  OB__E_STORED_ADD,
  OB__E_STORED_SETTLE,
  OB__E_LINK_GET,
  OB__E_LINK_NOTE,
  OB__E_LINK_OFFLINE,
  OB__Q_WAIT,
  OB__Q_INSERT_WAITING,
  OB__Q_INSERT_HELD,
  OB__Q_GROUP_BUSY,
  OB__Q_CLAIM_WAITING,
  OB__S_SAVEPOINT,
  OB__S_RELEASE,
  OB__S_ROLLBACK_TO,
  OB__D_DATA_VERSION,
  OB__D_USED_BYTES,
  OB__D_FREE_PAGES,
  OB__DL_AHEAD,
  OB__ENGINE_CLOCK_STORE,
  OB__STMT_COUNT
} ob__stmt_id_t;

#define OB__USER_STMT_CACHE 32
#define OB__ERRMSG_LEN 512

typedef struct ob__user_stmt_s {
  char* sql;
  sqlite3_stmt* st;
  uint64_t last_used;
} ob__user_stmt_t;

struct ob__store_ops_s;
struct ob__pg_s;

/* One connection to the database, of either backend (docs/decisions/0018).
** The fields from in_tx on are the backend-neutral state core/ may read;
** db, stmt and user are the SQLite backend's, pg the PostgreSQL one's. */
typedef struct ob__db_s {
  const struct ob__store_ops_s* ops;  /* the backend; NULL: never opened */
  struct ob__pg_s* pg;
  sqlite3* db;
  sqlite3_stmt* stmt[OB__STMT_COUNT];
  ob__user_stmt_t user[OB__USER_STMT_CACHE];
  uint64_t use_clock;
  int in_tx;
  int savepoints;     /* open SAVEPOINT ob_msg: 0 or 1, inside in_tx only */
  int sync_full;      /* configured synchronous=FULL */
  int relaxed;        /* the open transaction runs at NORMAL */
  int last_err;       /* code of the last failed statement */
  int user_read_only; /* ob__user_exec refuses statements that write (ob_read) */
  int page_size;      /* SQLite: the file's page size once read; 0: unread */
  /* The engine clock (core/engine/engine_clock.c): the value recorded in
  ** engine_clock, and one to record with the next write transaction's
  ** commit when it is larger (0: none). A backend without the table
  ** ignores them. */
  int64_t clock_stored;
  int64_t clock_pending;
  char errmsg[OB__ERRMSG_LEN];
} ob__db_t;

/* Current schema version (PRAGMA user_version). */
#define OB__SCHEMA_VERSION 14
/* PRAGMA application_id: "OBX1". */
#define OB__APPLICATION_ID 0x4f425831

/* ---- store.c and each backend's db.c: open, errors, transactions -------- */

/* 1 if name is a PostgreSQL connection string: a postgresql:// or
** postgres:// URI, or libpq's key=value form (an '=' before any '/'; a
** file whose name has an '=' is named with a '/', as ./a=b.db). */
int ob__db_name_is_postgresql(const char* name);
/* 1 if the database is PostgreSQL (open), 0 if SQLite or closed. */
int ob__db_is_postgresql(const ob__db_t* db);

/*
** Open the database name names and migrate it. The name chooses the
** backend (ob__db_name_is_postgresql): a file path is SQLite, which
** creates the file 0600 if missing (via platform), opens it, applies the
** pragmas (WAL verified, synchronous, busy_timeout, foreign_keys,
** trusted_schema off, defensive); a PostgreSQL connection string connects
** (storage/postgresql). A build without PostgreSQL refuses such a name with
** OB_EINVAL and creates nothing. On failure everything is closed and
** errmsg says why; errmsg never holds the connection string's password.
*/
int ob__db_open(ob__db_t* db, const char* path, ob_sync_t sync,
                int busy_timeout_ms, int64_t max_bytes);
/* The page size of a new database file (docs/decisions/0017). */
#define OB__NEW_PAGE_SIZE 2048
#define OB__NEW_PAGE_SIZE_STR "2048"
/* The WAL policy ob__db_open applies (ob_options_t's defaults): checkpoint
** every this many pages, and truncate the WAL back to at most this many
** bytes after a checkpoint (not to 0: a WAL truncated and regrown costs
** metadata writes on every cycle). */
#define OB__WAL_CHECKPOINT_PAGES 8000
#define OB__WAL_SIZE_LIMIT_BYTES (16LL * 1024 * 1024)
/* The file's page size in *out. 0 or < 0. */
int ob__db_page_size(ob__db_t* db, int* out);
/* Rewrite the file with page_size-byte pages (VACUUM out of WAL, then back
** into WAL; the size cap max_bytes, if > 0, set again in pages). Needs the
** only connection to the file: OB_EBUSY, nothing changed, otherwise.
** Nothing to do when the size is already page_size. 0 or < 0. */
int ob__db_repage(ob__db_t* db, int page_size, int64_t max_bytes);
/* Set wal_autocheckpoint and journal_size_limit on db. 0 or < 0. */
int ob__db_set_wal_policy(ob__db_t* db, int checkpoint_pages,
                          int64_t size_limit_bytes);
/* The same with the embedder's schema (ext may be NULL; see schema.c). */
struct ob__schema_ext_s;
int ob__db_open_ext(ob__db_t* db, const char* path, ob_sync_t sync,
                    int busy_timeout_ms, int64_t max_bytes,
                    const struct ob__schema_ext_s* ext);
/* Finalize every statement and close. Safe on a zeroed or failed db. */
void ob__db_close(ob__db_t* db);

/* printf-style errmsg with an explicit code; returns code. */
int ob__db_seterr(ob__db_t* db, int code, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same with a va_list (for wrappers that take their own ...). */
int ob__db_vseterr(ob__db_t* db, int code, const char* fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

/* The engine clock's recorded value (engine_clock, one row): *ms, or
** OB_ENOTFOUND when none is recorded (a new file; a backend that keeps
** none). Recording is db_commit's (clock_pending above). */
int ob__engine_clock_load(ob__db_t* db, int64_t* ms);

/* The observed clock (retention_clock, one row): *ms, or OB_ENOTFOUND when
** no engine has recorded it yet. */
int ob__observed_clock_load(ob__db_t* db, int64_t* ms);
/* Record ms as the observed clock; it never moves back (another process's
** larger value wins). Its own statement outside a transaction. */
int ob__observed_clock_store(ob__db_t* db, int64_t ms);

/* PRAGMA data_version: a number that changes when another connection (this
** process or another) commits to the database, and never for this
** connection's own commits (on PostgreSQL also for them: store.c).
** Returns 0 and *v, or < 0. */
int ob__db_data_version(ob__db_t* db, int64_t* v);

int ob__db_begin(ob__db_t* db);        /* BEGIN IMMEDIATE */
/* BEGIN IMMEDIATE with synchronous=NORMAL for this transaction only, for
** bookkeeping whose loss on power failure is harmless by design (the
** relay's claims and published marks: losing one republishes with the same
** id). ob__db_commit / ob__db_rollback restore the configured level. */
int ob__db_begin_relaxed(ob__db_t* db);
int ob__db_begin_read(ob__db_t* db);   /* BEGIN (deferred) */
/* For the statistics: BEGIN (deferred) unless a transaction is already
** open (an ob_read's), whose snapshot they then read, so figures of
** several statistics calls agree. *began says whether
** ob__db_end_joined_read ends it. */
int ob__db_join_read(ob__db_t* db, int* began);
void ob__db_end_joined_read(ob__db_t* db, int began);
int ob__db_commit(ob__db_t* db);
void ob__db_rollback(ob__db_t* db);    /* no-op outside a transaction */
int ob__db_savepoint(ob__db_t* db);    /* SAVEPOINT ob_msg */
int ob__db_release(ob__db_t* db);      /* RELEASE ob_msg */
int ob__db_rollback_to(ob__db_t* db);  /* ROLLBACK TO ob_msg; RELEASE ob_msg */

/* ---- schema.c ----------------------------------------------------------- */

/* The embedder's schema for ob__schema_migrate (ob_options_t). */
typedef struct ob__schema_ext_s {
  const ob_migration_t* steps;
  size_t n;
  int adopt;         /* adopt_existing */
  int64_t now_ms;    /* schema_migration.applied_at */
} ob__schema_ext_t;

/* Migrate to OB__SCHEMA_VERSION and apply ext's missing steps (ext may be
** NULL: none), all in one transaction; OB_EVERSION if the file or one of
** its embedder schemas is newer, OB_ECORRUPT if it belongs to another
** application, OB_EINVAL for a malformed list or a failing step (errmsg
** names it). On error nothing is committed. */
int ob__schema_migrate(ob__db_t* db, const ob__schema_ext_t* ext);

/* The same refusals of the file as ob__schema_migrate, reading only: run
** before the open changes anything in the file (journal_mode=WAL rewrites
** its header). */
int ob__schema_identify(ob__db_t* db, int adopt);

/* 1 if name is one of the tables oncebox's own migrations create (an
** embedder's migration may read them, not change them). */
int ob__schema_is_own_table(const char* name);

/* ---- queue.c ------------------------------------------------------------ */

typedef struct ob__queue_row_s {
  int64_t rowid;
  char* queue;
  char* message_id;
  char* type;
  char* headers;       /* may be NULL */
  char* body;          /* NUL-terminated copy, body_len bytes before it */
  size_t body_len;
  int attempts;
  int64_t first_failed_at;  /* 0 if never failed */
  int64_t created_at;
  char* source;        /* an SQS event's CloudEvents source, else NULL */
  char* group_key;     /* an SQS FIFO event's group (see schema 10), else
                       ** NULL */
} ob__queue_row_t;

/* The columns ob__queue_row_read reads, in its order. */
#define OB__QUEUE_ROW_COLUMNS                                              \
  "id, queue_name, message_id, type, headers, body, attempts,"             \
  " first_failed_at, created_at, source, group_key"

/* Insert one queue row (caller validated the envelope; id normalized). */
int ob__queue_insert(ob__db_t* db, const char* queue, const char* message_id,
                     const char* type, const char* headers, const void* body,
                     size_t body_len, int64_t available_at, int64_t now);

/* Queue r (an SQS event of a FIFO group, r->group_key set) behind the
** rows of its group already queued: held, never due, until it is the
** group's first (schema 10's trigger). 0 or < 0. */
int ob__queue_insert_held(ob__db_t* db, const ob__queue_row_t* r,
                          int64_t now);
/* 1 when a row of this group is queued, 0 when none, < 0 on error. */
int ob__queue_group_busy(ob__db_t* db, const char* group_key);

/* Read up to max ready rows (available_at <= now, not leased) in
** (available_at, id) order into rows[] (malloc'd copies; free each with
** ob__queue_row_free). Returns the count or a negative code. */
int ob__queue_claim_ready(ob__db_t* db, int64_t now, int max,
                          ob__queue_row_t* rows);
void ob__queue_row_free(ob__queue_row_t* r);

/* The ack: delete the row. */
int ob__queue_delete(ob__db_t* db, int64_t rowid);
/* A retry: ONE update of the same row (available_at computed at now). */
int ob__queue_reschedule(ob__db_t* db, int64_t rowid, int attempts,
                         int64_t available_at, int64_t first_failed_at,
                         const char* last_error, int64_t now);
/* Earliest available_at (or lease end); OB_ENOTFOUND when empty. */
int ob__queue_next_due(ob__db_t* db, int64_t* at);
/* The same, leaving out messages that wait for an effect. */
int ob__queue_next_due_unwaited(ob__db_t* db, int64_t* at);

/* ---- processed.c -------------------------------------------------------- */

/* The dedup record's source_ref of a local message (an event consumed
** from SQS has its source's event_source id, > 0). */
#define OB__SOURCE_LOCAL 0

/*
** INSERT .. ON CONFLICT DO NOTHING RETURNING of (consumer, message_id,
** source_ref). legacy_id, when not NULL, is the id as schema 9 and earlier
** keyed it (a lower-case UUID): a record of that id made then counts as
** processed too. Returns 1 if this call claimed, 0 if it was already
** processed, < 0 on error.
*/
int ob__processed_claim(ob__db_t* db, const char* consumer,
                        const char* message_id, int64_t source_ref,
                        const char* legacy_id, int64_t now);
/* *has = 1 when dedup records of schema 9 or earlier are left (at open,
** so claims probe for them only then). 0 or < 0. */
int ob__processed_has_legacy(ob__db_t* db, int* has);
/* The event_source id of uri, added in the open transaction if new.
** 0 and *ref, or < 0. */
int ob__event_source_ref(ob__db_t* db, const char* uri, int64_t* ref);

/* ---- outbox_store.c ----------------------------------------------------- */

int ob__outbox_insert(ob__db_t* db, const char* id, const char* causation_id,
                      const char* event_type, const char* aggregate_id,
                      const char* payload, size_t payload_len,
                      const char* traceparent, const char* tracestate,
                      int64_t now, int64_t wall_behind_ms);

/* Visit up to max unpublished rows due at now in (created_at, id) order.
** cb returns 0 to go on, non-zero to stop. Pointers in ev are valid during
** cb only. Returns the number visited or a negative code. The statement is
** reset before this returns, so cb must not call ob__outbox_due itself. */
int ob__outbox_due(ob__db_t* db, int64_t now, size_t max,
                   int (*cb)(void* arg, const ob_event_t* ev), void* arg);

int ob__outbox_mark_published(ob__db_t* db, const char* id, int64_t now);
int ob__outbox_mark_failed(ob__db_t* db, const char* id,
                           int64_t next_attempt_at, const char* error,
                           int64_t now);

/* ---- failed.c ----------------------------------------------------------- */

/* Move a queue row to failed_message (insert + delete, caller's tx). */
int ob__failed_insert(ob__db_t* db, const ob__queue_row_t* r,
                      const char* error_class, const char* reason,
                      int attempts, int64_t now);
/* The same, remembering the effect the message waits for (a person must
** resolve it; resolving moves the message back to the queue). */
int ob__failed_insert_effect(ob__db_t* db, const ob__queue_row_t* r,
                             const char* error_class, const char* reason,
                             int attempts, const char* effect_key,
                             int64_t now);
int ob__failed_list(ob__db_t* db, int64_t id, const char* type,
                    int (*cb)(void* arg, const ob_failed_t* f), void* arg);
/* Back to the queue (own transaction). Returns number moved. */
int ob__failed_retry(ob__db_t* db, int64_t id, int64_t now);
int ob__failed_remove(ob__db_t* db, int64_t id);
/* The filtered forms (ob_failed_filter_t; NULL selects all): list in id
** order, count, and retry/remove in transactions of `batch` rows. */
int ob__failed_list_filter(ob__db_t* db, const ob_failed_filter_t* fl,
                           int (*cb)(void* arg, const ob_failed_t* f),
                           void* arg);
int ob__failed_count(ob__db_t* db, const ob_failed_filter_t* fl);
int ob__failed_apply_filter(ob__db_t* db, int retry,
                            const ob_failed_filter_t* fl, int batch,
                            int64_t now, ob_failed_progress_fn progress,
                            void* arg);

/* ---- stats.c ------------------------------------------------------------ */

/* The engine's own tables, in a read transaction of its own. */
int ob__stats(ob__db_t* db, int64_t now, ob_stats_t* s);
/* PRAGMA integrity_check (SQLite) and the engine's own invariants, in the
** caller's read transaction (ob_check opens it, then runs the modules'
** checks in it). Returns the number of violations or a negative code. */
int ob__check(ob__db_t* db, void (*cb)(void* arg, const char* v), void* arg);

/* ---- space.c: the disk-full policy's reads and deletes ------------------- */

/* Bytes in use (stats.c): on SQLite (page_count - freelist_count) *
** page_size of the connection's current view, on PostgreSQL the database's
** size. Returns 0 and *used, or < 0. */
int ob__space_used_bytes(ob__db_t* db, int64_t* used);
/* Delete up to batch published outbox rows, oldest publication first, in
** one transaction of its own. Unpublished rows are never touched. */
int ob__space_delete_published(ob__db_t* db, int batch, int64_t* deleted);
/* wal_checkpoint: PASSIVE (never waits), or TRUNCATE (gives the WAL's
** blocks back; may wait busy_timeout for readers). */
int ob__space_checkpoint(ob__db_t* db, int truncate);

/* ---- retention.c -------------------------------------------------------- */

/* Delete rows older than cutoff in batches of `batch`, one short
** transaction per batch. *deleted gets the total. */
int ob__retention_sweep(ob__db_t* db, int64_t cutoff, int batch,
                        int64_t* deleted);

/* ---- relay_store.c ------------------------------------------------------ */

typedef struct ob__relay_row_s {
  char* id;
  char* causation_id;
  char* event_type;
  char* aggregate_id;
  char* payload;
  size_t payload_len;
  int64_t created_at;
  int attempt_count;
  char* traceparent;   /* NULL if none */
  char* tracestate;
  int64_t wall_behind_ms;  /* the wall clock was this far behind the
                           ** engine clock when it was made; 0: not */
} ob__relay_row_t;

/* Most event types a relay claims first (ob_relay_options_t.priority_types):
** the priority claim is one index range per type. */
#define OB__RELAY_MAX_PRIORITY 8

/*
** Claim up to max publishable rows for relay `token` until lease_until, in
** ONE short write transaction of its own. Publishable: unpublished, not
** parked, due (next_attempt_at <= now), not claimed by a live lease. With
** `ordered`, a row is publishable only if no earlier unpublished row of its
** aggregate exists (so a parked row holds back its aggregate, and at most
** one row per aggregate is in flight). Publishable rows whose event_type is
** one of priority[0..npriority) (npriority <= OB__RELAY_MAX_PRIORITY) are
** claimed first, oldest first; the rest of max is filled with the oldest
** other publishable rows. A priority row is never publishable ahead of the
** ordering rule: with `ordered` it waits behind an earlier unpublished row
** of its aggregate of any type, and only the oldest 64 publishable rows of
** each priority type are looked at per claim (the cost stays bounded when
** they all wait; the rest follow in age order as their aggregates free). rows[] is filled in (created_at, id) order
** with malloc'd copies (free with ob__relay_row_free). Returns the count or
** a negative code.
*/
int ob__relay_claim(ob__db_t* db, const char* token, int64_t now,
                    int64_t lease_until, int max, int ordered,
                    const char* const* priority, int npriority,
                    ob__relay_row_t* rows);
void ob__relay_row_free(ob__relay_row_t* r);

/* In the caller's transaction. Both check the claim token: a relay whose
** lease expired and was taken over changes nothing. Return 1 if the row was
** updated, 0 if the claim was lost, < 0 on error. mark_failed parks the row
** when its attempt count reaches park_after (> 0). */
int ob__relay_mark_published(ob__db_t* db, const char* id, const char* token,
                             int64_t now);
int ob__relay_mark_failed(ob__db_t* db, const char* id, const char* token,
                          int64_t next_attempt_at, const char* error,
                          int park_after, int64_t now);
/* Drop every claim of token (clean shutdown). Own transaction. */
int ob__relay_release(ob__db_t* db, const char* token);
/* Parked rows become publishable again, attempts reset. Own transaction.
** Returns the number of rows. */
int ob__relay_retry_parked(ob__db_t* db, int64_t now);
/* The unpublished rows, counted over the partial index that holds only
** them (as small as the backlog, never the history): all of them in
** *unpublished, the parked ones among them in *parked. Autocommit read. */
int ob__relay_backlog(ob__db_t* db, int64_t* unpublished, int64_t* parked);
/* 1 if an unpublished row that is not parked exists (due_only: one due at
** now, claimed rows included), 0 if none, < 0 on error. One index probe
** while such a row is near the head of the backlog. Autocommit read. */
int ob__relay_pending(ob__db_t* db, int64_t now, int due_only);
/* When a row becomes publishable next (OB_ENOTFOUND: nothing waiting). */
int ob__relay_next_due(ob__db_t* db, int64_t now, int ordered, int64_t* at);
/* The relay_status row of ob_outbox_drain's in-process sink: its time
** counts as a publication; its connectivity is no relay's (stats skips it). */
#define OB__SINK_STATUS_NAME "in-process sink"
/* Record connectivity and the last successful publication. Caller's
** transaction or autocommit. last_publish_at 0 keeps the stored value. */
int ob__relay_status_set(ob__db_t* db, const char* name, int online,
                         int64_t last_publish_at, const char* last_error,
                         int64_t now);

typedef enum {
  OB__OUTBOX_ALL = 0,
  OB__OUTBOX_UNPUBLISHED = 1,
  OB__OUTBOX_PARKED = 2
} ob__outbox_filter_t;

/* Visit outbox rows (newest last), at most limit. */
int ob__outbox_list(ob__db_t* db, int filter, size_t limit,
                    int (*cb)(void* arg, const ob_outbox_row_t* r), void* arg);

/* ---- deadline_store.c: deadlines and a wall clock that jumps ----------- */

/*
** Every row with a deadline computed from the wall clock (queue.available_at
** and lease_until, outbox_event.next_attempt_at and claim_until,
** effect.next_attempt_at and lease_until) records in clock_ref the wall time
** it was computed at; NULL when none of its deadlines lies ahead (the
** common case: a message due at once, a published row, a settled effect),
** so the partial index on clock_ref holds only rows that wait. The rule
** that uses it is core/engine/deadlines.c's.
*/

/* The largest clock_ref above now + ahead_ms in *max_ref, or 0 when none
** (three index probes; autocommit read). 0 or < 0. */
int ob__deadlines_ahead(ob__db_t* db, int64_t now, int64_t ahead_ms,
                        int64_t* max_ref);
/* Rows computed on a clock more than ahead_ms ahead of now (the clock went
** back): each deadline moves by min(jump, now - clock_ref) (jump <= 0, 0
** when not measured), clock_ref becomes now. One UPDATE per table in one
** transaction of its own. Returns the rows changed or < 0. */
int ob__deadlines_rebase(ob__db_t* db, int64_t now, int64_t jump,
                         int64_t ahead_ms);
/* The clock went forward by jump (> 0): rows computed before it (clock_ref
** <= now - jump) with a deadline after now - jump move every deadline by
** jump, clock_ref becomes now. The same shape. Returns the rows changed. */
int ob__deadlines_shift(ob__db_t* db, int64_t now, int64_t jump);

/* ---- user_sql.c --------------------------------------------------------- */

/* Prepare-or-reuse, bind, step, report rows. See ob_tx_exec. */
int ob__user_exec(ob__db_t* db, const char* sql, const ob_value_t* params,
                  size_t nparams, ob_row_cb row, void* arg);
void ob__user_cache_clear(ob__db_t* db);


/* ---- effect_store.c: the fence ------------------------------------------ */

typedef struct ob__effect_row_s {
  char* key;
  char* idempotency_key;
  char* provider;
  char* method;
  char* path;
  char* request;
  size_t request_len;
  ob_effect_state_t state;
  char* reference;
  char* response;
  size_t response_len;
  int http_status;
  char* reason;
  char* message_id;
  char* consumer;
  int calls, lookups, successes, attempts;
  int64_t next_attempt_at, parked_at, created_at, updated_at;
  /* When a call with the key was first handed out (wall, observed); 0:
  ** never (or before schema 7). */
  int64_t first_call_at, first_call_observed_ms;
  char* park_cause;
  char* lookup_reference;
  int64_t amount;   /* 0 and NULL: none (or before schema 14) */
  char* currency;
} ob__effect_row_t;

void ob__effect_row_free(ob__effect_row_t* r);
/* Point out's fields at r's (valid while r lives). */
void ob__effect_row_view(const ob__effect_row_t* r, ob_effect_t* out);

/* Read one effect into r (malloc'd copies). 0, OB_ENOTFOUND, or < 0. */
int ob__effect_get(ob__db_t* db, const char* key, ob__effect_row_t* r);

/* Claim: INSERT in state pending, due at now. 1 inserted, 0 the key exists
** (nothing changed), < 0 error. */
int ob__effect_insert(ob__db_t* db, const char* key, const char* idem_key,
                      const ob_effect_request_t* req, const char* message_id,
                      const char* consumer, int64_t now);

/* Up to max open, unparked effects of provider (NULL: any) due at now
** whose lease is free, in next_attempt_at order. Returns the count. */
int ob__effect_due(ob__db_t* db, const char* provider, int64_t now, int max,
                   ob__effect_row_t* rows);

/* Take the lease of an open, unparked effect whose lease is free. 1 taken,
** 0 not (another process has it, or it is settled), < 0 error. for_call:
** the lease is for a call, which may reach the provider: the first such
** moment is recorded (now on the wall clock, observed on the engine's). */
int ob__effect_lease(ob__db_t* db, const char* key, const char* token,
                     int64_t until, int64_t now, int for_call,
                     int64_t observed);
/* Record that a call with the key is about to be made under token's lease
** (after a lookup found nothing), if none was before. */
int ob__effect_mark_call(ob__db_t* db, const char* key, const char* token,
                         int64_t now, int64_t observed);
/* Drop the lease if token still holds it; the effect is due at now. */
int ob__effect_unlease(ob__db_t* db, const char* key, const char* token,
                       int64_t now);

/* Extend the lease token holds to until, computed at now (own statement).
** 1 renewed, 0 the lease is gone, < 0 error. */
int ob__effect_lease_renew(ob__db_t* db, const char* key, const char* token,
                           int64_t until, int64_t now);

/* What an answer changes. Counters are added; response NULL keeps the old
** one; reference/reason replace. */
typedef struct ob__effect_update_s {
  ob_effect_state_t state;
  const char* reference;
  const void* response;
  size_t response_len;
  int http_status;
  const char* reason;
  int add_calls, add_lookups, add_successes;
  int attempts;
  int64_t next_attempt_at;
  int64_t parked_at;        /* 0: not parked */
  const char* park_cause;   /* with parked_at: why ("attempts", ...) */
  int clear_first_call;     /* the first call handed out never left: forget
                            ** its time (the key never reached anyone) */
  /* The effect's own provider, currency and amount (its row's): a final
  ** outcome takes them out of the running totals. currency NULL: the
  ** effect has no amount, nothing to take out. */
  const char* provider;
  const char* currency;
  int64_t amount;
} ob__effect_update_t;

/* Apply u to the open effect `key` (only if token still holds its lease
** when token is not NULL); the lease is dropped. Returns the rows changed
** (0: lease lost or already settled), < 0 error. */
int ob__effect_update(ob__db_t* db, const char* key, const char* token,
                      const ob__effect_update_t* u, int64_t now);

/* When an open unparked effect is next due (its next_attempt_at, or its
** lease's end), on the clock of now; OB_ENOTFOUND. */
int ob__effect_next_due_db(ob__db_t* db, const char* provider, int64_t now,
                           int64_t* at);

/* Visit effects (state 0: all; -1: parked; key NULL: all keys). */
int ob__effect_list(ob__db_t* db, int state, const char* key,
                    int (*cb)(void* arg, const ob_effect_t* ef), void* arg);

/* Make open effects due now, attempts 0, unparked, lease dropped (key NULL:
** all). Returns the number changed. */
int ob__effect_reconcile(ob__db_t* db, const char* key, int64_t now);

/* Offline limits (docs/offline.md). The running totals of the open
** effects with an amount, per provider and currency (effect_stored): the
** claim adds (ob__effect_insert does, in its transaction, when it inserts
** a row with an amount), the final outcome subtracts (ob__effect_update,
** when it moves such an effect from open to confirmed or failed). */
int ob__effect_stored_get(ob__db_t* db, const char* provider,
                          const char* currency, int64_t* count,
                          int64_t* total);
/* Serialise the claims of provider's effects in currency until the
** transaction ends (ob__sql_lock_key: PostgreSQL's advisory lock; nothing
** on SQLite, whose write transaction excludes every other writer). */
int ob__effect_stored_lock(ob__db_t* db, const char* provider,
                           const char* currency);
/* The provider's link as the effects' attempts last saw it
** (effect_provider_link): *offline_since the engine-clock time of the
** first failed attempt of the outage, 0 online (also when never seen). */
int ob__effect_link_get(ob__db_t* db, const char* provider,
                        int64_t* offline_since);
/* Record an attempt's verdict on the link: offline 1 keeps (or starts at
** now) offline_since, 0 clears it and records the answer's time. */
int ob__effect_link_note(ob__db_t* db, const char* provider, int offline,
                         int64_t now);

/* The waiting side, in queue and failed_message. */
/* This queue row waits for effect key; re-checked at available_at anyway
** (computed at now). */
int ob__queue_wait(ob__db_t* db, int64_t rowid, const char* key,
                   int64_t available_at, int64_t now);
/* A message from outside (SQS) becomes a local queue row waiting on key. */
int ob__queue_insert_waiting(ob__db_t* db, const ob__queue_row_t* r,
                             const char* key, int64_t available_at,
                             int64_t now);
/* Read up to max queue rows waiting on key (copies; free each). */
int ob__queue_claim_waiting(ob__db_t* db, const char* key, int max,
                            ob__queue_row_t* rows);
/* Move every queue row waiting on key to the failure store (class
** "effect_unknown", the effect remembered). Returns the number moved. */
int ob__effect_park_waiting(ob__db_t* db, const char* key, const char* reason,
                            int64_t now);
/* Move failure-store rows of effect key back to the queue, due now.
** Returns the number moved. */
int ob__effect_requeue_failed(ob__db_t* db, const char* key, int64_t now);

#endif
