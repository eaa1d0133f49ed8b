/* SPDX-License-Identifier: Apache-2.0 */
/* The engine on a libuv loop: one transaction per loop turn, so the loop is
** never blocked longer than that; another timer runs retention. Nothing
** polls busily: when the queue is empty the work timer sleeps until the next
** available_at or the poll interval.
**
** While a backlog drains, the next transaction runs from an idle handle,
** not from the timer restarted at 0: libuv 1.44 (Debian 12) runs a timer
** re-armed with 0 from its own callback again in the same turn, without
** polling I/O (libuv #4245, fixed upstream in 1.47), so the relay and the
** consumer would get no reply until the queue was empty. An active idle
** handle makes each turn poll I/O with a zero timeout instead. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uv.h>

#include "core/engine/engine_host.h"
#include "core/fence/fence.h"
#include "core/relay/relay_tx.h"
#include "core/util/retry.h"
#include "platform/loop/worker.h"

typedef struct ob__runner_s {
  ob_engine_t* e;
  uv_loop_t* loop;
  uv_timer_t work;
  uv_idle_t next;      /* the next transaction, on the next loop turn */
  uv_timer_t gc;
  uv_async_t stop_async;
  uv_fs_event_t wal_watch;   /* another process wrote the database */
  uv_timer_t settle;   /* after a -wal event: has another process committed? */
  uint64_t settle_until;     /* loop time (ms) the settle window ends */
  int64_t seen_version;      /* PRAGMA data_version last acted on */
  int watching;
  int open_handles;
  int closing;
  ob_run_mode_t mode;
  int result;          /* first fatal error that ended an ob_run */
  size_t started;      /* components started (each counts as a handle) */
  int failures;        /* consecutive failed batches, for backoff */
  int last_rc;         /* the failure last logged, */
  uint64_t last_log;   /* when (loop time), */
  int repeats;         /* and how often it came again unlogged */
  void (*done)(ob_engine_t*, void*);
  void* done_arg;
} ob__runner_t;

/* The one engine that receives SIGTERM/SIGINT (ob_run with signals). */
static ob__runner_t* volatile signal_target;
static struct sigaction saved_term, saved_int;

static void one_closed(ob__runner_t* r) {
  if (--r->open_handles > 0) return;
  ob_engine_t* e = r->e;
  void (*done)(ob_engine_t*, void*) = r->done;
  void* arg = r->done_arg;
  ob__engine_set_hooks(e, NULL);
  ob__engine_set_run_result(e, r->result);
  free(r);
  if (done) done(e, arg);
}

static void close_cb(uv_handle_t* h) {
  one_closed(h->data);
}

static void component_closed(void* arg) {
  one_closed(arg);
}

/* 1 when no component has work it can do now; a component whose work
** waits for a peer it cannot reach marks the run as stalled. */
static int components_idle(ob__runner_t* r) {
  int blocked = 0;
  for (size_t i = 0; i < ob__engine_ncomponents(r->e); i++) {
    const ob__component_t* c = ob__engine_component(r->e, i);
    int st = c->idle ? c->idle(c->self) : OB__IDLE_DONE;
    if (st == OB__IDLE_BUSY) return 0;
    if (st == OB__IDLE_BLOCKED) blocked = 1;
  }
  if (blocked && r->result == 0) r->result = OB_RUN_STALLED;
  return 1;
}

static void begin_close(ob__runner_t* r) {
  if (r->closing) return;
  r->closing = 1;
  if (signal_target == r) signal_target = NULL;
  uv_close((uv_handle_t*)&r->work, close_cb);
  uv_close((uv_handle_t*)&r->next, close_cb);
  uv_close((uv_handle_t*)&r->gc, close_cb);
  uv_close((uv_handle_t*)&r->stop_async, close_cb);
  uv_close((uv_handle_t*)&r->wal_watch, close_cb);
  uv_close((uv_handle_t*)&r->settle, close_cb);
  for (size_t i = 0; i < r->started; i++)
    ob__engine_component(r->e, i)->close(ob__engine_component(r->e, i)->self,
                                         component_closed, r);
}

