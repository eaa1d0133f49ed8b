/* SPDX-License-Identifier: Apache-2.0 */
/*
** oncebox: effectively-once message handling on one SQLite database.
**
** This header is the whole generic public API. The built-in business
** modules each have a header of their own next to this one (oncebox_*.h,
** each including this one) with their registration, constants and
** statistics. Anything not declared in these headers is not API and may
** change without notice. Every declaration documents its
** contract: what it returns on error, who owns each pointer, when a
** callback runs.
**
** What oncebox guarantees, precisely:
**   - Effects that live in the engine's database (dedup record, handler rows,
**     outbox rows, the queue ack) commit in ONE transaction: a message is
**     either fully handled or not at all, and a redelivered message whose
**     (consumer, message id) is already recorded is acknowledged without
**     running the handler again. That is "effectively once" for what the
**     database owns.
**   - Everything that crosses a network (outbox publication, external calls)
**     is at-least-once, made harmless by stable ids. oncebox never claims
**     exactly-once delivery.
**
** Threading: an engine is not thread-safe. Call every function from one
** thread (the loop thread when attached to a libuv loop).
**
** Errors: functions return 0 (OB_OK) on success and a negative OB_E* code
** on failure; ob_strerror() names the code and ob_errmsg() gives the detail
** of the engine's last failure.
*/
#ifndef ONCEBOX_H
#define ONCEBOX_H

#include <stddef.h>
#include <stdint.h>
#include <string.h> /* strlen, for OB_VTEXT */

#ifdef __cplusplus
extern "C" {
#endif

/* OB_EXTERN marks the API: what liboncebox.so exports. The library is
** compiled with -fvisibility=hidden and -DOB_BUILDING; everything else in it
** stays internal. */
#if defined(OB_BUILDING) && defined(__GNUC__)
#define OB_EXTERN __attribute__((visibility("default"))) extern
#else
#define OB_EXTERN extern
#endif

#define OB_VERSION_MAJOR 0
#define OB_VERSION_MINOR 1
#define OB_VERSION_PATCH 0
#define OB_VERSION_STRING "0.1.0"

/* Bytes of a buffer that holds a UUID in text form: 36 characters and the
** terminating NUL (message ids, event ids, ob_tx_new_id). */
#define OB_UUID_BUFLEN 37

/* Returns OB_VERSION_STRING of the linked library. This function can't fail. */
OB_EXTERN const char* ob_version(void);

/*
** Error codes. Fixed small negatives owned by oncebox, identical on every
** device so logs compare across a fleet. Every code any public function
** returns, or passes to a callback, is one of these. The network codes
** (OB_ENET .. OB_EUNAVAIL) group the transport's detailed causes; the
** detail (which certificate check, which SQS error) is in ob_errmsg() or
** the errbuf of the call. ob_effect_reply_t.status uses them too.
*/
#define OB_ERRNO_MAP(XX)                                                     \
  XX(EINVAL, -1, "invalid argument")                                         \
  XX(ENOMEM, -2, "out of memory")                                            \
  XX(EBUSY, -3, "database is locked by another connection")                  \
  XX(ENOSPC, -4, "disk or database full")                                    \
  XX(EIO, -5, "I/O error")                                                   \
  XX(ECORRUPT, -6, "database is corrupt or not an oncebox database")         \
  XX(EVERSION, -7, "database schema is newer than this oncebox")             \
  XX(ENOTFOUND, -8, "not found")                                             \
  XX(ECONSTRAINT, -9, "constraint violated")                                 \
  XX(ETOOBIG, -10, "value too large")                                        \
  XX(EPERM, -11, "permission denied")                                        \
  XX(ESTATE, -12, "operation not allowed in the current state")              \
  XX(EWAL, -13, "write-ahead logging could not be enabled")                  \
  XX(EDB, -14, "database error")                                             \
  XX(EHANDLER, -15, "handler failed")                                        \
  XX(ENOHANDLER, -16, "no handler registered for this message type")         \
  XX(EEXIST, -17, "already exists")                                          \
  XX(ECANCELED, -18, "operation canceled")                                   \
  XX(ESINK, -19, "outbox sink rejected the event")                           \
  XX(ETIMEDOUT, -20, "timed out")                                            \
  XX(ENET, -21, "network failure: the peer could not be reached or the "     \
                "connection was lost")                                      \
  XX(ETLS, -22, "TLS failure: certificate not trusted or handshake refused") \
  XX(EPROTO, -23, "the peer sent a malformed or unexpected response")        \
  XX(EAUTH, -24, "the peer refused the credentials or the signature")        \
  XX(EREMOTE, -25, "the remote service refused the request")                 \
  XX(EUNAVAIL, -26, "the remote service is unavailable or throttling")     \
  XX(ENOTSUP, -27, "not supported by this database backend or build")      \
  XX(EOFFLINE, -28, "refused: the provider is offline and the effect is "   \
                    "over its offline limit")

typedef enum {
  OB_OK = 0,
#define OB__ERR_ENUM(name, code, text) OB_##name = (code),
  OB_ERRNO_MAP(OB__ERR_ENUM)
#undef OB__ERR_ENUM
  OB__ERR_LAST = -64
} ob_errno_t;

/* Static text for an error code ("unknown error" for an unknown one). Never
** allocates. This function can't fail. */
OB_EXTERN const char* ob_strerror(int err);
/* Static symbolic name ("OB_ENOSPC"). This function can't fail. */
OB_EXTERN const char* ob_err_name(int err);

/* ---------------------------------------------------------------------------
** Time and randomness enter through this interface so that every rule
** (backoff, jitter, retention, id generation) is testable with a fake clock.
*/
typedef struct ob_clock_s {
  void* ctx;
  /* Wall-clock time in milliseconds since the Unix epoch (UTC). Stored
  ** timestamps and available_at use it because they must survive restarts. */
  int64_t (*now_ms)(void* ctx);
  /* Fill buf with len random bytes. Used for jitter and UUIDv7 randomness. */
  void (*random)(void* ctx, void* buf, size_t len);
  /* Milliseconds from an arbitrary start that never jump (the system
  ** clock: CLOCK_BOOTTIME, which counts suspend too). Retention counts the
  ** time the engine has seen pass on it, so a wall clock set forward
  ** (a terminal without NTP, an RTC reset) never deletes dedup records
  ** early. NULL: now_ms is trusted not to jump. */
  int64_t (*monotonic_ms)(void* ctx);
} ob_clock_t;

/* The real clock: CLOCK_REALTIME, CLOCK_BOOTTIME and getrandom(2). This
** function can't fail. */
OB_EXTERN const ob_clock_t* ob_system_clock(void);

/* ---------------------------------------------------------------------------
** Retry policy, Symfony Messenger's shape. Defaults (ob_retry_policy_init):
** max_retries 3, delay_ms 1000, multiplier 2.0, max_delay_ms 0 (no cap),
** jitter 0.1 (+-10%). The n-th retry (n = 1..max_retries) waits
** delay_ms * multiplier^(n-1), capped by max_delay_ms when it is > 0, then
** scaled by a uniform factor in [1 - jitter, 1 + jitter].
*/
typedef struct ob_retry_policy_s {
  int max_retries;
  int64_t delay_ms;
  double multiplier;
  int64_t max_delay_ms;
  double jitter;
} ob_retry_policy_t;

/* Fill p with the defaults above. This function can't fail. */
OB_EXTERN void ob_retry_policy_init(ob_retry_policy_t* p);

/* ---------------------------------------------------------------------------
** Engine options.
*/
typedef enum {
  OB_SYNC_FULL = 2,   /* default: a committed ack survives power loss */
  OB_SYNC_NORMAL = 1  /* survives a process crash, NOT power loss: opt-in only */
} ob_sync_t;

typedef enum {
  OB_LOG_ERROR = 0,
  OB_LOG_WARN = 1,
  OB_LOG_INFO = 2,
  OB_LOG_DEBUG = 3
} ob_log_level_t;

typedef void (*ob_log_cb)(void* ctx, ob_log_level_t level, const char* msg);

/*
** CAPI3REF: Structured log records
** KEYWORDS: {log record} {log event}
**
** What the engine and its components (the relay, the SQS consumer, the
** effects executors) log, as fields an embedder can route, count or print
** as JSON (docs/logs.md lists every component and event). ^A record is
** delivered to ob_options_t.log_record, and its text (msg) to
** ob_options_t.log, when each is set and the record's level is at most
** ob_options_t.log_level; ^(either, both or none may be set. When both are,
** log_record is called first, then log with the same level and text.)^
**
** ^Every pointer is owned by the engine and valid only during the call:
** copy what you keep. ^A string field that does not apply is NULL (never
** ""), a number that does not apply is -1 (duration_ms) or 0 (error,
** repeated). ^component and event are static, stable, lower-case
** snake_case names: match on them, not on msg, whose wording may change.
** ^event is "log" for a record that has no event name of its own yet.
**
** ^No field ever holds a credential: the text of a peer (an SQS or
** provider error message) is scrubbed before it reaches a record, as in
** ob_errmsg, and message bodies and headers are never logged.
**
** ^Repeated identical failures are rate-limited: the first record of a
** (component, event, error) logs at once; the next ones within
** OB_LOG_REPEAT_WINDOW_MS are counted, not delivered; when that window
** ends (seen at the next record, or at ob_close) one record with the same
** component, event, error and level and repeated = the count is
** delivered, its msg saying "repeated N more times". ^Only records at
** OB_LOG_INFO or above with an error code and no message_id are limited
** (a failing message is logged each time: its id is the news); each such
** window is also closed by a record of the same component at OB_LOG_INFO
** or above without an error code (the relay "reachable again"), so the
** summary comes before it.
**
** ^The callbacks run on the engine's thread, inside the engine's call
** (sometimes inside a transaction): they must not call the engine.
*/
typedef struct ob_log_record_s {
  ob_log_level_t level;
  const char* component;   /* "engine", "relay", "consumer", "fence",
                           ** "effects", "gc", "space", "clock" */
  const char* event;       /* "message_handled", "relay_unreachable" ... */
  const char* message_id;  /* the message's (or event's) id */
  const char* type;        /* its message type */
  const char* queue;       /* its local queue */
  const char* consumer;    /* the handler's consumer name */
  const char* outcome;     /* "done", "duplicate", "waiting", "retried", or
                           ** a failure's error class ("no_handler" ...):
                           ** the words of ob_outcome_name */
  int64_t duration_ms;     /* handling time of message_handled; -1: none */
  int error;               /* an OB_E* code (ob_err_name), 0: none */
  unsigned repeated;       /* > 0: a summary of this many limited records */
  const char* msg;         /* the human text, what ob_log_cb receives */
} ob_log_record_t;

typedef void (*ob_log_record_cb)(void* ctx, const ob_log_record_t* rec);

/* The window of the repeat limiter above. */
#define OB_LOG_REPEAT_WINDOW_MS 60000

/*
** One step of the embedder's own schema (ob_options_t.migrations). name is
** the embedder's schema name ("shop"; 1..64 printable ASCII), version its
** number (1, 2, ... for one name), sql one or more statements run with
** sqlite3_exec. ob_open applies the missing steps in the transaction that
** applies oncebox's own migrations (BEGIN IMMEDIATE): a crash or a failing
** step leaves the file as it was, oncebox's schema included. Each applied
** step is recorded in oncebox's table schema_migration(name, version,
** applied_at) and never runs again. The sql may not control transactions
** (BEGIN, COMMIT, SAVEPOINT ...), ATTACH or DETACH, run pragmas other than
** the read-only introspection ones (table_info, index_list,
** foreign_key_check, integrity_check ...: storage/schema.c has the list
** and why), nor change oncebox's own tables (queue, outbox_event, ...;
** reading them is fine). The strings are read during ob_open only; the
** caller keeps ownership.
*/
typedef struct ob_migration_s {
  const char* name;
  int version;
  const char* sql;
} ob_migration_t;

typedef struct ob_options_s {
  const char* db_path;          /* required; created 0600 if missing */
  ob_sync_t synchronous;        /* OB_SYNC_FULL */
  int busy_timeout_ms;          /* 5000 */
  int batch_size;               /* messages per transaction (group commit); 1 */
  int64_t retention_ms;         /* processed_message / published outbox: 30
                                ** days of time the engine has observed
                                ** passing (docs/field.md): a wall clock
                                ** that jumps forward deletes nothing early,
                                ** a long shutdown only keeps rows longer */
  int gc_interval_ms;           /* retention sweep period on a loop; 1 h */
  int gc_batch;                 /* rows deleted per retention statement; 1000 */
  int poll_interval_ms;         /* idle re-check for rows other processes
                                ** add: 1000 ms; 300000 when the WAL file
                                ** can be watched (inotify wakes us), so an
                                ** idle engine does not wake up */
  size_t max_body_bytes;        /* enqueue limit; 1 MiB */
  int64_t max_db_bytes;         /* size cap of the database file. 0 (the
                                ** default): derived from the filesystem
                                ** at each ob_open, 3/5 of its size with
                                ** the WAL held to a quarter of that
                                ** (docs/decisions/0021-default-cap.md);
                                ** OB_NO_DB_CAP: none. Writes past it fail
                                ** with OB_ENOSPC and nothing is
                                ** half-applied, as on a full disk. A cap
                                ** set here should stay below the
                                ** filesystem's free space minus the WAL
                                ** (a quarter of the cap): docs/field.md.
                                ** Ignored on PostgreSQL */
  int64_t reserve_db_bytes;     /* the last bytes below max_db_bytes that new
                                ** messages may not use: OB_RESERVE_AUTO
                                ** (the default) is an eighth of the cap,
                                ** 64 KiB .. 64 MiB; 0 .. max_db_bytes / 2
                                ** else. Past cap - reserve, ob_enqueue and
                                ** the SQS consumer refuse all but critical
                                ** types (ob_mark_critical) with OB_ENOSPC;
                                ** past cap - reserve/2 those too; past
                                ** cap - reserve/4 handling pauses; the rest
                                ** keeps publish marks and reclaiming going.
                                ** Held to half a derived cap; ignored
                                ** without a cap */
  ob_retry_policy_t retry;      /* default policy of every queue */
  const ob_clock_t* clock;      /* NULL: ob_system_clock() */
  ob_log_cb log;                /* NULL: no text logging (ob_log_record_t
                                ** says what log and log_record receive) */
  void* log_ctx;
  ob_log_level_t log_level;     /* OB_LOG_INFO */
  int no_handling;              /* 1: an attached engine only publishes and
                                ** consumes; the local queue is not handled
                                ** (`oncebox outbox drain`) */
  /* The embedder's schema, applied by ob_open (ob_migration_t): an array
  ** of nmigrations steps, for each name in ascending version order from 1
  ** with no gap. ob_open fails with OB_EVERSION (errbuf names the schema
  ** and both versions, nothing changed) when the file holds a newer
  ** version of a name than the newest given (an older program on a newer
  ** file), and with OB_EINVAL when the list is malformed or a step's sql
  ** fails (errbuf: the step's name and version and SQLite's message;
  ** nothing committed, not even oncebox's own schema on a new file).
  ** NULL / 0: none (a file's recorded steps are then not checked). */
  const ob_migration_t* migrations;
  size_t nmigrations;
  /* 1: a file that has tables but is not (yet) an oncebox database (no
  ** application_id, user_version 0) is made one, its tables kept. 0 (the
  ** default): such a file is refused with OB_ECORRUPT, because a wrong
  ** db_path must not turn another program's database into a queue (and
  ** oncebox's migrations may collide with its table names). */
  int adopt_existing;
  /* Structured records (ob_log_record_t), filtered by log_level like log;
  ** NULL: none. Appended after adopt_existing,
  ** like the WAL fields below: ob_options_init zeroes it. */
  ob_log_record_cb log_record;
  void* log_record_ctx;
  /* The WAL (docs/decisions/0017-pages-and-wal-for-flash.md): a checkpoint
  ** copies the WAL's pages into the database file every
  ** wal_checkpoint_pages pages (8000: 16 MiB of 2 KiB pages; a larger WAL
  ** copies a hot page once for many commits, so fewer bytes reach the
  ** flash), and afterwards the WAL file is cut back to at most
  ** wal_size_limit_bytes (16 MiB) rather than to 0, so it is not regrown
  ** on every cycle. With a size cap (max_db_bytes) both are held to a
  ** quarter of the cap, at least 1 MiB for a configured cap, so the disk to
  ** keep free beyond the cap scales with it (with the default cap the WAL
  ** is the derived one, without the 1 MiB floor).
  ** wal_checkpoint_pages 1..1000000;
  ** wal_size_limit_bytes >= 0. */
  int wal_checkpoint_pages;
  int64_t wal_size_limit_bytes;
  /* ob_run(OB_RUN_UNTIL_IDLE) ends when nothing is due within this many
  ** ms (docs/decisions/0020-until-idle.md): work due later (a delayed
  ** message, a retry's backoff, an outbox row's or an effect's next
  ** attempt) is left scheduled for a later run. OB_IDLE_HORIZON_POLL (-1,
  ** ob_options_init's): the poll interval in force, when the run would
  ** look again anyway: 300000 while the WAL file is watched (see
  ** poll_interval_ms), else poll_interval_ms. 0: only what is due now;
  ** > 0: that many ms. Appended last, like the fields above. */
  int64_t idle_horizon_ms;
} ob_options_t;

/* idle_horizon_ms: the poll interval in force (see idle_horizon_ms). */
#define OB_IDLE_HORIZON_POLL (-1)

/* reserve_db_bytes: let the engine size the reserve from the cap. */
#define OB_RESERVE_AUTO (-1)

/* max_db_bytes: no cap at all, not even the one derived from the
** filesystem (the disk's own size is then the only limit). */
#define OB_NO_DB_CAP (-1)

/* ob_stats_t.db_cap_source: where the cap in force came from. */
#define OB_CAP_NONE 0        /* no cap (OB_NO_DB_CAP, PostgreSQL, or the
                             ** filesystem could not be measured) */
