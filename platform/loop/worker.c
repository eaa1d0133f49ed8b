/* SPDX-License-Identifier: Apache-2.0 */
/* The loop worker (worker.h): the scaffolding the relay, the SQS consumer
** and the effects executors share, written once. */
#include <stdio.h>
#include <string.h>

#include "core/util/errbuf.h"
#include "core/util/retry.h"
#include "platform/http/http_client.h"
#include "platform/loop/worker.h"
#include "platform/sqs/sqs_client.h"

/* Inside a handler's transaction no worker may start one of its own: look
** again this soon. */
#define IN_TX_RETRY_MS 10

int ob__worker_check(ob_engine_t* e, const char* name,
                     const ob_probe_options_t* probe, char* errbuf,
                     size_t errlen) {
  if (e == NULL)
    return ob__errbuf_set(errbuf, errlen, OB_EINVAL,
                          "%s: the engine is NULL", name);
  if (ob__engine_runner(e) != NULL)
    return ob__errbuf_set(errbuf, errlen, OB_ESTATE, "%s: enable it before "
                          "attaching the engine to a loop", name);
  if (ob__engine_has_component(e, name))
    return ob__errbuf_set(errbuf, errlen, OB_EEXIST, "%s is already enabled",
                          name);
  if (ob__engine_ncomponents(e) >= OB__MAX_COMPONENTS)
    return ob__errbuf_set(errbuf, errlen, OB_ENOMEM,
                          "%s: too many engine components", name);
  return ob__probe_options_check(name, probe, errbuf, errlen);
}

static int start_error(int rc) {
  return rc == OB_ENOMEM ? OB_ENOMEM : OB_EINVAL;
}

/* ---- the enable-time trial open ------------------------------------------ */