static void work_cb(uv_timer_t* t);
static void close_sync(ob_engine_t* e);
static void next_cb(uv_idle_t* h);

/* With a watch on the -wal file, writes by other processes wake us; the
** re-check is only a safety net and an idle engine stays asleep. */
#define WATCHED_POLL_MS 300000

static int64_t idle_poll_ms(const ob__runner_t* r) {
  int64_t p = ob__engine_opts(r->e)->poll_interval_ms;
  return r->watching && p < WATCHED_POLL_MS ? WATCHED_POLL_MS : p;
}

static void arm(ob__runner_t* r, int64_t delay_ms) {
  if (r->closing) return;
  if (delay_ms <= 0) {
    uv_timer_stop(&r->work);
    uv_idle_start(&r->next, next_cb);
    return;
  }
  uv_idle_stop(&r->next);
  uv_timer_start(&r->work, work_cb, (uint64_t)delay_ms, 0);
}

/* Due now, or soon: a transaction is about to run anyway. */
static int busy(const ob__runner_t* r) {
  return uv_is_active((const uv_handle_t*)&r->next) ||
         uv_timer_get_due_in(&r->work) == 0;
}

static void do_work(ob__runner_t* r);

/* A storage failure that repeats (a full disk for hours) is logged once per
** FAILURE_LOG_MS with how often it happened since, not once per attempt. */
#define FAILURE_LOG_MS 60000

/* An until-idle run checks its components at least this often. */
#define UNTIL_IDLE_RECHECK_MS 50

static void log_failure(ob__runner_t* r, int rc) {
  uint64_t now = uv_now(r->loop);
  /* With its code, as every failure record: a record without one would
  ** tell the repeat limiter that the engine works again and end the
  ** window of batch_rolled_back. Written at most once per FAILURE_LOG_MS,
  ** so the limiter's window never drops one of these. */
  ob_log_record_t lr = OB__LOG_RECORD(OB_LOG_ERROR, "engine",
                                      "handling_failed");
  lr.error = rc;
  if (rc == r->last_rc && now - r->last_log < FAILURE_LOG_MS) {
    r->repeats++;
    return;
  }
  if (rc == r->last_rc && r->repeats > 0)
    ob__logr(r->e, &lr, "handling failed: %s: %s (%d times in the "
             "last %d s)", ob_strerror(rc), ob_errmsg(r->e), r->repeats + 1,
             (int)((now - r->last_log) / 1000));
  else
    ob__logr(r->e, &lr, "handling failed: %s: %s", ob_strerror(rc),
             ob_errmsg(r->e));
  r->last_rc = rc;
  r->last_log = now;
  r->repeats = 0;
}

static void work_cb(uv_timer_t* t) {
  do_work(t->data);
}

static void next_cb(uv_idle_t* h) {
  uv_idle_stop(h);
  do_work(h->data);
}

/* By default the poll interval in force: the runner looks again then
** anyway, so work due by then is as good as due now. */
int64_t ob__idle_horizon_ms(const ob_engine_t* e) {
  const ob_options_t* o = ob__engine_opts(e);
  const ob__runner_t* r = ob__engine_runner(e);
  if (o->idle_horizon_ms != OB_IDLE_HORIZON_POLL) return o->idle_horizon_ms;
  return r != NULL ? idle_poll_ms(r) : o->poll_interval_ms;
}

/* An until-idle run with nothing the queue can claim within the horizon:
** 1 when no component is busy either, and the run may end. Stalled when an
** open effect is due within the horizon yet no executor took it (its
** provider is not enabled in this run), or when only messages waiting for
** effects are left and no open effect is scheduled (they wait for parked
** ones, a person's). Effects due later are scheduled work, not a stall. */
static int until_idle_done(ob__runner_t* r, int only_waiting, int64_t now) {
  int64_t at;
  int rc;
  if (!components_idle(r)) return 0;
  rc = ob__effect_next_due(r->e, NULL, &at);
  if (rc == 0 ? at - now <= ob__idle_horizon_ms(r->e) : only_waiting) {
    ob__log(r->e, OB_LOG_INFO, "idle: the messages left wait for effects "
            "that can't progress right now");
    if (r->result == 0) r->result = OB_RUN_STALLED;
  }
  return 1;
}