#define OB_CAP_CONFIGURED 1  /* max_db_bytes as given */
#define OB_CAP_FILESYSTEM 2  /* derived from the filesystem's size */

/* Fill o with defaults (db_path NULL). This function can't fail. */
OB_EXTERN void ob_options_init(ob_options_t* o);

/* ---------------------------------------------------------------------------
** Engine lifecycle.
*/
typedef struct ob_engine_s ob_engine_t;

/*
** Open an engine on opts->db_path. The file is created with mode 0600 before
** SQLite opens it (so -wal and -shm inherit 0600). WAL is enabled and checked
** to be in effect, synchronous is set (FULL by default), foreign keys are on,
** and the schema is migrated through PRAGMA user_version. With
** opts->max_db_bytes 0 the size of the filesystem that holds db_path's
** directory is measured (statvfs) and the cap derived from it (3/5); if it
** cannot be measured the engine opens without a cap (ob_stats_t says
** which).
**
** On success *out is the engine and 0 is returned. On failure *out is NULL,
** nothing is left open and a negative code is returned: OB_EVERSION for a
** database written by a newer oncebox, OB_ECORRUPT for a file that is not an
** SQLite database, OB_EWAL if WAL cannot be enabled, OB_EPERM/OB_EIO for file
** errors. A db_path that is a PostgreSQL connection string needs the
** PostgreSQL dialect (see ob_dialect_register): without its plugin,
** OB_ENOTSUP naming the package to install, and nothing is opened. If
** errbuf is not NULL, up to errlen bytes of detail are written to it
** (always NUL-terminated) on failure.
*/
OB_EXTERN int ob_open(ob_engine_t** out, const ob_options_t* opts,
                      char* errbuf, size_t errlen);

/*
** Close the engine: detach from any loop (see ob_detach), roll back nothing
** (no transaction is ever left open between calls), close the database.
** ob_close(NULL) is a harmless no-op. If the engine is still attached to a
** loop whose handles have not been closed yet, ob_close() closes them and
** runs that loop until they are: call it from outside the loop's callbacks.
** This function can't fail.
*/
OB_EXTERN void ob_close(ob_engine_t* e);

/* Detail of the engine's last failure; "" if none. The string is owned by the
** engine and valid until the next call on it. */
OB_EXTERN const char* ob_errmsg(const ob_engine_t* e);

/*
** How to name the database db_path (ob_options_t.db_path) in a message or
** a status page: a file path as given; a PostgreSQL connection string by
** its host, port, dbname and user only, never its password or any other
** keyword (without the PostgreSQL dialect it writes "a PostgreSQL
** connection string"). Writes at most n bytes, NUL-terminated, into out;
** truncates a long path. db_path NULL writes "(none)".
*/
OB_EXTERN void ob_db_display_name(const char* db_path, char* out, size_t n);

/* The options the engine was opened with (clock resolved). */
OB_EXTERN const ob_options_t* ob_options(const ob_engine_t* e);

/* Set the retry policy of one queue (default: opts->retry). The policy is
** copied. Returns OB_EINVAL for a negative field or a NULL/empty name. */
OB_EXTERN int ob_set_retry_policy(ob_engine_t* e, const char* queue,
                                  const ob_retry_policy_t* p);

/*
** Mark messages of `type` critical for the disk-full policy: with a size
** cap (max_db_bytes), they may still enter the first half of the reserve
** after other types are refused. A module marks its money types when it
** is registered (those of modules/ mark their money messages). The
** name is copied. Returns 0 (also if already marked), OB_EINVAL for a NULL
** or invalid name, OB_ENOMEM past OB_MAX_CRITICAL_TYPES types or when out of
** memory.
*/
#define OB_MAX_CRITICAL_TYPES 16
OB_EXTERN int ob_mark_critical(ob_engine_t* e, const char* type);

/* ---------------------------------------------------------------------------
** Messages and handlers.
*/

/* A message as a handler sees it. All pointers are owned by the engine and
** valid only during the handler call. body is NOT NUL-terminated in general
** (it is in practice, but use body_len). */
typedef struct ob_message_s {
  const char* id;          /* producer's stable id (a UUID, lower case) */
  const char* type;        /* message type, e.g. "OrderPlaced" */
  const char* queue;       /* local queue name */
  const char* headers;     /* JSON object text or NULL */
  const char* body;
  size_t body_len;
  int attempts;            /* retries so far: 0 on the first delivery */
  int64_t created_at_ms;
  /* Appended in schema 10 (an event consumed from SQS; NULL otherwise): */
  const char* source;       /* its CloudEvents source; the dedup identity of
                            ** such an event is (consumer, source, id), and
                            ** id is then any non-empty string */
  const char* content_type; /* datacontenttype as sent; NULL: JSON */
  /* W3C trace context (https://www.w3.org/TR/trace-context/), NULL if none:
  ** the consumed event's distributed-tracing extension, or a local
  ** message's "traceparent"/"tracestate" header. Events the handler emits
  ** carry the same trace id with a new parent id. */
  const char* traceparent;
  const char* tracestate;
} ob_message_t;

/* The handling transaction a handler runs in. Opaque; valid only during the
** handler call. */
typedef struct ob_tx_s ob_tx_t;

/* What a handler returns. OB_DONE commits. For the other two, return the
** value of ob_tx_retry() / ob_tx_fail(), which also record the reason. */
#define OB_DONE 0
#define OB_RETRY 1
#define OB_UNRECOVERABLE 2
/* The message waits for an external effect (see ob_tx_effect): return the
** value ob_tx_effect gave. Nothing the handler wrote commits except the
** effect's claim; the handler runs again once the effect has an outcome. */
#define OB_WAIT 3

