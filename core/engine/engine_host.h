/* SPDX-License-Identifier: Apache-2.0 */
/*
** oncebox internal: what the code that drives an engine on a loop
** (platform/loop, the relay, the SQS consumer, the effects executors) may
** know of it. Not API.
**
** This is the whole surface between core and those drivers: struct
** ob_engine_s stays opaque to them, and they reach the database only
** through the verbs declared here and in core/relay/relay_tx.h,
** core/consumer/consumer_tx.h and core/fence/fence.h, each of which runs
** its own short transaction through storage/. core/engine/engine_int.h
** (the struct itself) is for core only.
**
** Contents:
**   - time, ids, state, logging and the engine's last error;
**   - components: the loop-driven parts registered before ob_attach;
**   - the driver's hooks (wake, stop, close while attached);
**   - the handling verbs a driver calls besides the public ob_run_once.
*/
#ifndef OB_CORE_ENGINE_HOST_H
#define OB_CORE_ENGINE_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "oncebox.h"
#include "core/util/recent.h"

struct uv_loop_s;

/* ---- open --------------------------------------------------------------- */

/* ob_open's contract, but opts->clock must be set: the public ob_open
** (platform/posix/open.c) supplies ob_system_clock() when it is NULL, so
** that core never reads a clock of its own. */
int ob__engine_open(ob_engine_t** out, const ob_options_t* opts,
                    char* errbuf, size_t errlen);

/* The same, with the size in bytes of the filesystem that holds db_path as
** platform measured it (statvfs; ob__space_fs_bytes), for the default cap
** when opts->max_db_bytes is 0 (docs/decisions/0021-default-cap.md).
** fs_bytes <= 0 (unknown): no default, as ob__engine_open. */
int ob__engine_open_fs(ob_engine_t** out, const ob_options_t* opts,
                       int64_t fs_bytes, char* errbuf, size_t errlen);

/* ---- time, ids, state, logs --------------------------------------------- */