/* Handling paused at the size cap (not a full disk) while the outbox has
** rows to publish and the relay is at work: what it publishes is given
** back and handling resumes. An until-idle run that ended here instead
** left a sync script's database paused for good: each run ended at once,
** before the relay published anything. */
static int paused_until_published(ob__runner_t* r, int rc) {
  ob_stats_t st;
  if (rc != OB_ENOSPC || ob_stats(r->e, &st) < 0) return 0;
  return st.space_level == 3 && st.outbox_unpublished > 0 &&
         !components_idle(r);
}

static void do_work(ob__runner_t* r) {
  ob_engine_t* e = r->e;
  ob_batch_result_t res;
  int64_t at, now, delay;
  int rc;

  if (ob__engine_stopping(e)) {
    begin_close(r);
    return;
  }
  if (ob__engine_opts(e)->no_handling) {
    /* Publishing and consuming only: nothing to claim here. */
    if (r->mode == OB_RUN_UNTIL_IDLE && components_idle(r)) {
      begin_close(r);
      return;
    }
    arm(r, r->mode == OB_RUN_UNTIL_IDLE ? 20 : idle_poll_ms(r));
    return;
  }
  rc = ob_run_once(e, &res);
  if (rc < 0) {
    /* Disk full, I/O error, lock held elsewhere: nothing was applied. Back
    ** off and try again; an until-idle run reports the failure instead of
    ** spinning on it. */
    log_failure(r, rc);
    if (r->mode == OB_RUN_UNTIL_IDLE && rc != OB_EBUSY &&
        !paused_until_published(r, rc)) {
      r->result = rc;
      begin_close(r);
      return;
    }
    if (r->failures < 15) r->failures++;
    arm(r, ob__storage_backoff_ms(r->failures));
    return;
  }
  if (r->failures > 0 && r->repeats > 0)
    ob__log(e, OB_LOG_INFO, "handling works again (%d more failures were "
            "not logged)", r->repeats);
  r->failures = 0;
  r->last_rc = 0;
  r->repeats = 0;
  if (ob__engine_stopping(e)) {
    begin_close(r);
    return;
  }
  if (res.claimed > 0) {
    /* New outbox rows for the relay, new claims for an effect performer. */
    if (res.handled > 0 || res.waiting > 0) ob__engine_kick_components(e, NULL);
    arm(r, 0);  /* more may be ready: next transaction on the next turn */
    return;
  }
  rc = ob_next_due(e, &at);
  if (rc == OB_ENOTFOUND) {
    if (r->mode == OB_RUN_UNTIL_IDLE) {
      /* Idle means the relay and consumer have nothing to do right now
      ** either; they have no callback for that, so look again shortly. */
      if (components_idle(r)) begin_close(r);
      else arm(r, 20);
      return;
    }
    arm(r, idle_poll_ms(r));
    return;
  }
  if (rc < 0) {
    arm(r, ob__engine_opts(e)->poll_interval_ms);
    return;
  }
  now = ob__engine_now(e);
  if (r->mode == OB_RUN_UNTIL_IDLE) {
    /* Idle means nothing due within the horizon (ob_options_t's
    ** idle_horizon_ms): a message delayed by a day is scheduled work for
    ** a later run, not a reason to wait a day. Messages waiting for
    ** effects are judged by their effects. */
    int64_t u;
    int urc = ob__engine_next_due_unwaited(e, &u);
    if ((urc == OB_ENOTFOUND ||
         (urc == 0 && u - now > ob__idle_horizon_ms(e))) &&
        until_idle_done(r, urc == OB_ENOTFOUND, now)) {
      begin_close(r);
      return;
    }
  }
  delay = at - now;
  /* Other processes may enqueue earlier work; look again at least every
  ** poll interval. An until-idle run also looks again soon while a
  ** component is busy: a worker's progress (an answer settled as not sent,
  ** a probe that failed) commits nothing that wakes the runner, and the
  ** run must end once nothing can progress. */
  if (delay > idle_poll_ms(r)) delay = idle_poll_ms(r);
  if (r->mode == OB_RUN_UNTIL_IDLE && delay > UNTIL_IDLE_RECHECK_MS)
    delay = UNTIL_IDLE_RECHECK_MS;
  arm(r, delay);
}