/*
** A handler. Runs inside the engine's transaction, after the dedup claim of
** (consumer, msg->id) succeeded. Returns OB_DONE, ob_tx_retry(...),
** ob_tx_fail(...), or a negative OB_E* code (treated as a retry whose reason
** is the error text; OB_ENOSPC/OB_EIO/OB_ECORRUPT also abort the whole
** transaction, see ob_run_once). Everything the handler wrote through tx is
** rolled back unless it returns OB_DONE.
*/
typedef int (*ob_handler_cb)(ob_tx_t* tx, const ob_message_t* msg, void* arg);

/*
** Register handler for messages of type `type` under consumer name
** `consumer`. Several consumers may handle one type; each handles every
** message once (the dedup key is (consumer, message id)). Strings are
** copied. Returns OB_EEXIST if (type, consumer) is already registered,
** OB_EINVAL for empty names.
*/
OB_EXTERN int ob_register(ob_engine_t* e, const char* type,
                          const char* consumer, ob_handler_cb handler,
                          void* arg);

/* A message to enqueue. Fields are read during the call only. */
typedef struct ob_envelope_s {
  const char* queue;       /* NULL: "default" */
  const char* id;          /* required: the producer's UUID (any case) */
  const char* type;        /* required: 1..128 printable ASCII characters */
  const char* headers;     /* NULL or a JSON object */
  const char* body;        /* may be NULL when body_len is 0 */
  size_t body_len;
  int64_t delay_ms;        /* available after now + delay_ms; >= 0 */
} ob_envelope_t;

/*
** Enqueue one message into the local durable queue, in its own durable
** transaction. The engine never invents an id: env->id must be a UUID
** (OB_EINVAL otherwise, with the reason in ob_errmsg). The body is stored as
** given, even if a handler will later reject it: bad input ends in the
** failure store with a reason, it is never dropped. Bodies over
** opts.max_body_bytes give OB_ETOOBIG. Enqueueing an id twice stores two
** deliveries; the dedup guard makes the second a no-op.
*/
OB_EXTERN int ob_enqueue(ob_engine_t* e, const ob_envelope_t* env);

/*
** Enqueue n messages in ONE transaction (one fsync). Each envelope is
** validated first; results[i] receives 0 or its negative error, and invalid
** envelopes are skipped while the valid ones commit. Returns the number of
** envelopes committed (>= 0), or a negative code if the transaction itself
** failed (then nothing was committed and results[] is unspecified).
*/
OB_EXTERN int ob_enqueue_many(ob_engine_t* e, const ob_envelope_t* envs,
                              size_t n, int* results);

/*
** Judge an envelope as ob_enqueue would, without enqueueing it: 0 if it
** would be accepted, else the same negative code with the reason in
** ob_errmsg. For callers that collect input first (a till's form, a file
** of lines after ob_enqueue_many gave only a code). Touches no table.
*/
OB_EXTERN int ob_envelope_check(ob_engine_t* e, const ob_envelope_t* env);

/* ---------------------------------------------------------------------------
** Inside a handler.
*/

typedef enum {
  OB_TYPE_NULL = 0,
  OB_TYPE_INT = 1,
  OB_TYPE_REAL = 2,
  OB_TYPE_TEXT = 3,
  OB_TYPE_BLOB = 4
} ob_type_t;

/* A bound parameter or a result column. For TEXT and BLOB, p/n point to the
** bytes; result bytes are valid only during the row callback. */
typedef struct ob_value_s {
  ob_type_t type;
  int64_t i;
  double d;
  const void* p;
  size_t n;
} ob_value_t;

#ifndef __cplusplus
#define OB_VNULL ((ob_value_t){OB_TYPE_NULL, 0, 0.0, NULL, 0})
#define OB_VINT(x) ((ob_value_t){OB_TYPE_INT, (int64_t)(x), 0.0, NULL, 0})
#define OB_VREAL(x) ((ob_value_t){OB_TYPE_REAL, 0, (double)(x), NULL, 0})
#define OB_VTEXT(s) ((ob_value_t){OB_TYPE_TEXT, 0, 0.0, (s), strlen(s)})
#define OB_VTEXTN(s, len) ((ob_value_t){OB_TYPE_TEXT, 0, 0.0, (s), (len)})
#define OB_VBLOB(b, len) ((ob_value_t){OB_TYPE_BLOB, 0, 0.0, (b), (len)})
#else
/* C++ has no compound literals: the same values from an inline function
** (C++11 and later, -pedantic clean). Not API: use the macros. */
static inline ob_value_t ob__value(ob_type_t t, int64_t i, double d,
                                   const void* p, size_t n) {
  ob_value_t v;
  v.type = t;
  v.i = i;
  v.d = d;
  v.p = p;
  v.n = n;
  return v;
}
#define OB_VNULL (ob__value(OB_TYPE_NULL, 0, 0.0, NULL, 0))
#define OB_VINT(x) (ob__value(OB_TYPE_INT, (int64_t)(x), 0.0, NULL, 0))
#define OB_VREAL(x) (ob__value(OB_TYPE_REAL, 0, (double)(x), NULL, 0))
#define OB_VTEXT(s) (ob__value(OB_TYPE_TEXT, 0, 0.0, (s), strlen(s)))
#define OB_VTEXTN(s, len) (ob__value(OB_TYPE_TEXT, 0, 0.0, (s), (len)))
#define OB_VBLOB(b, len) (ob__value(OB_TYPE_BLOB, 0, 0.0, (b), (len)))
#endif

/* Row callback: return 0 to continue, non-zero to stop early. */
typedef int (*ob_row_cb)(void* arg, const ob_value_t* cols, size_t ncols);

/*
** Run one SQL statement with `?` placeholders in the handling transaction.
** The statement is prepared once and cached per engine. Parameters are
** always bound, never spliced into the text. row (may be NULL) is called for
** each result row. Returns the number of rows changed (>= 0) on success,
** OB_ECONSTRAINT on a constraint violation (the statement's effect is undone,
** the transaction stays usable), or another negative code.
** Statements that start or end transactions are refused with OB_EINVAL.
*/
OB_EXTERN int ob_tx_exec(ob_tx_t* tx, const char* sql,
                         const ob_value_t* params, size_t nparams,
                         ob_row_cb row, void* arg);

/*
** Emit an outbox event in the handling transaction: one outbox_event row
** with a new UUIDv7 id, causation_id = the message id (in an ob_write: the
** write's id; refused in an ob_read), created_at = now.
** payload must be valid JSON text (OB_EINVAL otherwise). If id_out is not
** NULL it receives the event id (OB_UUID_BUFLEN bytes, NUL-terminated).
*/
OB_EXTERN int ob_tx_emit(ob_tx_t* tx, const char* event_type,
                         const char* aggregate_id, const char* payload,
                         size_t payload_len, char id_out[OB_UUID_BUFLEN]);

/* Ask for a retry after delay_ms (< 0: the queue's policy decides). reason is
** copied. Returns OB_RETRY: `return ob_tx_retry(tx, -1, "supplier busy");` */
OB_EXTERN int ob_tx_retry(ob_tx_t* tx, int64_t delay_ms, const char* reason);

/* Like ob_tx_retry, but ignore the retry budget: retried for ever until the
** handler stops asking. Never the default; use for "must not give up". */
OB_EXTERN int ob_tx_retry_forced(ob_tx_t* tx, int64_t delay_ms,
                                 const char* reason);

/* Give up: the message goes to the failure store with this reason (copied).
** Returns OB_UNRECOVERABLE: `return ob_tx_fail(tx, "order 42 is gone");` */
OB_EXTERN int ob_tx_fail(ob_tx_t* tx, const char* reason);

/* The engine clock's now, for timestamps written by handlers. */
OB_EXTERN int64_t ob_tx_now_ms(const ob_tx_t* tx);

/* A fresh UUIDv7 from the engine's clock (OB_UUID_BUFLEN bytes incl. NUL). */
OB_EXTERN void ob_tx_new_id(ob_tx_t* tx, char out[OB_UUID_BUFLEN]);

/* ---------------------------------------------------------------------------
** Driving the engine.
*/

/* Outcome counters of ob_run_once. */
typedef struct ob_batch_result_s {
  int claimed;      /* queue rows taken into the transaction */
  int handled;      /* handlers ran and committed (OB_DONE) */
  int duplicates;   /* acked without running: already processed */
  int retried;      /* rescheduled with backoff */
  int failed;       /* moved to the failure store */
  int waiting;      /* waiting for an external effect (ob_tx_effect) */
} ob_batch_result_t;

/*
** Handle up to opts.batch_size ready messages in ONE BEGIN IMMEDIATE
** transaction, a SAVEPOINT each, so a failing message rolls back alone; the
** acks of the whole batch become durable with the single COMMIT. For each
** message and each registered consumer of its type: claim (consumer, id) in
** processed_message (INSERT .. ON CONFLICT DO NOTHING RETURNING); if already
** claimed, skip; else run the handler. Then delete the queue row (the ack).
** A message of a type with no handler fails as unrecoverable.
**
** Returns 0 and fills *res (may be NULL) when the batch committed or there
** was nothing to do (res->claimed == 0). Returns a negative code if the
** transaction could not commit (OB_ENOSPC, OB_EIO, OB_EBUSY, ...): then
** nothing of the batch is applied and every message stays in the queue,
** with one exception no database can rule out: when the COMMIT's own fsync
** fails (OB_EIO), the batch may still be found committed later. Either way
** is safe, since a redelivered message meets its dedup record. After
** OB_EIO the engine replaces its database connection; after OB_ENOSPC it
** checkpoints the WAL so that freeing space is enough to resume.
*/
OB_EXTERN int ob_run_once(ob_engine_t* e, ob_batch_result_t* res);

/*
** When the next queued message becomes available, as an absolute time of
** the engine clock, in *at_ms. Returns 0, or OB_ENOTFOUND if the queue is
** empty.
*/
OB_EXTERN int ob_next_due(ob_engine_t* e, int64_t* at_ms);

struct uv_loop_s;

/*
** Attach the engine to a libuv loop: a timer handles ready messages (never
** blocking the loop for longer than one transaction per turn), sleeps until
** the next available_at, wakes when another process writes the database
** (a watch on its -wal file; where that is not possible it re-checks every
** poll_interval_ms), and runs retention every gc_interval_ms. ob_enqueue on
** this engine wakes it at once. Returns OB_ESTATE if already attached.
*/
OB_EXTERN int ob_attach(ob_engine_t* e, struct uv_loop_s* loop);

/*
** Stop claiming and close the engine's loop handles. done (may be NULL) is
** called exactly once from the loop after the handles are closed; the engine
** stays open. Calling it when not attached calls nothing and returns
** OB_ESTATE.
*/
OB_EXTERN int ob_detach(ob_engine_t* e, void (*done)(ob_engine_t*, void*),
                        void* arg);

typedef enum {
  OB_RUN_FOREVER = 0,     /* until ob_stop() or a signal */
  OB_RUN_UNTIL_IDLE = 1   /* until nothing is due within the idle horizon
                          ** (ob_options_t.idle_horizon_ms): see ob_run */
} ob_run_mode_t;

/* ob_run(OB_RUN_UNTIL_IDLE): stopped, but work is left for a later run. */
#define OB_RUN_STALLED 1

/*
** Run the engine on its own libuv loop until the mode says stop. With
** handle_signals, SIGTERM and SIGINT stop claiming, let the message in hand
** finish (commit or roll back) and return 0; a second signal a second or
** more after the first kills the process at once (its open transaction is
** rolled back by SQLite on the next open). Signals within that second are
** the same request: GNU timeout and process-group kills deliver one twice.
** After a signal the handler stays installed until the process ends, so a
** later signal during the caller's own clean-up still ends it.
**
** OB_RUN_UNTIL_IDLE ends the run when nothing is due within the idle
** horizon H (ob_options_t.idle_horizon_ms; by default the poll interval
** in force): no queued message, no outbox row and no open effect whose
** due time (a delay, a retry's backoff, a next attempt, a lease's end) is
** <= now + H, nothing in flight, and the consumed SQS queue done
** (ob_consumer_enable).
** Work due within H is waited for and done in this run; work due later is
** left scheduled for a later run and does not make the run stalled
** (ob_scheduled says what and when). Work that is due but waits for a peer
** the run cannot reach keeps it stalled, whatever H is.
**
** Returns 0 on a clean stop (an until-idle run: nothing left that is due
** within H), OB_RUN_STALLED when an until-idle run stopped with work left
** that nothing can progress right now (outbox rows while SQS can't be
** reached, an SQS queue that can't be reached, messages waiting for
** effects that are parked, whose provider can't be reached or is not
** enabled in this run), or the negative code of a storage failure that
** made handling impossible.
*/
OB_EXTERN int ob_run(ob_engine_t* e, ob_run_mode_t mode, int handle_signals);

