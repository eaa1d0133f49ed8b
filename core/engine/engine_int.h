/* SPDX-License-Identifier: Apache-2.0 */
/* The engine object, shared by core/engine, core/fence, core/relay,
** core/consumer and the built-in modules. Not API, and not for platform/:
** the loop drivers see the engine only through core/engine/engine_host.h. */
#ifndef OB_CORE_ENGINE_INT_H
#define OB_CORE_ENGINE_INT_H

#include <signal.h>

#include "core/engine/engine_host.h"
#include "core/util/clock_jump.h"
#include "core/util/log_limit.h"
#include "core/util/recent.h"
#include "core/util/uuid.h"
#include "oncebox.h"
#include "core/util/trace_context.h"
#include "storage/store.h"

typedef struct ob__handler_s {
  char* type;
  char* consumer;
  ob_handler_cb fn;
  void* arg;
} ob__handler_t;

typedef struct ob__queue_policy_s {
  char* queue;
  ob_retry_policy_t policy;
} ob__queue_policy_t;

/* Currencies with offline limits, per provider. */
#define OB__MAX_OFFLINE_LIMITS 32

/* A registered effect provider: what the fence needs to decide. */
typedef struct ob__provider_s {
  char* name;
  char* lookup_path;       /* NULL: no lookup */
  int idempotency_keys;
  int64_t lease_ms;
  int64_t key_retention_ms;  /* 0: forever */
  char* reference_lookup_path;  /* NULL: none */
  ob_retry_policy_t retry;
  ob_offline_limit_t* offline_limits;  /* copies; currency points into
                                       ** offline_currency */
  char offline_currency[OB__MAX_OFFLINE_LIMITS][4];
  size_t noffline_limits;
  int offline_unlisted;    /* OB_OFFLINE_NO_LIMIT or OB_OFFLINE_REFUSE */
} ob__provider_t;

#define OB__MAX_PROVIDERS 8
/* Keys claimed by this process and not yet handed to a performer: such an
** effect certainly has not been sent. Bounded; a key that falls out is
** treated as "maybe sent", the safe side. */
#define OB__MAX_FRESH 1024

/* The engine clock (core/engine/engine_clock.c). */
typedef struct ob__eclock_s {
  int64_t base;        /* its value at mono_base */
  int64_t mono_base;   /* clock->monotonic_ms when base was taken */
  int64_t behind_ms;   /* how far the wall clock was behind at the last read */
} ob__eclock_t;

/* The fence's hook on the engine (core/fence/provider.c installs it; see
** "the fence, engine side" below). */
struct ob__fence_hook_s;