static void gc_cb(uv_timer_t* t) {
  ob__runner_t* r = t->data;
  int64_t n = 0;
  int rc = ob_gc(r->e, &n);
  if (rc < 0) {
    ob_log_record_t lr = OB__LOG_RECORD(OB_LOG_WARN, "gc", "gc_failed");
    lr.error = rc;
    ob__logr(r->e, &lr, "retention failed: %s", ob_errmsg(r->e));
  } else if (n > 0) {
    ob_log_record_t lr = OB__LOG_RECORD(OB_LOG_INFO, "gc", "gc_deleted");
    ob__logr(r->e, &lr, "retention deleted %lld rows", (long long)n);
  }
}

static void stop_async_cb(uv_async_t* a) {
  ob__runner_t* r = a->data;
  begin_close(r);
  ob_stop(r->e);  /* closing: the stop hook sends nothing more */
}

/*
** Another process's commit. inotify reports the write of its WAL frames,
** but readers see the commit only once the writer has synced the WAL and
** updated the wal-index in shared memory, which inotify does not report.
** So a -wal event opens a settle window: PRAGMA data_version (which changes
** for other connections' commits only, never for ours) is read at once and
** then every SETTLE_STEP_MS until it changes or the window ends; a change
** runs the next transaction. Our own commits, failed ones included, then
** cost a few cheap reads and never wake the work timer (which would cancel
** a storage backoff).
*/
#define SETTLE_STEP_MS 10
#define SETTLE_WINDOW_MS 2000

static void settle_cb(uv_timer_t* t) {
  ob__runner_t* r = t->data;
  int64_t v;
  int rc;
  if (r->closing || ob__engine_stopping(r->e)) return;
  if (ob__engine_in_tx(r->e)) {
    uv_timer_start(t, settle_cb, SETTLE_STEP_MS, 0);
    return;
  }
  rc = ob__engine_data_version(r->e, &v);
  if (rc < 0 || v != r->seen_version) {
    /* Committed (or the database cannot tell: look anyway). */
    if (rc == 0) r->seen_version = v;
    if (!busy(r)) arm(r, 0);
    return;
  }
  if (uv_now(r->loop) < r->settle_until)
    uv_timer_start(t, settle_cb, SETTLE_STEP_MS, 0);
}

static void wal_changed(uv_fs_event_t* h, const char* name, int events,
                        int status) {
  ob__runner_t* r = h->data;
  (void)name;
  (void)events;
  if (status != 0 || r->closing || ob__engine_stopping(r->e)) return;
  r->settle_until = uv_now(r->loop) + SETTLE_WINDOW_MS;
  if (!uv_is_active((const uv_handle_t*)&r->settle))
    uv_timer_start(&r->settle, settle_cb, 0, 0);
}

static void stop_hook(ob_engine_t* e) {
  ob__runner_t* r = ob__engine_runner(e);
  if (r != NULL && !r->closing) uv_async_send(&r->stop_async);
}

static void wake(ob_engine_t* e) {
  ob__runner_t* r = ob__engine_runner(e);
  if (r != NULL && !r->closing && !ob__engine_stopping(e)) arm(r, 0);
}

void ob_network_changed(ob_engine_t* e) {
  if (e == NULL || ob__engine_runner(e) == NULL) return;
  for (size_t i = 0; i < ob__engine_ncomponents(e); i++) {
    const ob__component_t* c = ob__engine_component(e, i);
    if (c->network) c->network(c->self);
  }
}