/* What is left for later (ob_scheduled). */
typedef struct ob_scheduled_s {
  int64_t messages;     /* queued and not ready yet: delayed, waiting for a
                        ** retry's backoff or for an effect (ob_stats'
                        ** queue_delayed) */
  int64_t outbox;       /* unpublished, not parked and not due yet */
  int64_t effects;      /* open (pending or unknown) and not parked */
  int64_t earliest_ms;  /* the engine-clock time the first of them falls
                        ** due (messages waiting for an effect count by
                        ** their effect's time), still ahead of now; 0
                        ** when none. Each kind contributes its earliest
                        ** time, and only when that is ahead: work whose
                        ** time has passed (an outbox while no relay runs)
                        ** is due, not scheduled, and may hide a later row
                        ** of its kind */
} ob_scheduled_t;

/*
** Fill *s with the work left for later: for a program to say what an
** until-idle run (ob_run) left scheduled, as the oncebox CLI's
** "scheduled:" line does. Reads the database (several reads, not one
** snapshot: concurrent writers may make the figures disagree slightly).
** Call from the loop thread or when e is not attached. Returns 0,
** OB_EINVAL when e or s is NULL, or a negative storage code (s is then
** zeroed; detail in ob_errmsg).
*/
OB_EXTERN int ob_scheduled(ob_engine_t* e, ob_scheduled_t* s);

/* ---------------------------------------------------------------------------
** Offline probing, the same for the relay, the SQS consumer and every
** provider's effects executor: after a request that could not reach its
** peer the part goes offline and tries one request again after base_ms,
** doubling with +-10% jitter up to cap_ms, until an answer arrives;
** ob_network_changed() probes at once. Validation: base_ms >= 1 and
** cap_ms >= base_ms, or the part's *_enable fails with OB_EINVAL.
*/
typedef struct ob_probe_options_s {
  int64_t base_ms;             /* first wait: 1000 */
  int64_t cap_ms;              /* longest wait: 300000 (a provider: 60000,
                               ** so a till waits at most a minute once
                               ** the provider is back) */
} ob_probe_options_t;

/* ---------------------------------------------------------------------------
** The outbox relay: publishes outbox rows to Amazon SQS as CloudEvents 1.0
** (structured JSON, id = the outbox id) whenever SQS can be reached.
** At-least-once: a row is marked published only after SQS accepted it, so a
** crash or a lost reply publishes it again with the same id.
*/
typedef struct ob_relay_options_s {
  const char* queue_url;       /* required; a .fifo URL turns on FIFO fields */
  const char* source;          /* CloudEvents source; NULL: urn:oncebox:HOST */
  int ordered;                 /* 1: rows of one aggregate go out in order,
                               ** a later row waits behind an unpublished
                               ** earlier one (even a parked one) */
  int park_after;              /* rejections by SQS before a row is parked;
                               ** 10; 0: never. Network failures never park */
  int64_t backoff_base_ms;     /* per-row backoff after a failure: 1000 */
  int64_t backoff_cap_ms;      /* ... doubling up to: 300000 */
  ob_probe_options_t probe;    /* offline probing: 1000 .. 300000 */
  int64_t lease_ms;            /* claim lease of a batch in flight: 60000 */
  const char* const* priority_types;
                               /* event types claimed first, a NULL-terminated
                               ** list of at most 8 distinct, non-empty names
                               ** (copied; else OB_EINVAL);
                               ** their publishable rows go out, oldest
                               ** first, before any other row, e.g. the money
                               ** of a terminal back online after weeks. Never
                               ** past the ordering rule: with ordered, a
                               ** priority row still waits behind an earlier
                               ** unpublished row of its aggregate (and only
                               ** the oldest 64 publishable rows of a type are
                               ** looked at per claim; the rest follow in age
                               ** order as their aggregates free). NULL (the
                               ** default): the types marked on the engine
                               ** with ob_mark_priority_event when the relay
                               ** is enabled (the modules' money events);
                               ** an empty list ({NULL}): no priorities, the
                               ** oldest rows first */
  int allow_http;              /* 1: use an http:// SQS endpoint (see
                               ** ob_relay_enable); 0 (the default): refuse
                               ** it unless ONCEBOX_SQS_ALLOW_HTTP=1 */
} ob_relay_options_t;

/* Fill o with the defaults above (queue_url NULL). This function can't
** fail. */
OB_EXTERN void ob_relay_options_init(ob_relay_options_t* o);

/*
** Publish this engine's outbox to o->queue_url while the engine is attached
** to a loop (ob_attach / ob_run). The AWS configuration (credentials,
** region, endpoint, CA bundle) is read now from the environment and the
** profile files, the AWS SDKs' way. Call before attaching. Returns 0, or
** OB_EINVAL with a specific reason in errbuf (never a secret), OB_EEXIST if
** a relay is already enabled, OB_ESTATE when attached.
**
** Plain HTTP: an http:// endpoint (AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL
** or the profile's endpoint_url; the default is always https) is refused
** with OB_EINVAL, errbuf naming where it was set, unless o->allow_http is 1
** or the environment has ONCEBOX_SQS_ALLOW_HTTP=1: over http:// the signed
** requests and the session token travel in clear, and a forged 200 would
** mark rows published that SQS never received. With the opt-in the relay
** uses it (a loopback test server, an emulator) and logs one warning at
** OB_LOG_WARN when enabled. The opt-in changes nothing for https://.
** See docs/security.md, "Plain HTTP".
*/
OB_EXTERN int ob_relay_enable(ob_engine_t* e, const ob_relay_options_t* o,
                              char* errbuf, size_t errlen);

/* The host application knows the network came back (or changed): an
** offline relay or consumer retries at once instead of waiting for its next
** probe. Call from the loop thread. This function can't fail. */
OB_EXTERN void ob_network_changed(ob_engine_t* e);

/* Ask a running ob_run / attached engine to stop claiming; safe from
** handlers and loop callbacks. This function can't fail. */
OB_EXTERN void ob_stop(ob_engine_t* e);

/* ---------------------------------------------------------------------------
** The SQS consumer: handles the messages of an Amazon SQS queue with the
** same transaction and dedup guard as local messages. Each SQS message must
** be a CloudEvent 1.0 in structured JSON: its `id` (a UUID) is the message
** id the dedup guard keys on (never the SQS MessageId, which changes per
** send), `type` selects the handlers, `data` is the body they see; the
** queue name they see is "sqs" (its retry policy: ob_set_retry_policy(e,
** "sqs", ...)) and attempts is ApproximateReceiveCount - 1.
** One transaction per message; the message is deleted from SQS only after
** that transaction committed: handled, duplicate, or stored in the failure
** store (a body that is not a valid CloudEvent, an unrecoverable handler
** failure, retries exhausted). A retry makes the message invisible for the
** retry delay instead of copying it. A crash or a lost reply before the
** delete brings the message back, and then it is a duplicate.
*/
/*
** visibility_timeout_s: how long a message this consumer received stays
** invisible to every other consumer of the queue (ReceiveMessage's
** VisibilityTimeout), and how far each keepalive extension reaches; a
** message neither deleted nor extended in that time comes back to whoever
** receives next. An until-idle run waits up to that long (plus a second)
** for messages another consumer holds (see ob_consumer_enable). Seconds,
** 0..43200 (SQS's 12 h maximum):
**   0 (the default)  the queue's own VisibilityTimeout, read once with
**                    GetQueueAttributes when the consumer starts (each
**                    ob_attach / ob_run, never at enable); when it can't
**                    be read, 30 s (SQS's default for a new queue) and a
**                    warning in the log. A queue whose own is 0 gets 1.
**   1..43200         that many seconds, whatever the queue says.
** Anything else, -1 included, is OB_EINVAL. SQS's own meaning of 0 ("visible
** again at once") is not offered: a consumer that holds received messages
** (the prefetch buffer, a slow handler) needs them hidden meanwhile.
*/
typedef struct ob_consumer_options_s {
  const char* queue_url;       /* required: the queue's URL (copied) */
  int wait_seconds;            /* long poll (WaitTimeSeconds), 0..20: 20 */
  int prefetch;                /* messages received at once, 1..10: 1 */
  int visibility_timeout_s;    /* see above: 0 (the queue's), 1..43200 */
  ob_probe_options_t probe;    /* offline: receive retried after 1000 ..
                               ** 300000 */
  int allow_http;              /* 1: use an http:// SQS endpoint (see
                               ** ob_consumer_enable); 0 (the default):
                               ** refuse it unless ONCEBOX_SQS_ALLOW_HTTP=1 */
  int failures_to_sqs;         /* 1: a message that fails for good (not a
                               ** CloudEvent, unrecoverable, retries
                               ** exhausted, no handler) is left in SQS,
                               ** undeleted and unchanged, so the queue's
                               ** redrive policy moves it to its dead-letter
                               ** queue after maxReceiveCount receives;
                               ** nothing is stored locally. 0 (the
                               ** default): the local failure store */
} ob_consumer_options_t;

/* Fill o with the defaults above (queue_url NULL). This function can't
** fail. */
OB_EXTERN void ob_consumer_options_init(ob_consumer_options_t* o);

/*
** Consume o->queue_url while the engine is attached to a loop (ob_attach /
** ob_run). The AWS configuration (credentials, region, endpoint, CA bundle)
** is read now from the environment and the profile files, the AWS SDKs'
** way; requests are signed with the engine's clock. Call before attaching.
**
** While attached: long polls with ReceiveMessage; keeps the messages it
** holds (the prefetch buffer, those waiting for their delete) invisible
** with ChangeMessageVisibility every visibility_timeout_s / 2, never past
** 12 h after their first receive; when SQS can't be reached, retries the
** receive with backoff and jitter (ob_network_changed retries at once).
** ob_run(OB_RUN_UNTIL_IDLE): the consumer is done once it holds nothing, a
** receive came back empty and GetQueueAttributes, asked right after it,
** reports no message visible, in flight (ApproximateNumberOfMessagesNotVisible)
** or delayed, and none of its own retries is still hidden. While the queue
** reports some, it keeps receiving, so messages a killed consumer held come
** back when their visibility ends and are handled in this run; its own
** retries are waited for until their delay ends. If messages are still
** reported after an empty receive that began a visibility timeout (plus
** 1 s) after the queue first reported them, someone keeps them hidden: the
** run ends with OB_RUN_STALLED, as it does when SQS can't be reached or the
** counts can't be read (after the same wait). ob_consumer_status says which.
** The counts are SQS's approximate ones. ob_detach / SIGTERM:
** the long poll is canceled, the message being handled finishes, what was
** committed is deleted and what was received but not handled is made
** visible again.
**
** Plain HTTP: as for ob_relay_enable, an http:// endpoint is refused
** (OB_EINVAL, errbuf naming where it was set) unless o->allow_http is 1 or
** ONCEBOX_SQS_ALLOW_HTTP=1, and then used with one warning in the log:
** over http:// the signed requests and the session token travel in clear,
** and a forged ReceiveMessage answer would hand the handlers messages
** nobody sent (a payment a module would pay out).
**
** Returns 0, or OB_EINVAL with a specific reason in errbuf (never a
** secret), OB_EEXIST if a consumer is already enabled, OB_ESTATE when
** attached, OB_ENOMEM.
*/
OB_EXTERN int ob_consumer_enable(ob_engine_t* e, const ob_consumer_options_t* o,
                                 char* errbuf, size_t errlen);