struct ob_engine_s {
  ob_options_t opts;
  char* db_path;
  ob__db_t db;
  ob__handler_t* handlers;
  size_t nhandlers;
  ob__queue_policy_t* policies;
  size_t npolicies;
  ob__uuid7_gen_t idgen;
  /* Set from a signal handler or ob_stop(): stop claiming new messages. */
  volatile sig_atomic_t stopping;
  /* The loop driver's hooks (platform/loop; all NULL when detached). */
  ob__engine_hooks_t hooks;
  /* The observed clock (core/engine/observed.c). */
  int64_t observed_base;        /* its value at open */
  int64_t observed_mono_base;   /* clock->monotonic_ms at open */
  int64_t observed_wall_base;   /* the wall clock at open */
  int64_t observed_skew_seen;   /* wall - monotonic progress last warned */
  ob__eclock_t eclock;          /* the engine clock (engine_clock.c) */
  /* Persisted deadlines against jumps (core/engine/deadlines.c). */
  ob__clock_mark_t clock_mark;  /* the engine clock at the last check */
  ob__clock_mark_t wall_mark;   /* the wall clock at the last check */
  int64_t jump_pending;         /* measured, not yet applied (ms, signed) */
  int probe_pending;            /* rows may be ahead of the clock */
  /* Why the last ob_run ended (0: clean stop). */
  int run_result;
  ob__component_t components[OB__MAX_COMPONENTS];
  size_t ncomponents;
  ob__provider_t providers[OB__MAX_PROVIDERS];
  size_t nproviders;
  char* fresh[OB__MAX_FRESH];
  size_t nfresh;            /* entries, committed ones first */
  size_t fresh_committed;   /* entries whose claim has committed */
  /* NULL until the fence is first used on this engine (a provider
  ** registered, or ob_tx_effect in a handler). */
  const struct ob__fence_hook_s* fence;
  /* What built-in modules registered besides handlers (core/engine/modules.c);
  ** NULL until the first one. */
  struct ob__modules_s* modules;
  /* The disk-full policy (core/engine/space.c). */
  char* critical[OB_MAX_CRITICAL_TYPES];
  size_t ncritical;
  int space_pressure;       /* a refusal or OB_ENOSPC since the last heal
                            ** that brought the level back to OK */
  int64_t last_heal_ms;     /* observed time of the last heal */
  int cap_source;           /* OB_CAP_*: where opts.max_db_bytes came from */
  int proxy_noted;          /* the proxy note was logged */
  int dedup_legacy;         /* dedup records of schema 9 or earlier are
                            ** left (storage/processed.c): claims look for
                            ** them too */
  /* ob__handle_external with failures left to the transport: set for that
  ** call; left_to_source says a failure was not stored. */
  int leave_failures;
  int left_to_source;
  ob__log_limit_t log_limit;  /* repeated identical errors (ob__logr) */
  /* Process counters (core/engine/counters.c): memory only. */
  ob_counters_t counters;
  /* Give-ups and retries of the last period, for health; counted once
  ** ob__engine_recent_enable set a period (the metrics listener). */
  int recent_on;
  ob__recent_t recent;
};

/* The time of windows and limits (the log repeat limiter, health's count
** rules; engine_clock.c): the clock's monotonic_ms when it has one, so a wall clock set
** back or forward does not hold a window open or empty it; else now_ms. */
int64_t ob__engine_steady_ms(const ob_engine_t* e);

/* Count a committed batch's outcomes (input: OB_INPUT_*). */
void ob__counters_batch(ob_engine_t* e, int input, const ob_batch_result_t* r);
/* Count a handling transaction that could not begin or commit. */
void ob__counters_write_error(ob_engine_t* e, int rc);

#define OB__EFFECT_KEY_MAX 200

/* What ob_tx_effect left for the engine to do after the handler. */
enum {
  OB__TX_EFFECT_NONE = 0,
  OB__TX_EFFECT_CLAIM,   /* claim effect_key (a new pending effect) and wait */
  OB__TX_EFFECT_WAIT,    /* wait for effect_key, already open */
  OB__TX_EFFECT_PARKED   /* effect_key needs a person: failure store */
};

struct ob__effect_row_s;

struct ob_tx_s {
  ob_engine_t* e;
  const ob_message_t* msg;
  int verdict;            /* OB_DONE, OB_RETRY, OB_UNRECOVERABLE */
  int forced;             /* retry ignoring the budget */
  int64_t retry_delay_ms; /* < 0: policy decides */
  int fatal;              /* a storage error the handler must not swallow */
  int64_t now;
  char reason[OB__REASON_LEN];
  const char* consumer;   /* the handler's consumer name */
  /* The fence (core/fence/effect_tx.c). */
  int effect_action;      /* OB__TX_EFFECT_* */
  char effect_key[OB__EFFECT_KEY_MAX + 1];
  ob_effect_request_t claim;  /* malloc'd copies while effect_action is CLAIM */
  int claim_offline;      /* ob_tx_effect found the claim's provider offline
                          ** (and the claim within its limits) */
  /* The traceparent the events this handler emits carry: the message's
  ** trace id, a new parent id (this handling), made at the first emit. */
  char trace_child[OB__TRACEPARENT_LEN + 1];
  struct ob__effect_row_s* effect_rows;  /* what ob_tx_effect handed out */
  size_t neffect_rows;
  /* An embedder's transaction (ob_read / ob_write): msg is NULL. */
  int kind;               /* OB__TX_HANDLER, OB__TX_READ, OB__TX_WRITE */
  char write_id[OB_UUID_BUFLEN];  /* ob_write: its events' causation_id */
};

#define OB__TX_HANDLER 0
#define OB__TX_READ 1
#define OB__TX_WRITE 2