int ob_attach(ob_engine_t* e, struct uv_loop_s* loop) {
  ob__runner_t* r;
  if (e == NULL || loop == NULL) return OB_EINVAL;
  if (ob__engine_runner(e) != NULL) return OB_ESTATE;
  r = calloc(1, sizeof *r);
  if (r == NULL) return OB_ENOMEM;
  r->e = e;
  r->loop = loop;
  uv_timer_init(loop, &r->work);
  uv_idle_init(loop, &r->next);
  uv_timer_init(loop, &r->gc);
  uv_async_init(loop, &r->stop_async, stop_async_cb);
  uv_fs_event_init(loop, &r->wal_watch);
  uv_timer_init(loop, &r->settle);
  r->work.data = r->next.data = r->gc.data = r->stop_async.data =
      r->wal_watch.data = r->settle.data = r;
  r->open_handles = 6;
  if (ob__engine_data_version(e, &r->seen_version) < 0) r->seen_version = -1;
  /* Settle checks alone must not keep a loop alive. */
  uv_unref((uv_handle_t*)&r->settle);
  {
    /* SQLite keeps the -wal file while a connection is open; if it cannot
    ** be watched (no inotify, odd file system) we poll instead. */
    const char* path = ob__engine_db_path(e);
    size_t n = strlen(path);
    char* wal = malloc(n + 5);
    if (wal != NULL) {
      memcpy(wal, path, n);
      memcpy(wal + n, "-wal", 5);
      r->watching = uv_fs_event_start(&r->wal_watch, wal_changed, wal, 0) == 0;
      free(wal);
    }
    if (!r->watching)
      ob__log(e, OB_LOG_DEBUG, "cannot watch the WAL file; polling every %d ms",
              ob__engine_opts(e)->poll_interval_ms);
    /* The watch alone must not keep a loop alive. */
    uv_unref((uv_handle_t*)&r->wal_watch);
  }
  {
    ob__engine_hooks_t h = {r, wake, stop_hook, close_sync};
    ob__engine_set_hooks(e, &h);
  }
  for (size_t i = 0; i < ob__engine_ncomponents(e); i++) {
    const ob__component_t* c = ob__engine_component(e, i);
    int rc = c->start(c->self, e, loop);
    if (rc < 0) {
      /* Close what was opened; the caller's loop finishes the closing. */
      r->result = rc;
      begin_close(r);
      return rc;
    }
    r->started++;
    r->open_handles++;
  }
  arm(r, 0);
  uv_timer_start(&r->gc, gc_cb, (uint64_t)ob__engine_opts(e)->gc_interval_ms,
                 (uint64_t)ob__engine_opts(e)->gc_interval_ms);
  /* The gc timer alone must not keep a loop alive. */
  uv_unref((uv_handle_t*)&r->gc);
  return 0;
}

int ob_detach(ob_engine_t* e, void (*done)(ob_engine_t*, void*), void* arg) {
  ob__runner_t* r;
  if (e == NULL) return OB_EINVAL;
  r = ob__engine_runner(e);
  if (r == NULL || r->closing) return OB_ESTATE;
  r->done = done;
  r->done_arg = arg;
  begin_close(r);
  return 0;
}

/* ob_close while attached (the engine's close_sync hook). */
static void close_sync(ob_engine_t* e) {
  ob__runner_t* r = ob__engine_runner(e);
  uv_loop_t* loop;
  if (r == NULL) return;
  loop = r->loop;
  if (!r->closing) begin_close(r);
  else r->done = NULL;
  while (ob__engine_runner(e) != NULL) uv_run(loop, UV_RUN_NOWAIT);
}

/* First SIGTERM/SIGINT: ask the loop to stop after the message in hand. A
** later one ends the process at once (SQLite rolls the open transaction
** back on the next open), but only from OB__SIGNAL_REPEAT_MS after the
** first: GNU timeout signals the child and then its whole process group,
** and `kill PID; kill -- -PGID` does the same, so one request often arrives
** twice within microseconds to milliseconds. Taking that echo for a second
** request lost the clean stop under load. Only async-signal-safe calls
** here (clock_gettime, signal, raise); SIGTERM and SIGINT are both blocked
** while it runs, so the first time is written once, by one handler. */
#define OB__SIGNAL_REPEAT_MS 1000

static volatile sig_atomic_t signal_seen;
static struct timespec signal_first;