/* Where the visibility timeout in force came from. */
typedef enum {
  OB_CONSUMER_VT_UNKNOWN = 0,   /* not started yet */
  OB_CONSUMER_VT_CONFIGURED,    /* visibility_timeout_s */
  OB_CONSUMER_VT_QUEUE,         /* the queue's VisibilityTimeout */
  OB_CONSUMER_VT_DEFAULT        /* the queue's could not be read: 30 s */
} ob_consumer_vt_source_t;

/* What the SQS consumer knows of its queue (ob_consumer_status). */
typedef struct ob_consumer_status_s {
  int online;                  /* 1: its last request reached SQS; 0: it
                               ** could not; -1: never started */
  int visibility_timeout_s;    /* in force; 0 before it is known */
  ob_consumer_vt_source_t visibility_source;
  /* The counts of the last GetQueueAttributes of an until-idle run, read
  ** after an empty receive: counts 1 when read, 0 when it was refused (then
  ** counts_error holds the SQS error code, never a secret), -1 when never
  ** asked; the three values are -1 unless counts is 1. */
  int counts;
  int64_t visible;             /* ApproximateNumberOfMessages */
  int64_t not_visible;         /* ApproximateNumberOfMessagesNotVisible */
  int64_t delayed;             /* ApproximateNumberOfMessagesDelayed */
  char counts_error[128];
  /* 1 when the last until-idle run found messages still left after its
  ** wait (what made it OB_RUN_STALLED, besides SQS being unreachable);
  ** waited_ms is how long it waited for them. */
  int stalled;
  int64_t waited_ms;
} ob_consumer_status_t;

/*
** Fill *st with what the consumer of e knows of its queue: for a program to
** say what an until-idle run left (the oncebox CLI's "not done:" line). Call
** from the loop thread or when e is not attached (after ob_run returned: the
** values of that run are kept until the next start). Returns 0, OB_EINVAL
** when e or st is NULL, OB_ENOTFOUND when no consumer is enabled (st is then
** zeroed, online -1).
*/
OB_EXTERN int ob_consumer_status(ob_engine_t* e, ob_consumer_status_t* st);

/* ---------------------------------------------------------------------------
** The fence: external side effects (a call to a payment provider) made
** effectively once with a claimed key, an idempotency key and
** reconciliation. See docs/fence.md.
**
** A handler that must call a provider does not call it. It asks for the
** effect with ob_tx_effect(tx, "refund:order-42", &request, &effect):
**   1. The first time, the key is claimed: an effect row in state PENDING
**      commits (without the handler's other writes, and without the dedup
**      record or the ack) and ob_tx_effect returns OB_WAIT, which the
**      handler returns. The message waits in the queue.
**   2. Outside any transaction and without blocking the loop, the engine
**      makes the call with header Idempotency-Key: a key derived from the
**      effect key alone, so it is the same across retries, restarts and
**      replays.
**   3. With the provider's answer, ONE transaction records the outcome
**      (CONFIRMED with the provider's reference, or FAILED with its reason)
**      and runs the waiting message's handler again: ob_tx_effect now
**      returns OB_DONE with the outcome, the handler writes its business
**      rows and outbox events, and the message is acknowledged, last.
** A timeout, a lost reply, a 5xx or a 429 leaves the effect UNKNOWN: it is
** never re-run blindly. If the provider honours idempotency keys the call
** is repeated with the same key (the provider answers the original
** result); otherwise the engine first looks the key up and calls only when
** the provider says it never saw it. With neither, an effect that may have
** been sent is parked as UNKNOWN for a person (ob_effect_resolve), and its
** messages wait in the failure store.
*/
typedef enum {
  OB_EFFECT_PENDING = 1,    /* claimed; the call may or may not have been made */
  OB_EFFECT_UNKNOWN = 2,    /* a call was made and its outcome is not known */
  OB_EFFECT_CONFIRMED = 3,  /* the provider accepted it (reference) */
  OB_EFFECT_FAILED = 4      /* the provider refused it (reason); final */
} ob_effect_state_t;

/* Static name ("pending", ...; "?" for an unknown value). Can't fail. */
OB_EXTERN const char* ob_effect_state_name(int state);

/* What the provider must be asked to do. Read during the call only. */
typedef struct ob_effect_request_s {
  const char* provider;   /* a registered provider's name, e.g. "payments" */
  const char* method;     /* "POST" */
  const char* path;       /* "/v1/refunds", appended to the provider's URL */
  const char* body;       /* JSON text sent as the request body */
  size_t body_len;
  const char* lookup_reference; /* the business reference the provider can
                          ** find this request's results by (an order
                          ** id), for a provider with a
                          ** reference_lookup_path; NULL: none. 1..200
                          ** printable characters */
  /* What the effect is worth, for the provider's offline limits
  ** (ob_offline_limit_t): amount in minor units (docs/decisions/0003,
  ** 1..2^53-1) of currency, three upper-case letters ("EUR"). Both or
  ** neither: amount 0 and currency NULL is an effect without an amount,
  ** never limited nor counted as stored. */
  int64_t amount;
  const char* currency;
} ob_effect_request_t;

/* An effect as handlers and operators see it. Pointers are owned by the
** engine: valid during the handler (ob_tx_effect) or the callback
** (ob_effect_list) only. Times are 0 when not set. */
typedef struct ob_effect_s {
  const char* key;
  const char* idempotency_key;
  const char* provider;
  const char* method;
  const char* path;
  const char* request;
  size_t request_len;
  ob_effect_state_t state;
  const char* reference;    /* provider's id of a confirmed effect, or NULL */
  const char* response;     /* the provider's last answer body, or NULL */
  size_t response_len;
  int http_status;          /* of that answer; 0: none */
  const char* reason;       /* failed: provider's reason; else last error */
  const char* message_id;   /* the message that claimed it */
  const char* consumer;
  int calls;                /* requests made */
  int lookups;              /* lookups made */
  int successes;            /* 2xx answers received */
  int attempts;             /* failed attempts counted by the retry policy */
  int64_t next_attempt_at_ms;
  int64_t parked_at_ms;     /* waiting for a person */
  int64_t created_at_ms;
  int64_t updated_at_ms;
  const char* park_cause;   /* why, when parked: "attempts", "no-fence",
                            ** "key-expired", "conflict", "replayed-error";
                            ** NULL otherwise */
  const char* lookup_reference;  /* the request's, or NULL */
  int64_t amount;           /* the request's amount and currency (minor */
  const char* currency;     /* units), or 0 and NULL */
} ob_effect_t;

/*
** Ask for the effect `key` (1..200 printable ASCII characters, unique across
** the database, e.g. "refund:order-42") inside a handler. Returns:
**   OB_DONE          the effect is CONFIRMED; *out (may be NULL) holds it
**                    (reference, response). Write the business rows.
**   OB_WAIT          it was claimed now, or is pending/unknown: return
**                    OB_WAIT from the handler.
**   OB_UNRECOVERABLE it FAILED (the provider's reason is recorded as the
**                    message's failure reason), it was claimed earlier with
**                    a different request, or it is parked for a person:
**                    return OB_UNRECOVERABLE from the handler.
**   < 0              OB_EINVAL (bad key or request), OB_ENOTFOUND (no such
**                    provider registered), OB_ESTATE (a second new claim in
**                    one handler run), storage errors.
**   OB_EOFFLINE      a new claim with an amount, refused because its
**                    provider is offline and the claim would pass one of
**                    the provider's offline limits for its currency
**                    (ob_offline_limit_t; ob_errmsg says which). Nothing is
**                    recorded: no effect row, no claim. Return it from the
**                    handler (a retry: the message is not consumed) or
**                    decide otherwise (ob_tx_fail). A claim found offline
**                    and within the limits is checked again, under a lock,
**                    in the transaction that records it, so processes
**                    sharing a database never pass a limit together;
**                    losing that race is the same refusal, a retry of the
**                    message. See docs/offline.md.
*/
OB_EXTERN int ob_tx_effect(ob_tx_t* tx, const char* key,
                           const ob_effect_request_t* req, ob_effect_t* out);

/*
** Offline limits: what a provider's effects may store while it is offline
** (docs/offline.md). A provider is offline from the first attempt (call or
** lookup) recorded for it that got no HTTP answer (not sent, timeout, lost
** reply) or whose credentials it refused (401, 403), until an attempt gets
** any other HTTP answer; it is online until its first failed attempt. That
** state is in the database, so every process on it, and a restart, agree.
** "Stored" counts the effects with an amount that are open (pending or
** unknown, parked ones included: their outcome is not known) per provider
** and currency, kept as running totals in the transactions that claim and
** settle them. While the provider is offline, a new claim of amount A in
** currency C is refused (OB_EOFFLINE) if A > max_amount, stored total + A
** > max_total, or stored count + 1 > max_count. An online claim is never
** limited (it is still counted while it is open). A field 0 is "no limit"
** on that figure.
*/
typedef struct ob_offline_limit_s {
  const char* currency;   /* three upper-case letters, "EUR" (copied) */
  int64_t max_amount;     /* one effect, minor units; 0: no limit */
  int64_t max_total;      /* the stored total, minor units; 0: no limit */
  int64_t max_count;      /* stored effects; 0: no limit */
  int64_t max_age_ms;     /* how long an effect may stay stored: kept in
                          ** the configuration, not enforced yet (expiry is
                          ** to come, docs/offline.md); 0: none */
} ob_offline_limit_t;

/* ob_provider_options_t.offline_unlisted: a currency without a limit. */
#define OB_OFFLINE_NO_LIMIT 0  /* accepted offline without a limit */
#define OB_OFFLINE_REFUSE 1    /* refused while the provider is offline */

/* A provider of effects. */
typedef struct ob_provider_options_s {
  const char* name;          /* required, e.g. "payments" (copied) */
  const char* base_url;      /* ob_provider_enable: https://host[:port][/p];
                             ** the request path is appended */
  int allow_http;            /* 1: accept http:// (tests, local simulators) */
  const char* ca_file;       /* PEM bundle; NULL: $AWS_CA_BUNDLE, else the
                             ** system bundle */
  const char* authorization; /* value of the Authorization header of every
                             ** request ("Bearer sk_..."), or NULL. A secret:
                             ** copied, wiped on close, never logged or
                             ** stored in the database */
  int idempotency_keys;      /* 1: the provider honours Idempotency-Key, a
                             ** call may be repeated with the same key: 1 */
  const char* lookup_path;   /* GET this path with the URL-encoded
                             ** idempotency key appended to look a key up
                             ** (200: the original result, 404: never
                             ** seen); NULL: no lookup */
  int64_t timeout_ms;        /* one call or lookup, connect included: 30000 */
  int max_in_flight;         /* concurrent calls: 4 */
  int64_t lease_ms;          /* an effect in hand is not taken by another
                             ** process for this long: 120000 */
  ob_retry_policy_t retry;   /* 5xx, 429, timeouts, lost replies: the
                             ** engine's defaults (3 retries, 1 s, x2) */
  ob_probe_options_t probe;  /* offline probing (ob_provider_enable):
                             ** 1000 .. 60000 */
  int64_t key_retention_ms;  /* how long the provider keeps an idempotency
                             ** key (and answers a repeat with the first
                             ** result): 24 h, the shortest common window
                             ** (Stripe 24 h; Adyen at least 31 days); 0:
                             ** forever. An effect that may have been sent
                             ** more than 7/8 of it ago is never called
                             ** again with that key, nor looked up by it:
                             ** it is parked for a person (park cause
                             ** "key-expired"). The age counts the wall
                             ** clock and the observed clock, the larger */
  const char* reference_lookup_path; /* GET this path with an effect's
                             ** URL-encoded lookup_reference in place of
                             ** "{reference}" (appended when there is none)
                             ** to find what the provider did for it, whatever
                             ** the key: 404, or 200 with an empty "data"
                             ** array: nothing; one entry (or a top-level
                             ** "id"): that result; more: a conflict for a
                             ** person. Stripe, which has no lookup by
                             ** idempotency key, searches its records by
                             ** metadata. Used once a key may have expired:
                             ** nothing found, and the call is made (the
                             ** provider never acted); found, and it is
                             ** confirmed; NULL: such effects are parked */
  const ob_offline_limit_t* offline_limits; /* per currency (copied); one
                             ** entry per currency, at most 32, else
                             ** OB_EINVAL; NULL: none */
  size_t noffline_limits;
  int offline_unlisted;      /* a currency not in offline_limits:
                             ** OB_OFFLINE_NO_LIMIT (0, the default) or
                             ** OB_OFFLINE_REFUSE */
} ob_provider_options_t;