static int trial_open(ob__worker_t* w, char* errbuf, size_t errlen) {
  uv_loop_t loop;
  int rc;

  if (uv_loop_init(&loop) != 0) return OB_ENOMEM;
  w->checking = 1;
  w->check_closed = 0;
  rc = w->ops->open(w, &loop, errbuf, errlen);
  if (rc == 0) {
    w->ops->close_client(w);
    while (!w->check_closed && uv_run(&loop, UV_RUN_ONCE) != 0) {
    }
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  (void)uv_loop_close(&loop);
  w->checking = 0;
  return rc < 0 ? start_error(rc) : 0;
}

/* ---- the component ------------------------------------------------------- */

static void timer_cb(uv_timer_t* t) {
  ob__worker_t* w = t->data;
  if (!ob__worker_active(w)) return;
  if (ob__engine_in_tx(w->e)) {
    ob__worker_arm(w, IN_TX_RETRY_MS);
    return;
  }
  w->ops->run(w);
}

static int w_start(void* self, ob_engine_t* e, uv_loop_t* loop) {
  ob__worker_t* w = self;
  char err[512] = "";
  int rc;

  w->e = e;
  w->loop = loop;
  w->storage_failures = 0;
  w->in_work = w->close_deferred = 0;
  w->ntimers = 0;
  w->done = NULL;
  w->done_arg = NULL;
  ob__link_init(&w->link, w->probe.base_ms, w->probe.cap_ms);
  rc = w->ops->open(w, loop, err, sizeof err);
  if (rc < 0) {
    ob__log(e, OB_LOG_ERROR, "%s: cannot open its client: %s", w->name, err);
    return ob__engine_seterr(e, start_error(rc), "%s: %s", w->name, err);
  }
  uv_timer_init(loop, &w->timer);
  w->timer.data = w;
  w->state = OB__WORKER_RUNNING;
  if (w->ops->started) w->ops->started(w);
  {
    /* Shops often sit behind a proxy, which this client does not use: say
    ** so once per engine, not at every failed connection. */
    const char* note = ob__http_proxy_note();
    if (note != NULL && !ob__engine_proxy_noted(e)) ob__log(e, OB_LOG_WARN, "%s", note);
  }
  return 0;
}

static void w_kick(void* self) {
  ob__worker_t* w = self;
  if (ob__worker_active(w) && w->ops->kick) w->ops->kick(w);
}

static void w_network(void* self) {
  ob__worker_t* w = self;
  if (w->state != OB__WORKER_RUNNING) return;
  ob__link_nudge(&w->link, ob__worker_link_now(w));
  if (w->ops->network) w->ops->network(w);
  else ob__worker_arm(w, 0);
}

static int w_idle(void* self) {
  ob__worker_t* w = self;
  if (w->state != OB__WORKER_RUNNING) return OB__IDLE_DONE;
  return w->ops->idle(w);
}

static void part_closed(ob__worker_t* w) {
  void (*done)(void*) = w->done;
  void* arg = w->done_arg;
  if (--w->pending_closes > 0) return;
  w->state = OB__WORKER_STOPPED;
  w->done = NULL;
  w->done_arg = NULL;
  if (w->ops->closed) w->ops->closed(w);
  if (done) done(arg);
}

static void timer_closed(uv_handle_t* h) {
  part_closed(h->data);
}

static void close_client(ob__worker_t* w) {
  w->state = OB__WORKER_CLOSING;
  w->ops->close_client(w);
}

void ob__worker_client_closed(ob__worker_t* w) {
  if (w->checking) {
    w->check_closed = 1;
    return;
  }
  /* The client is gone: its callbacks are done. Now the timers. */
  w->pending_closes = 1 + (int)w->ntimers;
  uv_close((uv_handle_t*)&w->timer, timer_closed);
  for (size_t i = 0; i < w->ntimers; i++) {
    uv_timer_stop(w->timers[i]);
    w->timers[i]->data = w;
    uv_close((uv_handle_t*)w->timers[i], timer_closed);
  }
}

static void begin_close(ob__worker_t* w) {
  uv_timer_stop(&w->timer);
  w->state = OB__WORKER_DRAINING;
  if (w->ops->drain && w->ops->drain(w)) return;  /* ob__worker_drained */
  if (w->state == OB__WORKER_DRAINING) close_client(w);
}

void ob__worker_drained(ob__worker_t* w) {
  if (w->state == OB__WORKER_DRAINING) close_client(w);
}

static void w_close(void* self, void (*done)(void*), void* arg) {
  ob__worker_t* w = self;
  w->done = done;
  w->done_arg = arg;
  if (w->in_work > 0) {
    w->close_deferred = 1;  /* ob__worker_leave closes */
    return;
  }
  begin_close(w);
}

static void w_destroy(void* self) {
  ob__worker_t* w = self;
  w->ops->destroy(w->self);
}

int ob__worker_register(ob__worker_t* w, ob_engine_t* e, const char* name,
                        const ob__worker_ops_t* ops, void* self,
                        const ob_probe_options_t* probe, char* errbuf,
                        size_t errlen) {
  ob__component_t c;
  int rc = ob__worker_check(e, name, probe, errbuf, errlen);
  if (rc < 0) return rc;
  memset(w, 0, sizeof *w);
  w->name = name;
  w->self = self;
  w->e = e;
  w->ops = ops;
  w->probe = *probe;
  w->state = OB__WORKER_STOPPED;
  rc = trial_open(w, errbuf, errlen);
  if (rc < 0) return rc;
  memset(&c, 0, sizeof c);
  c.name = name;
  c.self = w;
  c.start = w_start;
  c.kick = w_kick;
  c.network = w_network;
  c.idle = w_idle;
  c.close = w_close;
  c.destroy = w_destroy;
  rc = ob__engine_add_component(e, &c);
  if (rc < 0)
    return ob__errbuf_set(errbuf, errlen, rc, "%s: %s", name, ob_strerror(rc));
  return 0;
}

/* ---- for the owner ------------------------------------------------------- */

void ob__worker_timer_init(ob__worker_t* w, uv_timer_t* t) {
  if (w->ntimers >= OB__WORKER_MAX_TIMERS) return;
  uv_timer_init(w->loop, t);
  t->data = w->self;
  w->timers[w->ntimers++] = t;
}

void ob__worker_arm(ob__worker_t* w, int64_t delay_ms) {
  if (w->state != OB__WORKER_RUNNING) return;
  if (delay_ms < 0) delay_ms = 0;
  uv_timer_start(&w->timer, timer_cb, (uint64_t)delay_ms, 0);
}

void ob__worker_disarm(ob__worker_t* w) {
  if (w->state != OB__WORKER_STOPPED) uv_timer_stop(&w->timer);
}

int ob__worker_wait_for_probe(ob__worker_t* w) {
  int64_t now = ob__worker_link_now(w);
  if (w->link.online || now >= w->link.next_probe_at) return 0;
  ob__worker_arm(w, w->link.next_probe_at - now);
  return 1;
}

int ob__worker_link_ok(ob__worker_t* w) {
  return ob__link_ok(&w->link);
}

int64_t ob__worker_link_failed(ob__worker_t* w) {
  return ob__link_failed(&w->link, ob__worker_link_now(w),
                         ob__engine_clock(w->e));
}

int64_t ob__worker_storage_failed(ob__worker_t* w) {
  if (w->storage_failures < 15) w->storage_failures++;
  return ob__storage_backoff_ms(w->storage_failures);
}

void ob__worker_storage_ok(ob__worker_t* w) {
  w->storage_failures = 0;
}

void ob__worker_kick_others(ob__worker_t* w) {
  ob__engine_kick_components(w->e, w);
}

int64_t ob__worker_link_now(const ob__worker_t* w) {
  return (int64_t)uv_now(w->loop);
}

int64_t ob__worker_now(const ob__worker_t* w) {
  return ob__engine_now(w->e);
}

void ob__worker_enter(ob__worker_t* w) {
  w->in_work++;
}

int ob__worker_leave(ob__worker_t* w) {
  if (--w->in_work > 0 || !w->close_deferred) return 0;
  w->close_deferred = 0;
  begin_close(w);
  return 1;
}

int ob__worker_active(const ob__worker_t* w) {
  return w->state == OB__WORKER_RUNNING && !ob__engine_stopping(w->e);
}

static void client_gone(ob__worker_t* w) {
  if (w->client != NULL) *w->client = NULL;
  w->client = NULL;
  ob__worker_client_closed(w);
}

static void sqs_closed(ob__sqs_client_t* c, void* arg) {
  (void)c;
  client_gone(arg);
}

static void http_closed(ob__http_client_t* c, void* arg) {
  (void)c;
  client_gone(arg);
}

void ob__worker_close_sqs(ob__worker_t* w, ob__sqs_client_t** client) {
  w->client = (void**)client;
  ob__sqs_client_close(*client, sqs_closed, w);
}

void ob__worker_close_http(ob__worker_t* w, ob__http_client_t** client) {
  w->client = (void**)client;
  ob__http_client_close(*client, http_closed, w);
}
