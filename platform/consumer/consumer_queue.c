/* SPDX-License-Identifier: Apache-2.0 */
/*
** What the SQS consumer asks its queue about itself (consumer_int.h):
**
**   - the queue's VisibilityTimeout, once per start, before the first
**     receive, when visibility_timeout_s is 0: every receive then sends it
**     and the keepalive extends by it. Not read at ob_consumer_enable: an
**     offline terminal must be able to enable and attach without SQS.
**     Unreadable: OB__CONSUMER_DEFAULT_VISIBILITY_S and a warning; when SQS
**     could not be reached at all, it is read again once SQS answers.
**   - for an until-idle run, after every empty receive, the counts
**     (GetQueueAttributes ApproximateNumberOfMessages, ...NotVisible,
**     ...Delayed) that core/consumer/consumer_idle.h decides on: done, keep
**     receiving (messages a killed consumer held come back when their
**     visibility ends), or stalled.
**
** One request at a time, never while a receive is in flight (the receive
** waits for it: ob__consumer_queue_step), so the counts always describe the
** queue after the last empty receive.
*/
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/consumer/consumer_policy.h"
#include "platform/consumer/consumer_int.h"

/* The component of this file's log records (ob__log). */
#undef OB__LOG_COMPONENT
#define OB__LOG_COMPONENT "consumer"

/* With failures_to_sqs, RedrivePolicy too: without one, a message left
** in SQS comes back forever. */
static const char* const k_vt_attr[] = {"VisibilityTimeout", "RedrivePolicy"};
static const char* const k_count_attrs[] = {
    "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible",
    "ApproximateNumberOfMessagesDelayed"};

void ob__consumer_queue_start(consumer_t* c, void (*pump)(consumer_t* c),
                              void (*request_failed)(consumer_t* c,
                                                     const char* op,
                                                     int status,
                                                     const char* detail)) {
  c->pump = pump;
  c->request_failed = request_failed;
  memset(&c->attrs, 0, sizeof c->attrs);
  c->attrs_inflight = 0;
  c->attrs_counts = 0;
  if (c->vt_cfg > 0) {
    c->vt_s = c->vt_cfg;
    c->vt_source = OB_CONSUMER_VT_CONFIGURED;
    /* Read anyway for the RedrivePolicy (the configured one stays). */
    c->vt_read = c->failures_to_sqs ? VT_READ_PENDING : VT_READ_NONE;
  } else {
    /* In force until the queue's is read (a receive never goes out before
    ** that, unless the read could not reach SQS). */
    c->vt_s = OB__CONSUMER_DEFAULT_VISIBILITY_S;
    c->vt_source = OB_CONSUMER_VT_UNKNOWN;
    c->vt_read = VT_READ_PENDING;
  }
  c->idle_asked = 0;
  c->last_empty_started = 0;
  c->counts_fresh = 0;
  c->counts_asked = 0;
  c->counts.known = 0;
  c->counts.visible = c->counts.not_visible = c->counts.delayed = -1;
  c->counts_error[0] = '\0';
  c->counts_warned = 0;
  ob__consumer_idle_init(&c->idle);
  c->verdict = OB__CONSUMER_IDLE_WAIT;
  c->stalled = 0;
  c->waited_ms = 0;
}

/* The SQS error code of a refusal (never its message: it is SQS's text,
** and the code is what a person looks up), else the status name. */
static void copy_error(consumer_t* c, const ob__sqs_req_t* req, int status) {
  const char* code = req->error.code[0] ? req->error.code
                                        : ob__sqs_strerror(status);
  snprintf(c->counts_error, sizeof c->counts_error, "%s", code);
}

/* ---- the queue's VisibilityTimeout --------------------------------------- */