/* A zeroed embedder's tx of kind (OB__TX_READ, OB__TX_WRITE) on e, its now
** the engine clock's (tx.c; modules.c runs the checks on one). */
void ob__tx_init_embedder(ob_tx_t* tx, ob_engine_t* e, int kind);

/* The engine clock (engine_clock.c): start it at open from max(wall, the
** value recorded in the database); read it (it never goes back, and marks
** its value for recording at the next write commit); how far the wall clock
** is behind it (0 within OB__CLOCK_JUMP_MIN_MS); a clock mark of it for
** deadlines.c's jump measure. */
void ob__eclock_open(ob_engine_t* e);
int64_t ob__eclock_read(const ob_engine_t* e);
int64_t ob__eclock_wall_behind(const ob_engine_t* e);
void ob__eclock_mark(const ob_engine_t* e, ob__clock_mark_t* m);

/* Every time the engine writes or judges a persisted time by. */
static inline int64_t ob__now(const ob_engine_t* e) {
  return ob__eclock_read(e);
}

/* Storage errors after which the transaction cannot go on. */
static inline int ob__is_fatal(int rc) {
  return rc == OB_ENOSPC || rc == OB_EIO || rc == OB_ECORRUPT ||
         rc == OB_ENOMEM || rc == OB_EBUSY;
}

/*
** Handle one message that has no local queue row (from SQS), in its own
** transaction, exactly like a queue row: r->rowid must be 0 and
** r->attempts the number of earlier deliveries. After a successful return:
** res->handled or res->duplicates: acknowledge it (delete it at the source);
** res->failed: it is in the failure store, acknowledge it; res->retried:
** redeliver it after *retry_delay ms. A negative return means nothing was
** committed: leave the message to its transport.
*/
int ob__handle_external(ob_engine_t* e, const ob__queue_row_t* r,
                        int leave_failures, ob_batch_result_t* res,
                        int64_t* retry_delay, int* left);

/* One message inside the caller's open transaction (a savepoint of its own):
** run its consumers, then ack, reschedule, wait for an effect, or move it to
** the failure store. Returns < 0 when the whole transaction must abort. */
int ob__process_row(ob_engine_t* e, const ob__queue_row_t* r, int64_t now,
                    ob_batch_result_t* res, int64_t* retry_delay);

/* Commit / roll back a write transaction that may have claimed effects
** (commit.c): the fence's hook keeps its fresh claims in step with what is
** durable, and a failure with OB_EIO or OB_ENOSPC recovers the connection
** before the next transaction. Commit returns 0 or the failure. */
int ob__engine_commit(ob_engine_t* e);
void ob__engine_rollback(ob_engine_t* e);

/* ---- the disk-full policy (core/engine/space.c) ---------------------------- */

/* At open, before the database: the cap in force and where it came from
** (e->cap_source; docs/decisions/0021-default-cap.md): the options' when
** set, none when they say OB_NO_DB_CAP, else the default for a filesystem
** of fs_bytes (none when <= 0). This function can't fail. */
void ob__space_open(ob_engine_t* e, int64_t fs_bytes);
/* Set db's WAL checkpoint interval and size limit from the options, held
** to the cap's WAL room (at open, and on a connection reopened after an
** I/O error). 0, or < 0 from storage. */
int ob__space_wal_policy(const ob_engine_t* e, ob__db_t* db);
/* The reserve in force (0 without a cap). */
int64_t ob__space_reserve_of(const ob_engine_t* e);
/* 1 if type was marked with ob_mark_critical. */
int ob__space_is_critical(const ob_engine_t* e, const char* type);
/* May a new message of type, about bytes long, enter? 0, or OB_ENOSPC with
** the reason in errmsg. Outside a transaction it first gives space back
** once when refused. Not for a handler's follow-up messages (handling). */
int ob__space_admit(ob_engine_t* e, const char* type, size_t bytes);
/* 0 if handling may run now (after giving space back when needed), or
** OB_ENOSPC (handling paused, reason in errmsg). */
int ob__space_may_handle(ob_engine_t* e);
/* Give space back when the level calls for it (or after OB_ENOSPC):
** expired records, then published events, oldest first, then a WAL
** checkpoint. At most once a second. Returns the rows deleted, or < 0. */
int64_t ob__space_heal(ob_engine_t* e);
/* ob__space_heal after progress that freed rows to give back (the relay
** published): not held to the once-a-second limit. */
int64_t ob__space_heal_progress(ob_engine_t* e);
/* A write failed with OB_ENOSPC: heal at the next chance. */
void ob__space_note_full(ob_engine_t* e);
/* The level (OB__SPACE_*) and the bytes in use now. */
int ob__space_level_now(ob_engine_t* e, int* level, int64_t* used);
/* Fill the space fields of s. */
int ob__space_stats(ob_engine_t* e, ob_stats_t* s);
/* Free the critical type names (ob_close). */
void ob__space_free(ob_engine_t* e);