/* Fill o with the defaults above (name and base_url NULL). Can't fail. */
OB_EXTERN void ob_provider_options_init(ob_provider_options_t* o);

/*
** Register a provider's capabilities (name, idempotency_keys, lookup_path,
** retry) without any transport: effects are then performed by
** ob_effects_perform. Returns OB_EINVAL, OB_EEXIST (name taken), OB_ENOMEM.
*/
OB_EXTERN int ob_provider_register(ob_engine_t* e,
                                   const ob_provider_options_t* o);

/*
** Register a provider and perform its effects over HTTPS while the engine
** is attached to a loop (ob_attach / ob_run): TLS 1.2+, certificate and
** hostname verified, http:// only with allow_http. Call before attaching.
** Returns 0, or OB_EINVAL with a specific reason in errbuf, OB_EEXIST,
** OB_ESTATE when attached, OB_ENOMEM.
*/
OB_EXTERN int ob_provider_enable(ob_engine_t* e, const ob_provider_options_t* o,
                                 char* errbuf, size_t errlen);

/* One call or lookup for a performer. Pointers valid during the callback. */
typedef struct ob_effect_call_s {
  const char* key;
  const char* idempotency_key;
  const char* provider;
  int lookup;             /* 0: make the call; 1: ask whether
                          ** idempotency_key was seen (GET lookup_path +
                          ** key); 2: ask for the results of the business
                          ** reference (GET lookup_path, the provider's
                          ** reference_lookup_path, + lookup_reference) */
  const char* lookup_path;
  const char* method;
  const char* path;
  const char* body;
  size_t body_len;
  const char* lookup_reference;  /* lookup 2: what to look for */
} ob_effect_call_t;

/* The provider's answer. body must stay valid until the performer is
** called again or ob_effects_perform returns. */
typedef struct ob_effect_reply_s {
  int status;             /* HTTP status, or < 0: no answer, an OB_E*
                          ** code: OB_ENET (refused, reset, closed before
                          ** the answer), OB_ETIMEDOUT, OB_ETLS, OB_EPROTO
                          ** (a malformed answer), OB_ECANCELED */
  int sent;               /* 0: the request certainly never reached the
                          ** provider (connection refused, TLS failure) */
  const char* body;
  size_t body_len;
  const char* detail;     /* why there was no answer; may be NULL */
  int replayed;           /* 1: the provider says this answer is one it saved
                          ** for the key and replays (Stripe's
                          ** Idempotent-Replayed: true); a replayed 5xx is
                          ** parked for a person at once, not retried */
} ob_effect_reply_t;

/* Performs one call synchronously and fills *reply. Return 0; a negative
** return stops ob_effects_perform with that code (the effect stays as it
** was). */
typedef int (*ob_effect_perform_cb)(void* arg, const ob_effect_call_t* call,
                                    ob_effect_reply_t* reply);

/*
** Drive up to max due effects through perform (embedding without a loop,
** tests with an in-process provider): for each, decide the action (call,
** lookup, or park), call perform, and record the answer; a confirmed or
** failed effect re-runs its waiting messages in the same transaction.
** *settled (may be NULL) receives the number of effects that reached an
** outcome. Returns 0 or a negative code.
*/
OB_EXTERN int ob_effects_perform(ob_engine_t* e, ob_effect_perform_cb perform,
                                 void* arg, size_t max, size_t* settled);

/* Visit effects (key order); state 0: all, else only that state; key not
** NULL: only that one. cb returns non-zero to stop. Returns the number
** visited or a negative code. */
OB_EXTERN int ob_effect_list(ob_engine_t* e, int state, const char* key,
                             int (*cb)(void* arg, const ob_effect_t* ef),
                             void* arg);

/*
** Reconcile: make pending and unknown effects due now with their retry
** budget reset and unparked (keys NULL / n 0: all of them), so the next
** performer round asks the provider (repeats the call with the same key,
** or looks the key up). Messages waiting in the failure store stay there
** until an outcome is recorded. Returns the number of effects or a
** negative code.
*/
OB_EXTERN int ob_effects_reconcile(ob_engine_t* e, const char* const* keys,
                                   size_t n);

/*
** A person's verdict on an effect the provider cannot settle (no
** idempotency keys, no lookup): state OB_EFFECT_CONFIRMED with the
** provider's reference, or OB_EFFECT_FAILED with a reason. Recorded in one
** transaction that also re-runs its waiting messages and moves its messages
** from the failure store back to the queue. Returns 0, OB_ENOTFOUND,
** OB_ESTATE (already confirmed or failed), OB_EINVAL.
*/
OB_EXTERN int ob_effect_resolve(ob_engine_t* e, const char* key, int state,
                                const char* reference_or_reason);

/* ---------------------------------------------------------------------------
** The outbox, seen from a sink (the SQS relay is one; tests use in-process
** sinks).
*/
typedef struct ob_event_s {
  const char* id;            /* UUIDv7, the stable id of the event */
  const char* causation_id;  /* id of the message that caused it */
  const char* event_type;
  const char* aggregate_id;
  const char* payload;       /* JSON text */
  size_t payload_len;
  int64_t created_at_ms;
  int attempt_count;         /* failed publication attempts so far */
  /* W3C trace context of the handling that emitted it, NULL if none
  ** (CloudEvents' distributed-tracing extension on the wire). */
  const char* traceparent;
  const char* tracestate;
  /* > 0: when the event was made the wall clock was this many ms behind
  ** the engine clock (an RTC reset, a clock set back), so created_at_ms is
  ** the engine clock's time, not the wall clock's; the CloudEvent carries
  ** it as the extension attribute "obwallbehindms". 0: the wall clock was
  ** right, as far as the engine can tell. */
  int64_t wall_behind_ms;
} ob_event_t;

/* Publish one event. Return 0 when it is accepted (it is then marked
** published), or a negative code to retry it later with backoff. */
typedef int (*ob_sink_cb)(void* arg, const ob_event_t* ev);

/*
** Hand up to max unpublished, due events to sink in (created_at, id) order;
** mark each accepted event published_at = now; for a rejected one, increment
** attempt_count, store last_error and set next_attempt_at by backoff.
** Publication is at-least-once: if the process dies after the sink accepted
** and before the mark commits, the event is handed over again.
** *published (may be NULL) receives the number accepted. Returns 0 or a
** negative storage error.
*/
OB_EXTERN int ob_outbox_drain(ob_engine_t* e, ob_sink_cb sink, void* arg,
                              size_t max, size_t* published);

/* One outbox row as an operator sees it (ob_outbox_list). Pointers are valid
** during the callback only. Times are 0 when not set. */
typedef struct ob_outbox_row_s {
  const char* id;
  const char* causation_id;
  const char* event_type;
  const char* aggregate_id;
  const char* payload;
  size_t payload_len;
  int64_t created_at_ms;
  int64_t published_at_ms;
  int64_t next_attempt_at_ms;
  int64_t parked_at_ms;
  int attempt_count;
  const char* last_error;    /* NULL if none */
} ob_outbox_row_t;

#define OB_OUTBOX_ALL 0
#define OB_OUTBOX_UNPUBLISHED 1
#define OB_OUTBOX_PARKED 2

/* Visit up to limit outbox rows matching filter (OB_OUTBOX_*), oldest first.
** cb returns non-zero to stop. Returns the number visited or a negative
** code. */
OB_EXTERN int ob_outbox_list(ob_engine_t* e, int filter, size_t limit,
                             int (*cb)(void* arg, const ob_outbox_row_t* r),
                             void* arg);

/* Make every parked outbox row publishable again (attempts reset), in one
** transaction. Returns the number of rows or a negative code. */
OB_EXTERN int ob_outbox_retry_parked(ob_engine_t* e);

/*
** A ready-made sink for end-to-end tests with no network: arg is another
** ob_engine_t*; each event is enqueued there as a message with id = event id,
** type = event type, body = payload, queue "default".
*/
OB_EXTERN int ob_sink_enqueue(void* other_engine, const ob_event_t* ev);

/* ---------------------------------------------------------------------------
** Operations: failure store, statistics, invariants, retention.
*/
typedef struct ob_failed_s {
  int64_t id;                /* failure-store id (for retry/remove) */
  const char* message_id;
  const char* queue;
  const char* type;
  const char* headers;
  const char* body;
  size_t body_len;
  const char* error_class;   /* "unrecoverable", "retries_exhausted", "no_handler" */
  const char* reason;
  int attempts;
  int64_t first_failed_at_ms;
  int64_t last_failed_at_ms;
  const char* source;        /* CloudEvents source of an event from SQS (its
                             ** identity is (source, message_id)); NULL for
                             ** a local message */
} ob_failed_t;

/* Visit failed messages (id order; only `type` if not NULL; only `id` if
** id > 0). cb returns non-zero to stop. Returns the number visited or a
** negative code. */
OB_EXTERN int ob_failed_list(ob_engine_t* e, int64_t id, const char* type,
                             int (*cb)(void* arg, const ob_failed_t* f),
                             void* arg);

/* Move failed message `id` back to its queue in one transaction, attempts
** reset to 0 (id 0: all of them). The dedup guard still applies. Returns
** the number moved, or OB_ENOTFOUND / a negative code. */
OB_EXTERN int ob_failed_retry(ob_engine_t* e, int64_t id);

/* Delete failed message `id` (0: all). Returns the number removed. */
OB_EXTERN int ob_failed_remove(ob_engine_t* e, int64_t id);

/*
** A selection of failed messages for a backlog. Every field that is zero
** (NULL, 0 or "") selects everything; the others combine with AND. Strings
** compare byte for byte (case matters); times are Unix milliseconds of the
** last failure, the half-open range [failed_after_ms, failed_before_ms).
** A negative time or limit is OB_EINVAL, never read as "no filter".
*/
typedef struct ob_failed_filter_s {
  const char* type;             /* exact message type */
  const char* error_class;      /* exact error class (ob_failed_t) */
  int64_t failed_after_ms;      /* last failure at or after this time */
  int64_t failed_before_ms;     /* last failure before this time */
  const char* reason_contains;  /* the reason holds these bytes */
  int limit;                    /* at most this many, lowest ids first */
} ob_failed_filter_t;

/* Visit the failed messages that filter selects (id order; NULL selects
** all), as ob_failed_list. Returns the number visited or a negative code. */
OB_EXTERN int ob_failed_list_filter(ob_engine_t* e,
                                    const ob_failed_filter_t* filter,
                                    int (*cb)(void* arg, const ob_failed_t* f),
                                    void* arg);

/* The number of failed messages filter selects (limit applied), by a count
** that reads no bodies. Returns it or a negative code. */
OB_EXTERN int ob_failed_count(ob_engine_t* e, const ob_failed_filter_t* filter);