static void on_visibility_attr(ob__sqs_req_t* req, int status) {
  consumer_t* c = req->data;
  ob_engine_t* e = c->e;
  int v;

  c->attrs_inflight = 0;
  if (status == OB_ECANCELED) goto out;  /* closing */
  if (status == 0 && c->failures_to_sqs &&
      ob__sqs_attr_get(&req->attrs, "RedrivePolicy") == NULL)
    ob__log(e, OB_LOG_WARN,
            "sqs consumer: failures are left in SQS, but the queue has no "
            "RedrivePolicy: a message that fails for good comes back "
            "forever; give the queue a dead-letter queue");
  if (c->vt_cfg > 0) {
    /* Read for the RedrivePolicy only: the configured visibility stays,
    ** and a failed read is not tried again (the receive shows what is
    ** wrong with SQS). */
    if (status == 0 && ob__worker_link_ok(&c->w))
      ob__log(e, OB_LOG_INFO, "sqs consumer: online again");
    c->vt_read = VT_READ_NONE;
    goto out;
  }
  if (status == 0) {
    if (ob__worker_link_ok(&c->w))
      ob__log(e, OB_LOG_INFO, "sqs consumer: online again");
    v = ob__consumer_queue_visibility_s(
        ob__sqs_attr_get(&req->attrs, "VisibilityTimeout"));
    c->vt_read = VT_READ_NONE;
    if (v > 0) {
      c->vt_s = v;
      c->vt_source = OB_CONSUMER_VT_QUEUE;
      ob__log(e, OB_LOG_INFO,
              "sqs consumer: visibility %d s (the queue's VisibilityTimeout)",
              v);
    } else {
      c->vt_source = OB_CONSUMER_VT_DEFAULT;
      ob__log(e, OB_LOG_WARN,
              "sqs consumer: the queue's VisibilityTimeout is missing or not "
              "0..43200; using %d s",
              c->vt_s);
    }
    goto out;
  }
  if (ob__sqs_status_is_transient(status)) {
    /* SQS can't be reached: the receive is the probe; read it again once
    ** SQS answers. */
    c->vt_read = VT_READ_AGAIN;
    c->vt_source = OB_CONSUMER_VT_DEFAULT;
    ob__log(e, OB_LOG_WARN,
            "sqs consumer: cannot read the queue's VisibilityTimeout: %s; "
            "using %d s until it can be read",
            req->detail, c->vt_s);
    if (ob__consumer_running(c))
      c->request_failed(c, "GetQueueAttributes", status,
                                  req->detail);
    goto out;
  }
  /* Refused (no sqs:GetQueueAttributes permission, no such queue): not
  ** asked again this start; a missing queue shows in the receive too. */
  c->vt_read = VT_READ_NONE;
  c->vt_source = OB_CONSUMER_VT_DEFAULT;
  ob__log(e, OB_LOG_WARN,
          "sqs consumer: cannot read the queue's VisibilityTimeout: %s (%s); "
          "using %d s",
          ob__sqs_strerror(status), req->detail, c->vt_s);
out:
  ob__sqs_req_cleanup(req);
  c->pump(c);
}

/* ---- the counts ---------------------------------------------------------- */

/* A non-negative decimal count, -1 if value is not one. */
static int64_t parse_count(const char* value) {
  char* end;
  long long v;
  if (value == NULL || value[0] < '0' || value[0] > '9') return -1;
  errno = 0;
  v = strtoll(value, &end, 10);
  if (errno != 0 || *end != '\0' || v < 0) return -1;
  return (int64_t)v;
}