/* ---- the fence, engine side (core/fence) ---------------------------------- */

/*
** The fence attaches to handling through a hook, not through calls from
** core/engine into core/fence: the fence depends on the engine, never the
** other way round. core/fence/provider.c installs the hook (e->fence) the
** first time the fence is used on an engine: a provider registered, or
** ob_tx_effect called in a handler. Until then e->fence is NULL and there is
** nothing of the fence to do: no claim, no fresh key, no effect row handed
** out, no provider to free.
*/
typedef struct ob__fence_hook_s {
  /* A handler returned OB_WAIT on an effect: write the claim or the wait
  ** ob_tx_effect asked for, inside the row's transaction (its savepoint is
  ** already rolled back). < 0: the whole transaction aborts. */
  int (*after_handler)(ob_engine_t* e, ob_tx_t* tx, const ob__queue_row_t* r,
                       int64_t now);
  /* Free what ob_tx_effect allocated in tx (after each handler run). This
  ** function can't fail. */
  void (*tx_free)(ob_tx_t* tx);
  /* A write transaction ended: committed (1) keeps the claims it made as
  ** fresh, 0 forgets them (they did not happen). This function can't fail. */
  void (*tx_end)(ob_engine_t* e, int committed);
  /* ob_close: free everything the fence keeps on the engine. */
  void (*close)(ob_engine_t* e);
} ob__fence_hook_t;

/* The fence's own parts (core/fence), not called by core/engine. */
/* A fresh claim (not yet committed) of key; and the committed check-out. */
void ob__fresh_add(ob_engine_t* e, const char* key);
int ob__fresh_take(ob_engine_t* e, const char* key);
/* Put back a key taken out whose attempt certainly never left. */
void ob__fresh_keep(ob_engine_t* e, const char* key);
/* Install the fence's hook on e (idempotent). This function can't fail. */
void ob__fence_attach(ob_engine_t* e);

const ob__provider_t* ob__provider_find(const ob_engine_t* e,
                                        const char* name);

/* The observed clock and the collection (observed.c): read the recorded
** value at open; the time observed now; what a dedup record is stamped
** with. ob_gc (the public collection, run by the loop's gc timer and
** `oncebox gc`) records the clock, warns about a wall-clock jump, and
** sweeps; ob__retention_expired is its sweep alone, for giving space back
** (space.c): one batch of records older than retention_ms of observed
** time. Returns 0 and *deleted (may be NULL), or < 0 from storage. */
void ob__observed_init(ob_engine_t* e);
int64_t ob__observed_now(const ob_engine_t* e);
int64_t ob__retention_stamp(const ob_engine_t* e);
int ob__retention_expired(ob_engine_t* e, int64_t* deleted);

/* Persisted deadlines and a jumping wall clock (deadlines.c): the first
** check, at open, re-bases rows computed on a clock ahead of this one;
** watch, called by every verb that reads deadlines before it reads the
** clock for them, re-bases or shifts them after a jump it measures. Never
** fails: what cannot be written now is retried at the next check. */
void ob__deadlines_open(ob_engine_t* e);
void ob__deadlines_watch(ob_engine_t* e);

/* The retry policy of a queue (the default when none was set). */
const ob_retry_policy_t* ob__policy_for(const ob_engine_t* e,
                                        const char* queue);

#endif