/* The engine's clock (never NULL) and its wall time in ms. */
const ob_clock_t* ob__engine_clock(const ob_engine_t* e);
int64_t ob__engine_now(const ob_engine_t* e);
/* A fresh UUIDv7 (claim tokens of a relay). This function can't fail. */
void ob__engine_new_id(ob_engine_t* e, char out[OB_UUID_BUFLEN]);
/* 1 if this engine already said that a configured proxy is not used
** (and from now on); 0 the first time. */
int ob__engine_proxy_noted(ob_engine_t* e);
/* The database path given to ob_open. */
const char* ob__engine_db_path(const ob_engine_t* e);
/* Count give-ups and retries over the last period_ms from now on (health's
** count rules); a second call starts again with the new period. */
void ob__engine_recent_enable(ob_engine_t* e, int64_t period_ms);
/* Count n of kind (OB__RECENT_*) now; nothing until enabled. */
void ob__engine_recent_add(ob_engine_t* e, int kind, int64_t n);
/* How many of kind in the period ending now; 0 until enabled. */
int64_t ob__engine_recent_sum(const ob_engine_t* e, int kind);
/* 1 once ob_stop was called (or a signal arrived) and until ob_attach. */
int ob__engine_stopping(const ob_engine_t* e);
/* 1 while a handler's transaction is open: no driver may start another. */
int ob__engine_in_tx(const ob_engine_t* e);
/* Record code and a formatted detail as the engine's last error (what
** ob_errmsg returns). Returns code. */
int ob__engine_seterr(ob_engine_t* e, int code, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Longest reason or detail kept with a message, an effect or an event. */
#define OB__REASON_LEN 512

/* snprintf that truncates silently on purpose (reasons and messages are
** bounded by design). */
void ob__fmt(char* buf, size_t n, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- logs ----
** Records (ob_log_record_t) go to opts.log_record and their text to
** opts.log, through the repeat limiter (core/util/log_limit.h). */

/* 1 if a record at level would be delivered: test it before computing
** what only a record needs (a duration, a formatted field), so a level
** that filters the record costs nothing more. */
int ob__log_on(const ob_engine_t* e, ob_log_level_t level);

/* A record's fields, everything but level, component and event unset. */
#define OB__LOG_RECORD(lvl, comp, ev)                                   \
  ((ob_log_record_t){.level = (lvl), .component = (comp), .event = (ev), \
                     .duration_ms = -1})

/* Deliver *r with msg formatted from fmt (r->msg is set to it during the
** call). component and event must be static strings; a NULL event is
** "log". Nothing is formatted when the level is filtered out or the
** limiter drops the record. */
void ob__logr(ob_engine_t* e, ob_log_record_t* r, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A record with no event name of its own ("log"), from the component the
** calling file names in OB__LOG_COMPONENT (default "engine"): the many
** plain lines that predate records. */
void ob__log_text(ob_engine_t* e, ob_log_level_t level, const char* component,
                  const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));

#ifndef OB__LOG_COMPONENT
#define OB__LOG_COMPONENT "engine"
#endif
/* Expanded where it is used: a file that #undefs and #defines
** OB__LOG_COMPONENT after its includes logs as that component. */
#define ob__log(e, level, ...) \
  ob__log_text((e), (level), OB__LOG_COMPONENT, __VA_ARGS__)

/* Deliver the summaries of the limiter's open windows (ob_close). */
void ob__log_flush(ob_engine_t* e);

/* The engine's process counters, for the drivers that count their own
** part (the relay's requests). Never NULL. */
ob_counters_t* ob__engine_counters(ob_engine_t* e);

/* ---- components ---------------------------------------------------------- */

/*
** A loop-driven part of the engine besides handling (the outbox relay, the
** SQS consumer, an effects executor; each is a platform/loop/worker.h
** worker). Registered by its *_enable function before the engine is
** attached; started by ob_attach, closed by ob_detach, freed by ob_close.
** Core never calls these: platform/loop/runner.c does.
*/
typedef struct ob__component_s {
  const char* name;
  void* self;
  /* Start on loop. < 0 (a public code): attaching fails with it. */
  int (*start)(void* self, ob_engine_t* e, struct uv_loop_s* loop);
  /* New work may exist (a handling batch committed outbox rows). */
  void (*kick)(void* self);
  /* The host says the network changed (is back): retry connections now. */
  void (*network)(void* self);
  /* For --until-idle: OB__IDLE_BUSY (0) while it has work it can do,
  ** OB__IDLE_DONE when it has none, OB__IDLE_BLOCKED when it has work that
  ** waits for a peer it cannot reach (offline, credentials refused). */
  int (*idle)(void* self);
  /* Stop and close its handles; done(arg) runs exactly once, from the loop,
  ** when everything is closed. Work in flight ends safely (a relay releases
  ** its claims, a consumer finishes or abandons the message in hand). */
  void (*close)(void* self, void (*done)(void* arg), void* arg);
  /* Free everything (after close, or when never started). */
  void (*destroy)(void* self);
} ob__component_t;

#define OB__MAX_COMPONENTS 8

enum { OB__IDLE_BUSY = 0, OB__IDLE_DONE = 1, OB__IDLE_BLOCKED = 2 };

/* Register c (copied). OB_EEXIST if one of that name exists, OB_ESTATE when
** attached, OB_ENOMEM when OB__MAX_COMPONENTS are registered. */
int ob__engine_add_component(ob_engine_t* e, const ob__component_t* c);
/* 1 if a component of that name is registered. */
int ob__engine_has_component(const ob_engine_t* e, const char* name);
/* The registered components, in registration order (for the runner). */
size_t ob__engine_ncomponents(const ob_engine_t* e);
const ob__component_t* ob__engine_component(const ob_engine_t* e, size_t i);
/* Tell every component but except (NULL: all) there may be new work. */
void ob__engine_kick_components(ob_engine_t* e, const void* except);

/* ---- the loop driver's hooks ---------------------------------------------- */

typedef struct ob__engine_hooks_s {
  void* runner;                     /* the driver; NULL: detached */
  /* After a commit that queued work, to wake the runner at once. */
  void (*wake)(ob_engine_t* e);
  /* From ob_stop; must be async-signal-safe (it may run from a signal
  ** handler). */
  void (*on_stop)(ob_engine_t* e);
  /* From ob_close while attached: close everything, synchronously. */
  void (*close_sync)(ob_engine_t* e);
} ob__engine_hooks_t;

/* Install (h != NULL) or clear (NULL) the driver's hooks. Installing also
** clears the stop flag. */
void ob__engine_set_hooks(ob_engine_t* e, const ob__engine_hooks_t* h);
/* The installed driver, NULL when detached. */
void* ob__engine_runner(const ob_engine_t* e);
/* Why the last ob_run ended, kept across the driver's free. */
void ob__engine_set_run_result(ob_engine_t* e, int rc);
int ob__engine_run_result(const ob_engine_t* e);

/* ---- handling, for drivers ------------------------------------------------ */

/* The options the engine was opened with (poll and gc intervals, batch). */
const ob_options_t* ob__engine_opts(const ob_engine_t* e);
/* A number that changes when another connection commits to the database
** (another process's enqueue), never for this engine's own commits.
** Returns 0 and *v, or < 0. */
int ob__engine_data_version(ob_engine_t* e, int64_t* v);
/* Like ob_next_due, but ignoring messages that wait for an effect:
** OB_ENOTFOUND when only such messages (or none) are queued. */
int ob__engine_next_due_unwaited(ob_engine_t* e, int64_t* at_ms);

/*
** Handle one message that has no local queue row (from SQS), in its own
** transaction, exactly like a queue row. After a successful return:
** res->handled or res->duplicates: acknowledge it (delete it at the source);
** res->failed: it is in the failure store, acknowledge it; res->retried:
** redeliver it after *retry_delay ms; res->waiting: it became a local queue
** row (waiting for an effect, or behind an earlier message of its FIFO
** group that does), acknowledge it; *left (only with
** m->failures_to_source): it failed for good and nothing was committed,
** leave it to its transport unchanged. A negative return means nothing was
** committed: leave the message to its transport.
*/
typedef struct ob__external_msg_s {
  const char* queue;      /* the local queue name it is handled as */
  const char* message_id; /* the producer's id */
  const char* type;
  const char* headers;    /* JSON object or NULL */
  const char* body;       /* NUL-terminated */
  size_t body_len;
  int attempts;           /* earlier deliveries */
  int64_t created_at;     /* ms */
  const char* source;     /* its CloudEvents source: the identity is
                          ** (consumer, source, message_id) */
  const char* group_key;  /* FIFO: its group (queue URL and MessageGroupId),
                          ** NULL otherwise */
  int failures_to_source; /* don't store a failure for good: *left */
} ob__external_msg_t;

int ob__engine_handle_external(ob_engine_t* e, const ob__external_msg_t* m,
                               ob_batch_result_t* res, int64_t* retry_delay,
                               int* left);

#endif
