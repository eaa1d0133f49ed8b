/* SPDX-License-Identifier: Apache-2.0 */
/*
** oncebox internal: a loop worker, the one mechanism behind every part of
** the engine that talks to a peer on the engine's loop: the outbox relay
** (platform/relay), the SQS consumer (platform/consumer) and each
** provider's effects executor (platform/effects).
**
** The worker owns what they share, so that it exists once:
**   - registration with the engine and the enable-time checks (not
**     attached, not enabled twice, room left, probe options, and a trial
**     open of the client on a private loop so a bad endpoint or CA bundle
**     fails *_enable, not the later ob_attach);
**   - start on the engine's loop and the one mapping of a start failure to
**     a public code (OB_ENOMEM stays, anything else is OB_EINVAL: a client
**     that opened at enable and not at attach is a configuration fault);
**   - one timer (ob__worker_arm), which never fires while closing, after
**     ob_stop, or inside a handler's transaction;
**   - the link: online, or offline and probing with ob_probe_options_t;
**   - one backoff after a storage failure (ob__storage_backoff_ms);
**   - kick / network / idle wiring and kicking the other components;
**   - the close sequence: drain (optional), close the client, close the
**     timers, then done(arg) exactly once; a close requested while the
**     owner is inside a handler call (ob__worker_enter) waits for it.
** What a failed request means is ob__net_classify's (core/util/net_error.h)
** for every worker.
**
** The owner embeds an ob__worker_t in its own struct and supplies the
** callbacks in ob__worker_ops_t: what is due (run), what its client is
** (open / close_client), and the optional drain, kick, network and closed.
*/
#ifndef OB_PLATFORM_LOOP_WORKER_H
#define OB_PLATFORM_LOOP_WORKER_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "core/engine/engine_host.h"
#include "core/util/link.h"
#include "core/util/net_error.h"

typedef struct ob__worker_s ob__worker_t;

typedef enum {
  OB__WORKER_STOPPED = 0, /* registered, not started (or closed again) */
  OB__WORKER_RUNNING,     /* started on a loop */
  OB__WORKER_DRAINING,    /* closing: the owner finishes work in flight */
  OB__WORKER_CLOSING      /* closing: client and timers closing */
} ob__worker_state_t;

typedef struct ob__worker_ops_s {
  /* Open the owner's client on loop (the engine's, or a private one for
  ** the enable-time check). < 0: any code, with a reason in err. */
  int (*open)(ob__worker_t* w, uv_loop_t* loop, char* err, size_t errlen);
  /* Close that client; the owner calls ob__worker_client_closed(w) from
  ** the client's close callback. Requests in flight end first (canceled). */
  void (*close_client)(ob__worker_t* w);
  /* Started on the engine's loop: arm the first run. */
  void (*started)(ob__worker_t* w);
  /* The timer fired and the worker may work. */
  void (*run)(ob__worker_t* w);
  /* OB__IDLE_BUSY, OB__IDLE_DONE or OB__IDLE_BLOCKED (engine_host.h).
  ** Work due later than now + ob__idle_horizon_ms is not busy: it is left
  ** for a later run (done, or blocked when the peer can't be reached). */
  int (*idle)(ob__worker_t* w);
  /* Optional. New local work may exist (outbox rows, effect claims). */
  void (*kick)(ob__worker_t* w);
  /* Optional. The link was just nudged by ob_network_changed; NULL: run
  ** at once. */
  void (*network)(ob__worker_t* w);
  /* Optional. Closing begins: stop starting work. Return 1 to keep the
  ** client open until the owner calls ob__worker_drained(w); 0 (or NULL)
  ** closes it at once. */
  int (*drain)(ob__worker_t* w);
  /* Optional. Everything is closed; done runs right after. */
  void (*closed)(ob__worker_t* w);
  /* Free the owner (after close, or when never started). */
  void (*destroy)(void* self);
} ob__worker_ops_t;

#define OB__WORKER_MAX_TIMERS 4

struct ob__worker_s {
  /* read-only for the owner */
  const char* name;            /* component name, log prefix */
  void* self;                  /* the owner */
  ob_engine_t* e;
  uv_loop_t* loop;             /* while started */
  ob__worker_state_t state;
  ob__link_t link;
  ob_probe_options_t probe;