/*
** Retry or remove the failed messages filter selects (NULL: all), as
** ob_failed_retry / ob_failed_remove do one, in transactions of at most
** `batch` rows each (0: 500), so a large backlog never holds the write lock
** for long and an interruption leaves each batch wholly done or not done.
** Only rows that were in the store when the call began are touched. After
** each committed batch progress (may be NULL) is called with the rows done
** so far and the total selected at the start; it returns non-zero to stop
** there. ^Returns the number retried/removed (0 if none matched), or a
** negative code; batches committed before an error stay committed.
*/
typedef int (*ob_failed_progress_fn)(void* arg, int done, int total);
OB_EXTERN int ob_failed_retry_filter(ob_engine_t* e,
                                     const ob_failed_filter_t* filter,
                                     int batch, ob_failed_progress_fn progress,
                                     void* arg);
OB_EXTERN int ob_failed_remove_filter(ob_engine_t* e,
                                      const ob_failed_filter_t* filter,
                                      int batch, ob_failed_progress_fn progress,
                                      void* arg);

typedef struct ob_stats_s {
  int64_t queue_ready;
  int64_t queue_delayed;
  int64_t queue_in_hand;      /* leased by a worker right now */
  int64_t failed;
  int64_t processed;
  int64_t outbox_unpublished;
  int64_t outbox_oldest_unpublished_age_ms;  /* 0 if none */
  int64_t outbox_published;
  int64_t outbox_parked;       /* gave up after the attempt limit */
  int64_t outbox_due;          /* unpublished, not parked, due now (incl.
                               ** a batch in flight) */
  int64_t last_publish_at_ms;  /* last successful publication; 0: never */
  int relay_online;            /* 1 online, 0 offline, -1 no relay has run */
  /* The fence (ob_tx_effect). fence_claims counts effect rows: one per
  ** claimed key. provider_2xx counts the provider's 2xx answers (a repeated
  ** call with the same idempotency key answered again counts again; those
  ** are provider_replays). */
  int64_t effects_pending;
  int64_t effects_unknown;     /* incl. parked */
  int64_t effects_parked;      /* unknown, waiting for a person */
  int64_t effects_confirmed;
  int64_t effects_failed;
  int64_t fence_claims;
  int64_t provider_2xx;
  int64_t provider_replays;
  /* Space (docs/field.md): bytes of the database's pages in use (free
  ** pages not counted; the WAL not included), the cap and reserve in force
  ** (0: no cap), and what new messages meet: 0 accepted, 1 only critical
  ** types, 2 none, 3 none and handling paused. */
  int64_t db_bytes;
  int64_t db_max_bytes;
  int64_t db_reserve_bytes;
  int space_level;
  /* Parked effects by why (park cause): the provider may have forgotten the
  ** key (key-expired), it holds another request under the key (conflict),
  ** it replays a saved error (replayed-error). Included in effects_parked. */
  int64_t effects_key_expired;
  int64_t effects_conflict;
  int64_t effects_replayed_error;
  /* Why the relay is not publishing, in words, as it last recorded: the
  ** configuration fault (credentials, TLS, a missing queue, a server that
  ** is not the SQS JSON API: "the server does not speak SQS's JSON
  ** protocol (HTTP 415 to AmazonSQS.SendMessageBatch)") or, offline, the
  ** transport failure; "" when none, and again once it publishes.
  ** Truncated to fit. */
  char relay_error[512];
  /* PostgreSQL only (0 on SQLite): the age of the oldest open transaction
  ** of any session on the database, which holds back the xmin horizon so
  ** that no dead row can be vacuumed (the known failure of SKIP LOCKED
  ** queues), and the dead tuples of oncebox's tables (partitions
  ** included) that autovacuum has yet to clean. */
  int64_t db_oldest_xact_age_ms;
  int64_t db_dead_tuples;
  int db_postgresql;           /* 1: the two above are measured */
  int db_cap_source;           /* OB_CAP_*: where db_max_bytes came from */
} ob_stats_t;

/* Fill *s from one read transaction: the engine's own tables only (the
** modules' figures: ob_module_figures). Called inside an ob_read's fn, it
** reads that transaction's snapshot, so the figures of several calls
** agree. Returns 0, OB_EINVAL when e or s is NULL, or a
** negative storage code (detail in ob_errmsg). */
OB_EXTERN int ob_stats(ob_engine_t* e, ob_stats_t* s);

/*
** PRAGMA integrity_check, then the engine's own invariants (no negative
** outbox attempt count; a provider reference confirmed for one effect key
** only; no failed effect with provider successes), then the checks added
** with ob_add_check, in the order they were added, all in one read
** transaction. Each violation is
** reported through cb (may be NULL) as one line of text, valid during the
** call only. Returns the number of violations (0 = all good), OB_EINVAL
** when e is NULL, or a negative code if a check could not run (detail in
** ob_errmsg): a check that cannot run is an error, never "ok".
*/
OB_EXTERN int ob_check(ob_engine_t* e,
                       void (*cb)(void* arg, const char* violation),
                       void* arg);

/*
** Rewrite the database file with pages of page_size bytes (0: the size a
** new file gets, 2048; else a power of two from 512 to 65536), in one
** VACUUM out of WAL and back: the step that gives an older file the page
** size of new ones (docs/decisions/0017-pages-and-wal-for-flash.md);
** ob_open never does it by itself. It needs the only connection to the
** file (stop every other process on it) and free disk space of about the
** file's size, and takes time in proportion to the file. A crash leaves
** the old file whole. Returns 0 (also when the size is already that),
** OB_EINVAL for a bad size, OB_ESTATE when attached or inside a
** transaction, OB_EBUSY when another connection has the file open
** (nothing changed), or a storage code (OB_ENOSPC: not enough room for
** the copy; nothing changed). Detail in ob_errmsg. *old_page_size (may
** be NULL) receives the size the file had, once it could be read.
*/
OB_EXTERN int ob_vacuum(ob_engine_t* e, int page_size, int* old_page_size);

/* Delete processed_message rows and published outbox rows older than the
** retention window, in bounded batches (one short transaction each).
** *deleted (may be NULL) receives the count. Returns 0 or a negative code. */
OB_EXTERN int ob_gc(ob_engine_t* e, int64_t* deleted);

/* ---------------------------------------------------------------------------
** The embedder's transactions outside handlers.
**
** The engine is single-threaded: ob_read and ob_write run on the calling
** thread, on the engine's one connection, so call them from the thread
** that drives the engine (with a loop attached: from that loop's thread,
** e.g. in one of its callbacks, never from another thread). fn runs
** ob_tx_exec on tx with the handlers' rules (one statement, parameters
** bound, no transaction control, ATTACH or PRAGMA). ob_tx_retry,
** ob_tx_fail and ob_tx_effect belong to handlers: on this tx they return
** OB_ESTATE. tx is valid during fn only.
*/

/* The callback of ob_read / ob_write: return 0 to commit (ob_write), any
** other value to roll back; that value is then ob_write's return. */
typedef int (*ob_tx_fn)(ob_tx_t* tx, void* arg);

/*
** Run fn in a read transaction (BEGIN, deferred): a consistent snapshot of
** the file. Statements that write are refused (OB_EINVAL), as is
** ob_tx_emit. Inside another ob_read's fn, fn runs in that transaction
** (a nested read joins its snapshot). Returns fn's value if non-zero, else
** 0; OB_ESTATE inside a handler or an ob_write (a transaction is open on
** the connection); OB_EINVAL when e or fn is NULL; a negative storage code
** when the transaction can't begin, or when a statement hit one fn
** ignored (detail in ob_errmsg).
*/
OB_EXTERN int ob_read(ob_engine_t* e, ob_tx_fn fn, void* arg);

/*
** Run fn in a write transaction (BEGIN IMMEDIATE, at the configured
** synchronous level like handling), committed when fn returns 0, rolled
** back otherwise (or when a statement hit a storage error fn ignored:
** that error is returned). fn may call ob_tx_emit: the events commit with
** its rows, and their causation_id is the write's own id, a UUIDv7 made
** for this call (every event of one ob_write shares it). Returns 0 once
** committed; fn's non-zero value (rolled back); OB_ESTATE inside a handler
** or another ob_read / ob_write; OB_EINVAL when e or fn is NULL; OB_ENOSPC
** while the size cap's reserve pauses handling (max_db_bytes: the last
** bytes stay for what gives space back); a negative storage code (OB_EBUSY,
** OB_ENOSPC, OB_EIO ...) when the transaction could not begin or commit:
** nothing applied (detail in ob_errmsg). After OB_EIO the engine replaces
** its connection, as after a failed handling commit.
*/
OB_EXTERN int ob_write(ob_engine_t* e, ob_tx_fn fn, void* arg);

/* ---------------------------------------------------------------------------
** Process counters: what this engine did since ob_open, in memory only.
** They reset when the process restarts, as every exporter's do
** (started_at_ms tells a scraper), and nothing is written to the database
** to keep them: a message costs no extra row or page for metrics.
** Outcomes are counted once their transaction committed (a batch rolled
** back counts nothing). docs/operations.md names each one.
*/

/* Where a handled message came from: ob_counters_t.handled's first index. */
typedef enum {
  OB_INPUT_QUEUE = 0,  /* the local queue (ob_enqueue, `oncebox enqueue`) */
  OB_INPUT_SQS = 1,    /* the SQS consumer (ob_consumer_enable) */
  OB_INPUT_COUNT = 2
} ob_input_t;

/* What became of it: ob_counters_t.handled's second index. A duplicate is
** acknowledged without running a handler: every consumer of its type
** already had its dedup record. */
typedef enum {
  OB_OUTCOME_DONE = 0,       /* handlers ran and committed */
  OB_OUTCOME_DUPLICATE = 1,  /* acked without running: already processed */
  OB_OUTCOME_RETRIED = 2,    /* rescheduled with backoff */
  OB_OUTCOME_FAILED = 3,     /* moved to the failure store (or, with
                             ** failures left to SQS, to its redrive) */
  OB_OUTCOME_WAITING = 4,    /* waits for a fenced effect (ob_tx_effect) */
  OB_OUTCOME_COUNT = 5
} ob_outcome_t;

/* Name of an outcome ("done", "duplicate", "retried", "failed",
** "waiting"), or "?" for another value. Static storage. */
OB_EXTERN const char* ob_outcome_name(int outcome);

typedef struct ob_counters_s {
  int64_t started_at_ms;      /* wall clock of ob_open */
  int64_t handled[OB_INPUT_COUNT][OB_OUTCOME_COUNT];
  int64_t batches;            /* handling transactions committed */
  int64_t write_errors;       /* handling transactions that could not begin
                              ** or commit (nothing of them applied) */
  int last_write_error;       /* the code of the latest such failure while
                              ** no handling transaction has committed since;
                              ** 0 once one has */
  int64_t write_failing_since_ms;  /* wall clock of the first such failure
                                   ** since the last commit; 0 with the code */
  int64_t last_handled_at_ms; /* wall clock of the last committed outcome */
  /* The relay (ob_relay_enable): requests to SQS by result. ok: every
  ** entry accepted; partial: some entries refused; failed: the request as
  ** a whole failed (unreachable, throttled, refused, credentials). */
  int relay_enabled;
  int64_t relay_requests_ok;
  int64_t relay_requests_partial;
  int64_t relay_requests_failed;
  int64_t relay_events_published;  /* outbox events SQS accepted */
  int64_t relay_events_parked;     /* gave up on after park_after refusals */
  int64_t relay_failing_since_ms;  /* wall clock of the first failed request
                                   ** since the last that went through; 0
                                   ** while requests go through */
  int64_t offline_refused;    /* new effect claims refused by a provider's
                              ** offline limits (OB_EOFFLINE) */
} ob_counters_t;

/* Copy the counters of e into *c. Safe from the loop thread, and from any
** thread when e is not attached. Returns 0, or OB_EINVAL when e or c is
** NULL. */
OB_EXTERN int ob_counters(const ob_engine_t* e, ob_counters_t* c);

