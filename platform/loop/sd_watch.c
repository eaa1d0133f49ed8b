/* SPDX-License-Identifier: Apache-2.0 */
/* systemd readiness, watchdog and stopping on the engine's loop. */
#include "platform/loop/sd_watch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "core/engine/engine_host.h"
#include "platform/posix/sd_notify.h"

typedef struct sd_watch_s {
  ob_engine_t* e;
  uv_timer_t ready;     /* fires on the loop's first turn */
  uv_timer_t watchdog;
  uint64_t interval_ms; /* 0: no watchdog */
  int started;
  int open;             /* handles still to close */
  int failed_logged;
  void (*done)(void*);
  void* done_arg;
  char status[256];
} sd_watch_t;

static void notify(sd_watch_t* w, const char* state) {
  int rc = ob__sd_notify(state);
  /* Not fatal, and said once: systemd will act on the silence itself. */
  if (rc < 0 && !w->failed_logged) {
    w->failed_logged = 1;
    ob__log(w->e, OB_LOG_WARN, "cannot notify systemd (NOTIFY_SOCKET): %s",
            ob_strerror(rc));
  }
}

static void ready_cb(uv_timer_t* t) {
  sd_watch_t* w = t->data;
  char msg[300];
  snprintf(msg, sizeof msg, "READY=1\nSTATUS=%s", w->status);
  notify(w, msg);
}

static void watchdog_cb(uv_timer_t* t) {
  notify(t->data, "WATCHDOG=1");
}

static int sd_start(void* self, ob_engine_t* e, struct uv_loop_s* loop) {
  sd_watch_t* w = self;
  w->e = e;
  uv_timer_init(loop, &w->ready);
  uv_timer_init(loop, &w->watchdog);
  w->ready.data = w->watchdog.data = w;
  w->open = 2;
  w->started = 1;
  /* A 0 ms timer runs once uv_run has started: the engine is open, the
  ** components before this one have started and the first transaction is
  ** due on the same turn. */
  uv_timer_start(&w->ready, ready_cb, 0, 0);
  if (w->interval_ms > 0) {
    uv_timer_start(&w->watchdog, watchdog_cb, w->interval_ms, w->interval_ms);
    /* Pinging alone must not keep a loop (an until-idle run) alive. */
    uv_unref((uv_handle_t*)&w->watchdog);
  }
  return 0;
}

static int sd_idle(void* self) {
  (void)self;
  return OB__IDLE_DONE;
}

static void closed_cb(uv_handle_t* h) {
  sd_watch_t* w = h->data;
  if (--w->open == 0 && w->done) w->done(w->done_arg);
}

static void sd_close(void* self, void (*done)(void*), void* arg) {
  sd_watch_t* w = self;
  w->done = done;
  w->done_arg = arg;
  notify(w, "STOPPING=1\nSTATUS=stopping");
  uv_close((uv_handle_t*)&w->ready, closed_cb);
  uv_close((uv_handle_t*)&w->watchdog, closed_cb);
}

static void sd_destroy(void* self) {
  free(self);
}

int ob__sd_enable(ob_engine_t* e, const char* status) {
  const char* sock = getenv("NOTIFY_SOCKET");
  ob__component_t c;
  sd_watch_t* w;
  uint64_t usec;
  int rc;
  if (e == NULL) return OB_EINVAL;
  if (sock == NULL || sock[0] == '\0') return 0;
  w = calloc(1, sizeof *w);
  if (w == NULL) return OB_ENOMEM;
  w->e = e;
  snprintf(w->status, sizeof w->status, "%s", status ? status : "running");
  /* Half the interval, as sd_watchdog_enabled(3) advises: a late turn or
  ** two does not get the daemon killed. */
  if (ob__sd_watchdog_usec(&usec)) {
    w->interval_ms = usec / 2000;
    if (w->interval_ms == 0) w->interval_ms = 1;
  }
  memset(&c, 0, sizeof c);
  c.name = "systemd";
  c.self = w;
  c.start = sd_start;
  c.idle = sd_idle;
  c.close = sd_close;
  c.destroy = sd_destroy;
  rc = ob__engine_add_component(e, &c);
  if (rc < 0) free(w);
  return rc;
}