  /* private */
  const ob__worker_ops_t* ops;
  uv_timer_t timer;
  uv_timer_t* timers[OB__WORKER_MAX_TIMERS];  /* the owner's, closed last */
  size_t ntimers;
  int pending_closes;
  int storage_failures;
  int in_work;                 /* ob__worker_enter depth */
  int close_deferred;
  int checking;                /* the enable-time trial open */
  int check_closed;
  void** client;               /* ob__worker_close_sqs / _http */
  void (*done)(void*);
  void* done_arg;
};

/*
** The enable-time checks, before the owner allocates anything: e not NULL,
** not attached (OB_ESTATE), no component of that name (OB_EEXIST), room for
** one more (OB_ENOMEM), valid probe options (OB_EINVAL). Returns 0 or the
** code, with a reason in errbuf.
*/
int ob__worker_check(ob_engine_t* e, const char* name,
                     const ob_probe_options_t* probe, char* errbuf,
                     size_t errlen);

/*
** Register w (embedded in self) as a component of e. Opens the client once
** on a private loop and closes it (a bad endpoint or CA bundle fails here,
** with ob__err_public's code, OB_EINVAL for anything but OB_ENOMEM). On
** failure nothing is registered and self is not freed. name must outlive
** w.
*/
int ob__worker_register(ob__worker_t* w, ob_engine_t* e, const char* name,
                        const ob__worker_ops_t* ops, void* self,
                        const ob_probe_options_t* probe, char* errbuf,
                        size_t errlen);

/* An extra timer of the owner's (initialised and closed by the worker; its
** data is self). Call from ops->open's caller context: in ops->started. */
void ob__worker_timer_init(ob__worker_t* w, uv_timer_t* t);

/* Run ops->run after delay_ms (< 0: 0). Ignored unless running. */
void ob__worker_arm(ob__worker_t* w, int64_t delay_ms);
void ob__worker_disarm(ob__worker_t* w);

/* Offline and the next probe not due yet: arm the timer for it and return
** 1. Otherwise 0. */
int ob__worker_wait_for_probe(ob__worker_t* w);
/* A request got an answer: 1 if this brought the link back online. */
int ob__worker_link_ok(ob__worker_t* w);
/* A request could not reach the peer: offline; the delay to the next
** probe. */
int64_t ob__worker_link_failed(ob__worker_t* w);

/* A storage verb failed: the delay before trying again (one rule for
** every driver); and it worked again. */
int64_t ob__worker_storage_failed(ob__worker_t* w);
void ob__worker_storage_ok(ob__worker_t* w);

/* The other components may have work (this one committed outbox rows). */
void ob__worker_kick_others(ob__worker_t* w);

/* The engine's wall clock (for stored deadlines), and the loop's monotonic
** one that the link's probe times use: a wall clock set back a day must not
** hold a probe back a day. */
int64_t ob__worker_now(const ob__worker_t* w);
int64_t ob__worker_link_now(const ob__worker_t* w);

/* An until-idle run's horizon in ms (ob_options_t.idle_horizon_ms, with
** OB_IDLE_HORIZON_POLL resolved to the attached runner's poll interval in
** force): work due later than now plus this is scheduled, not waited for
** (platform/loop/runner.c). */
int64_t ob__idle_horizon_ms(const ob_engine_t* e);

/* Around a call that may run handlers (which may call ob_detach): a close
** requested inside waits until ob__worker_leave. Returns 1 from leave when
** the close started then (the owner must not touch its state further). */
void ob__worker_enter(ob__worker_t* w);
int ob__worker_leave(ob__worker_t* w);

/* The owner finished draining (after ops->drain returned 1). */
void ob__worker_drained(ob__worker_t* w);
/* From the client's close callback. */
void ob__worker_client_closed(ob__worker_t* w);

/* ops->close_client for an owner whose client is an SQS or an HTTP client:
** closes *client, sets it NULL when closed, then ob__worker_client_closed. */
struct ob__sqs_client_s;
struct ob__http_client_s;
void ob__worker_close_sqs(ob__worker_t* w, struct ob__sqs_client_s** client);
void ob__worker_close_http(ob__worker_t* w,
                           struct ob__http_client_s** client);

/* 1 when running (not stopped, not closing, and no ob_stop). */
int ob__worker_active(const ob__worker_t* w);

#endif