static void log_verdict(consumer_t* c, int was_waiting) {
  ob_engine_t* e = c->e;
  const ob__consumer_counts_t* n = &c->counts;
  int64_t end = ob__consumer_idle_deadline_ms(&c->idle, c->vt_s);
  int64_t left_ms = end - (int64_t)c->last_empty_started;

  if (c->verdict == OB__CONSUMER_IDLE_DONE) {
    ob__log(e, OB_LOG_DEBUG, "sqs consumer: the queue is empty");
    return;
  }
  if (c->verdict == OB__CONSUMER_IDLE_STALLED) {
    if (n->known)
      ob__log(e, OB_LOG_WARN,
              "sqs consumer: not done: after %lld ms the queue still reports "
              "%lld message(s) in flight, %lld delayed, %lld visible; someone "
              "holds them longer than the visibility timeout (%d s)",
              (long long)c->waited_ms, (long long)n->not_visible,
              (long long)n->delayed, (long long)n->visible, c->vt_s);
    else
      ob__log(e, OB_LOG_WARN,
              "sqs consumer: not done: the queue's message counts can't be "
              "read (%s); waited %lld ms for messages others may hold",
              c->counts_error, (long long)c->waited_ms);
    return;
  }
  if (c->idle.since_ms < 0) {
    /* Nothing reported, but one of our retries is still hidden. */
    ob__log(e, OB_LOG_DEBUG,
            "sqs consumer: waiting for a retried message to come back");
    return;
  }
  ob__log(e, was_waiting ? OB_LOG_DEBUG : OB_LOG_INFO,
          "sqs consumer: the queue reports %lld message(s) in flight, %lld "
          "delayed, %lld visible; receiving for up to %lld ms more",
          (long long)n->not_visible, (long long)n->delayed,
          (long long)n->visible, (long long)(left_ms > 0 ? left_ms : 0));
}

static void on_counts(ob__sqs_req_t* req, int status) {
  consumer_t* c = req->data;
  ob_engine_t* e = c->e;
  int was_waiting = c->idle.since_ms >= 0;
  int64_t v[3];

  c->attrs_inflight = 0;
  if (status == OB_ECANCELED) goto out;
  if (status != 0 && ob__sqs_status_is_transient(status)) {
    /* Offline: idle() says blocked, as for a failed receive. */
    if (ob__consumer_running(c))
      c->request_failed(c, "GetQueueAttributes", status,
                                  req->detail);
    goto out;
  }
  c->counts.known = 0;
  c->counts.visible = c->counts.not_visible = c->counts.delayed = -1;
  if (status == 0) {
    if (ob__worker_link_ok(&c->w))
      ob__log(e, OB_LOG_INFO, "sqs consumer: online again");
    for (int i = 0; i < 3; i++)
      v[i] = parse_count(ob__sqs_attr_get(&req->attrs, k_count_attrs[i]));
    if (v[0] >= 0 && v[1] >= 0 && v[2] >= 0) {
      c->counts.known = 1;
      c->counts.visible = v[0];
      c->counts.not_visible = v[1];
      c->counts.delayed = v[2];
    } else {
      snprintf(c->counts_error, sizeof c->counts_error, "%s",
               "counts missing from the answer");
    }
  } else {
    copy_error(c, req, status);
  }
  if (!c->counts.known && !c->counts_warned) {
    c->counts_warned = 1;
    ob__log(e, OB_LOG_WARN,
            "sqs consumer: cannot read the queue's message counts: %s%s%s%s; "
            "an until-idle run waits out the visibility timeout and then "
            "can't call the queue done",
            c->counts_error, status != 0 ? " (" : "",
            status != 0 ? req->detail : "", status != 0 ? ")" : "");
  }
  c->counts_fresh = 1;
  c->verdict = ob__consumer_idle_decide(
      &c->idle, &c->counts, (int64_t)c->last_empty_started, c->vt_s);
  c->stalled = c->verdict == OB__CONSUMER_IDLE_STALLED;
  c->waited_ms = c->idle.since_ms >= 0 ? (int64_t)c->last_empty_started -
                                             c->idle.since_ms
                                       : 0;
  log_verdict(c, was_waiting);
out:
  ob__sqs_req_cleanup(req);
  c->pump(c);
}

/* ---- for consumer.c ------------------------------------------------------ */

static int send_attrs(consumer_t* c, int counts) {
  int rc;
  c->attrs.data = c;
  if (counts)
    rc = ob__sqs_get_queue_attributes(
        c->client, &c->attrs, c->queue_url, k_count_attrs,
        sizeof k_count_attrs / sizeof k_count_attrs[0], on_counts);
  else
    rc = ob__sqs_get_queue_attributes(c->client, &c->attrs, c->queue_url,
                                      k_vt_attr, c->failures_to_sqs ? 2 : 1,
                                      on_visibility_attr);
  if (rc < 0) {
    ob__log(c->e, OB_LOG_WARN,
            "sqs consumer: cannot send GetQueueAttributes: %s (%s)",
            ob__sqs_strerror(rc), c->attrs.detail);
    ob__sqs_req_cleanup(&c->attrs);
    return rc;
  }
  c->attrs_inflight = 1;
  c->attrs_counts = counts;
  return 0;
}