/* ---------------------------------------------------------------------------
** Metrics and health over HTTP for a running engine (Prometheus's
** /metrics, Fluent Bit's /api/v1/health): a plain-HTTP listener on the
** engine's loop, opt-in, loopback by default. GET /metrics: the
** Prometheus text format 0.0.4 of `oncebox stats --prometheus` plus the
** process counters (ob_counters_t). GET /health: 200 and a JSON object
** while the engine is healthy, 503 and the same object with its reasons
** otherwise (docs/operations.md, "Health"). Anything else: 404 (405 for a
** method other than GET and HEAD, 400 for a request that is not HTTP/1.x,
** 431 past 8 KiB of head); one request per connection, answered and closed.
** The figures that need the database come from a snapshot read at most
** once per stats_refresh_ms, in one short read transaction on the loop,
** so a scraper polling every 100 ms costs no table scan per scrape.
*/
typedef struct ob_metrics_options_s {
  const char* listen;          /* "HOST:PORT" or "[IPv6]:PORT", numeric
                               ** addresses only; required */
  int allow_remote;            /* 1: a non-loopback address (0.0.0.0, a LAN
                               ** address) may be bound; 0 (the default):
                               ** refused with OB_EINVAL, since the figures
                               ** tell the shop's business to anyone who asks */
  int64_t stats_refresh_ms;    /* 5000; at least 100 */
  /* Health thresholds (0 turns a rule off). */
  int64_t relay_failing_ms;    /* the relay failing for longer: 300000 */
  int64_t write_error_ms;      /* a handling write failing and none
                               ** committed since, for longer: 0 (at once) */
  int effects_unknown_max;     /* more effects in state unknown: 0 */
  /* The count rules, over the last period_ms (Fluent Bit's HC_Period,
  ** HC_Errors_Count and HC_Retry_Failure_Count): unhealthy while more
  ** than failed_max messages were given up on in it (moved to the failure
  ** store, or outbox events parked), or more than retried_max handling
  ** attempts were rescheduled. Counted in memory from ob_metrics_enable
  ** on, to within a sixtieth of the period. A period of 0 turns both off,
  ** a negative maximum its own rule. */
  int64_t period_ms;           /* 60000 */
  int failed_max;              /* 5 */
  int retried_max;             /* 5 */
} ob_metrics_options_t;

/* Fill o with the defaults above (listen NULL). This function can't fail. */
OB_EXTERN void ob_metrics_options_init(ob_metrics_options_t* o);

/*
** Serve /metrics and /health on o->listen while e is attached to a loop
** (ob_attach / ob_run); the address is checked now and bound when the
** loop starts: attaching then fails with OB_ENET, the reason (address in
** use, not available, not permitted) logged at OB_LOG_ERROR. The listener never keeps an
** until-idle run alive. Call before attaching. Returns 0, OB_EINVAL with
** the reason in errbuf (a malformed address, a non-loopback one without
** allow_remote, a bad threshold), OB_EEXIST if already enabled, OB_ESTATE
** when attached, OB_ENOMEM.
*/
OB_EXTERN int ob_metrics_enable(ob_engine_t* e, const ob_metrics_options_t* o,
                                char* errbuf, size_t errlen);

/* ---------------------------------------------------------------------------
** Modules: a business on the public API (docs/decisions/0024-module-contract.md).
**
** A module is what an embedder writes: its tables through ob_migrate, its
** handler through ob_register, its SQL through ob_tx_exec, and, through the
** two hooks below, its invariants in ob_check and its figures in the
** statistics (`oncebox stats`, /metrics). oncebox's own modules (the
** folder modules/) use nothing else.
*/

/* Which SQL the database speaks, for a module that ships its schema in
** both: OB_DIALECT_SQLITE (a file) or OB_DIALECT_POSTGRESQL; 0 when e is
** NULL. */
#define OB_DIALECT_SQLITE 1
#define OB_DIALECT_POSTGRESQL 2
OB_EXTERN int ob_dialect(const ob_engine_t* e);

/*
** Dialects built apart. SQLite is part of the library; PostgreSQL (the
** head office's) is a dialect of its own, so that a terminal's library
** links no libpq (docs/decisions/0025-dialect-plugin.md). ob_open finds it
** by itself: a db_path that is a PostgreSQL connection string loads the
** plugin postgresql.so from the library's plugin folder (Debian: package
** oncebox-postgresql, /usr/lib/<triplet>/oncebox/; the environment
** variable ONCEBOX_DIALECT_DIR names another folder, ignored in a setuid
** process). Without it ob_open returns OB_ENOTSUP naming the package to
** install, and opens nothing; a plugin built for another version of
** oncebox, or writable by others than its owner, is refused the same way.
**
** A program linked statically registers the dialect's archive instead, as
** SQLite registers a VFS: ob_postgresql_register() (oncebox_postgresql.h,
** liboncebox-postgresql.a, which calls this function with its entry).
** Registering is idempotent and thread-safe, and done before ob_open.
** Returns 0, or OB_ENOTSUP when entry refuses this library or this library
** refuses it (another version, another ABI), OB_EINVAL for a NULL entry;
** errbuf (may be NULL) says why.
*/
typedef struct ob_dialect_host_s ob_dialect_host_t;
typedef struct ob_dialect_s ob_dialect_t;
typedef const ob_dialect_t* (*ob_dialect_entry_fn)(
    const ob_dialect_host_t* host);
OB_EXTERN int ob_dialect_register(ob_dialect_entry_fn entry, char* errbuf,
                                  size_t errlen);

/*
** Apply the steps of an embedder's or a module's schema to an open engine,
** with the rules of ob_options_t.migrations (what a step may do, versions
** in order from 1, each recorded in schema_migration and never run twice),
** in one write transaction of its own: what a file lacks is applied, all
** or nothing. Returns 0 (also when nothing was missing); OB_EVERSION when
** the file holds a newer version of a name than steps gives (nothing
** changed); OB_EINVAL for a malformed list or a failing step (errmsg names
** it; nothing changed); OB_ESTATE inside a transaction; or a storage code.
** The strings are read during the call only.
*/
OB_EXTERN int ob_migrate(ob_engine_t* e, const ob_migration_t* steps,
                         size_t nsteps);

/* What a check reports: one line of text per violation (valid during the
** call only). */
typedef void (*ob_violation_cb)(void* report_arg, const char* violation);

/*
** A module's invariants, run by ob_check inside its read transaction
** after the engine's own: read with ob_tx_exec on tx (writes are refused),
** report each violation through report, and return how many there were,
** or a negative code when the check could not run (ob_check then fails
** with it: a check that cannot run is never "ok").
*/
typedef int (*ob_check_fn)(ob_tx_t* tx, ob_violation_cb report,
                           void* report_arg, void* arg);

/* Mark outbox events of event_type as priority: a relay enabled with
** priority_types NULL (the default) publishes their rows first, as a
** terminal back online wants its money out first (ob_relay_options_t). A
** module marks its money events when it is registered, before the relay is
** enabled. The name is copied. Returns 0 (also if already marked),
** OB_EINVAL for a NULL, empty or longer than 128 bytes name, OB_ENOMEM past
** OB_MAX_HOOKS names or when out of memory. */
OB_EXTERN int ob_mark_priority_event(ob_engine_t* e, const char* event_type);

/* For an ob_check_fn: run the read statements sqls[0..n) on tx, each row
** one violation whose column 0 (text) is reported through report. Returns
** the number of violations, or the first statement's negative code. */
OB_EXTERN int ob_tx_check_sql(ob_tx_t* tx, const char* const* sqls, size_t n,
                              ob_violation_cb report, void* report_arg);

/* 1 if the database has a table of that name (PostgreSQL: in the current
** schema), 0 if not, OB_EINVAL for a NULL argument, or a storage code: for
** a module that reads a database it may not have migrated. */
OB_EXTERN int ob_tx_has_table(ob_tx_t* tx, const char* name);

/* Add fn (with arg) to the checks ob_check runs, under name (a static
** string, not copied; one check per name). Returns 0; OB_EEXIST if name is
** taken (nothing changes); OB_EINVAL for a NULL argument; OB_ENOMEM past
** OB_MAX_HOOKS hooks or when out of memory. */
#define OB_MAX_HOOKS 8
OB_EXTERN int ob_add_check(ob_engine_t* e, const char* name, ob_check_fn fn,
                           void* arg);

/* One figure of a module's statistics. name is its Prometheus name without
** the oncebox_ prefix ([a-z_], "orders" is oncebox_orders), help one
** sentence; both static strings. alarm: a value above 0 means an invariant
** broke (`oncebox stats` then prints help as an alert). */
typedef struct ob_figure_s {
  const char* name;
  const char* help;
  int64_t value;
  int alarm;
} ob_figure_t;

/* A module's figures, read with ob_tx_exec on tx (a read transaction):
** write at most cap of them into out and return how many, or a negative
** code. */
typedef int (*ob_stats_fn)(ob_tx_t* tx, ob_figure_t* out, size_t cap,
                           void* arg);

/* Add fn (with arg) to the figures of ob_module_figures under name (a
** static string, not copied). Returns as ob_add_check does. */
OB_EXTERN int ob_add_stats(ob_engine_t* e, const char* name, ob_stats_fn fn,
                           void* arg);

/* Every registered module's figures, in registration order, read on tx (an
** ob_read's: so they agree with ob_stats read in the same fn): at most cap
** into out. Returns how many, OB_EINVAL for a NULL tx or out, OB_ESTATE
** when tx is not a read transaction, or the first negative code a module
** returned. */
#define OB_MAX_FIGURES 32
OB_EXTERN int ob_module_figures(ob_tx_t* tx, ob_figure_t* out, size_t cap);

/* ---------------------------------------------------------------------------
** Reading and writing message bodies: strict JSON (decision 0006), the
** rules oncebox's own modules judge their messages by.
*/

/*
** Find the members names[0..n) (ASCII, up to 63 bytes, each listed once)
** of the JSON object body[0..len). The whole body is judged first: valid
** UTF-8 JSON, nesting at most 64 deep, no raw control characters, no
** unpaired surrogates (I-JSON, RFC 7493). vals[i] receives where names[i]'s
** value starts in body, or NULL when absent; unknown members are skipped.
** Returns 0; or -1 and a reason (NUL-terminated, truncated to reason_len;
** reason may be NULL): "body is not valid JSON", "body is not a JSON
** object", "duplicate field NAME". Never allocates.
*/
OB_EXTERN int ob_json_fields(const char* body, size_t len,
                             const char* const* names, size_t n,
                             const char** vals, char* reason,
                             size_t reason_len);

/* Decode the JSON string value at v (a value ob_json_fields found) into buf
** (cap bytes), NUL-terminated. Returns its length; -1 when v is not a
** string; cap or more when it does not fit. A \u escape of a non-ASCII
** character decodes to the byte 0xFF (never matching ASCII text) and
** \u0000 to a NUL counted in the length. */
OB_EXTERN long ob_json_string(const char* v, char* buf, size_t cap);

/* Judge an amount in minor units from the exact text of the value at v,
** never through a double (decision 0003): any JSON number with an integer
** value (1e3 and 1000.0 are 1000) from 1 to 2^53 - 1. Returns NULL and sets
** *out; or a static reason and leaves *out alone: "amountInMinorUnits must
** be an integer" (also a non-number), "... must be > 0", "... overflows
** int64", "... exceeds 9007199254740991". */
OB_EXTERN const char* ob_json_amount(const char* v, int64_t* out);

/* Write s[0..len) as a quoted JSON string (quotes, backslashes and control
** characters escaped) into buf (cap bytes), NUL-terminated when it fits.
** Returns the length the quoted text needs without the NUL: call with cap 0
** to size a buffer. */
OB_EXTERN size_t ob_json_quote(char* buf, size_t cap, const char* s,
                               size_t len);

/* ---------------------------------------------------------------------------
** Utilities.
*/

/* 1 if s is a canonical 8-4-4-4-12 hex UUID (either case), else 0. */
OB_EXTERN int ob_uuid_valid(const char* s);

#ifdef __cplusplus
}
#endif
#endif /* ONCEBOX_H */