static void on_signal(int sig) {
  ob__runner_t* r = signal_target;
  struct timespec now;
  if (!signal_seen) {
    signal_seen = 1;
    (void)clock_gettime(CLOCK_MONOTONIC, &signal_first);
    if (r != NULL) ob_stop(r->e);  /* a flag and uv_async_send: both safe */
    return;
  }
  if (clock_gettime(CLOCK_MONOTONIC, &now) == 0 &&
      (now.tv_sec - signal_first.tv_sec) * 1000 +
              (now.tv_nsec - signal_first.tv_nsec) / 1000000 <
          OB__SIGNAL_REPEAT_MS)
    return;  /* the same request, delivered twice */
  signal(sig, SIG_DFL);
  raise(sig);  /* pending until this handler returns, then fatal */
}

int ob_run(ob_engine_t* e, ob_run_mode_t mode, int handle_signals) {
  uv_loop_t loop;
  ob__runner_t* r;
  int rc;

  if (e == NULL) return OB_EINVAL;
  if (ob__engine_runner(e) != NULL) return OB_ESTATE;
  ob__engine_set_run_result(e, 0);
  if (uv_loop_init(&loop) != 0) return OB_ENOMEM;
  rc = ob_attach(e, &loop);
  if (rc < 0) {
    uv_run(&loop, UV_RUN_DEFAULT);  /* finish closing what attach opened */
    uv_loop_close(&loop);
    ob__engine_set_run_result(e, 0);
    return rc;
  }
  r = ob__engine_runner(e);
  r->mode = mode;
  if (handle_signals) {
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGTERM);
    sigaddset(&sa.sa_mask, SIGINT);
    signal_seen = 0;
    signal_target = r;
    /* A run after a signalled one finds our handler still in place: what
    ** to restore is still what the caller had before. */
    sigaction(SIGTERM, &sa, &old);
    if (old.sa_handler != on_signal) saved_term = old;
    sigaction(SIGINT, &sa, &old);
    if (old.sa_handler != on_signal) saved_int = old;
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  rc = 0;
  if (handle_signals) {
    signal_target = NULL;
    /* Keep the handler after a signal arrived: a later one must still end
    ** the process at once during the close below and the caller's own
    ** clean-up (the CLI's stop line), an echo of the first must not. */
    if (!signal_seen) {
      sigaction(SIGTERM, &saved_term, NULL);
      sigaction(SIGINT, &saved_int, NULL);
    }
  }
  /* r was freed by close_cb, which copied its result into e. */
  rc = ob__engine_run_result(e);
  ob__engine_set_run_result(e, 0);
  uv_loop_close(&loop);
  return rc;
}

/* Keep the earliest of *best (0: none yet) and *at when *at is still
** ahead of now: a time already passed is work due now (an outbox with no
** relay in this run), not scheduled. rc is what found *at: OB_ENOTFOUND
** adds nothing, another negative code is returned. */
static int earliest(int rc, const int64_t* at, int64_t now, int64_t* best) {
  if (rc == OB_ENOTFOUND) return 0;
  if (rc < 0) return rc;
  if (*at > now && (*best == 0 || *at < *best)) *best = *at;
  return 0;
}

int ob_scheduled(ob_engine_t* e, ob_scheduled_t* s) {
  ob_stats_t st;
  int64_t at = 0, now;
  int rc;
  if (e == NULL || s == NULL) return OB_EINVAL;
  memset(s, 0, sizeof *s);
  if ((rc = ob_stats(e, &st)) < 0) return rc;
  now = ob__engine_now(e);
  /* at by pointer: an argument's value may be read before the call that
  ** sets it (the order of evaluation is unspecified). */
  rc = earliest(ob__engine_next_due_unwaited(e, &at), &at, now,
                &s->earliest_ms);
  if (rc == 0)
    rc = earliest(ob__relay_due_at(e, 0, &at), &at, now, &s->earliest_ms);
  if (rc == 0)
    rc = earliest(ob__effect_next_due(e, NULL, &at), &at, now,
                  &s->earliest_ms);
  if (rc < 0) {
    memset(s, 0, sizeof *s);
    return rc;
  }
  s->messages = st.queue_delayed;
  s->outbox = st.outbox_unpublished - st.outbox_parked - st.outbox_due;
  s->effects = st.effects_pending + st.effects_unknown - st.effects_parked;
  return 0;
}