int ob__consumer_queue_step(consumer_t* c) {
  if (c->attrs_inflight) return 1;
  if (c->vt_read == VT_READ_PENDING ||
      (c->vt_read == VT_READ_AGAIN && c->w.link.online)) {
    if (send_attrs(c, 0) == 0) return 1;
    c->vt_read = VT_READ_NONE;  /* the default stays in force */
    c->vt_source = OB_CONSUMER_VT_DEFAULT;
    return 0;
  }
  /* The counts matter only once nothing is held and the last receive was
  ** empty (idle() is busy otherwise), and only while SQS answers. */
  if (c->idle_asked && c->received_once && c->last_empty &&
      !c->counts_fresh && c->msgs == NULL && c->w.link.online) {
    c->counts_asked = 1;
    if (send_attrs(c, 1) == 0) return 1;
    /* Could not even be sent: counts unknown, decided as such. */
    c->counts.known = 0;
    snprintf(c->counts_error, sizeof c->counts_error, "%s",
             "request not sent");
    c->counts_fresh = 1;
    c->verdict = ob__consumer_idle_decide(
        &c->idle, &c->counts, (int64_t)c->last_empty_started, c->vt_s);
    c->stalled = c->verdict == OB__CONSUMER_IDLE_STALLED;
  }
  return 0;
}

void ob__consumer_queue_received(consumer_t* c, size_t n, uint64_t started) {
  c->counts_fresh = 0;
  if (n > 0) {
    ob__consumer_idle_progress(&c->idle);
    c->stalled = 0;
  } else {
    c->last_empty_started = started;
  }
}

int ob__consumer_queue_idle(consumer_t* c) {
  if (!c->counts_fresh) return OB__IDLE_BUSY;  /* asked after this receive */
  switch (c->verdict) {
    case OB__CONSUMER_IDLE_DONE: return OB__IDLE_DONE;
    case OB__CONSUMER_IDLE_STALLED: return OB__IDLE_BLOCKED;
    default: return OB__IDLE_BUSY;
  }
}

void ob__consumer_queue_drain(consumer_t* c) {
  if (c->attrs_inflight) (void)ob__sqs_cancel(&c->attrs);
}

/* ---- ob_consumer_status -------------------------------------------------- */

int ob_consumer_status(ob_engine_t* e, ob_consumer_status_t* st) {
  const consumer_t* c = NULL;
  if (st != NULL) {
    memset(st, 0, sizeof *st);
    st->online = -1;
    st->counts = -1;
    st->visible = st->not_visible = st->delayed = -1;
  }
  if (e == NULL || st == NULL) return OB_EINVAL;
  for (size_t i = 0; i < ob__engine_ncomponents(e); i++) {
    const ob__component_t* k = ob__engine_component(e, i);
    if (strcmp(k->name, OB__CONSUMER_NAME) == 0) {
      c = ((const ob__worker_t*)k->self)->self;
      break;
    }
  }
  if (c == NULL) return OB_ENOTFOUND;
  if (c->e == NULL) return 0;  /* never started */
  st->online = c->w.link.online ? 1 : 0;
  /* While the queue's is being read, nothing is in force yet. */
  st->visibility_timeout_s =
      c->vt_source == OB_CONSUMER_VT_UNKNOWN ? 0 : c->vt_s;
  st->visibility_source = c->vt_source;
  if (c->counts_asked && (c->counts.known || c->counts_error[0])) {
    st->counts = c->counts.known ? 1 : 0;
    if (c->counts.known) {
      st->visible = c->counts.visible;
      st->not_visible = c->counts.not_visible;
      st->delayed = c->counts.delayed;
    } else {
      snprintf(st->counts_error, sizeof st->counts_error, "%s",
               c->counts_error);
    }
  }
  st->stalled = c->stalled;
  st->waited_ms = c->waited_ms;
  return 0;
}
