/* SPDX-License-Identifier: Apache-2.0 */
/*
** The SQS consumer component (see consumer.h for the life of a message;
** consumer_queue.c asks the queue for its VisibilityTimeout and, for an
** until-idle run, its counts; consumer_int.h is the state both share).
**
** Everything runs on the engine's loop. Handling is synchronous (one
** transaction, inside ob__handle_external), one message per loop turn, so
** SQS requests in flight and timers progress between messages. Requests:
** at most one ReceiveMessage, one DeleteMessageBatch and one
** ChangeMessageVisibilityBatch in flight at a time, each up to 10 entries,
** and one GetQueueAttributes, never alongside a receive.
**
** Every message the consumer holds is in c->msgs, in receive order, in one
** of these states:
**   M_NEW        received, waiting for its transaction (the prefetch buffer)
**   M_DONE       committed (handled, duplicate, or in the failure store):
**                waiting for its delete
**   M_DELETING   in the DeleteMessageBatch in flight
**   M_VIS        retried (vis_s = the delay) or released at close (vis_s 0):
**                waiting for its visibility change, then forgotten but
**                for when it comes back (an until-idle run waits for it)
**   M_VIS_SENT   in the ChangeMessageVisibilityBatch in flight
**   M_DROPPED    left to SQS (not settled) while its keepalive extension is
**                in that batch: freed by the batch's callback
** M_NEW and M_DONE messages are kept invisible (the keepalive); ka_sent
** marks one whose extension is in the visibility batch in flight. A message
** in a batch in flight is never freed by anything but that batch's
** callback.
**
** pump() is the one place that decides what happens next (deletes,
** visibility changes, the next transaction, the next receive, closing);
** every callback and timer ends by calling it.
*/
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "core/consumer/consumer_tx.h"
#include "core/relay/cloudevents.h"
#include "core/util/errbuf.h"
#include "core/util/json_write.h"
#include "core/util/peer_text.h"
#include "core/relay/relay_policy.h"
#include "platform/aws/aws_config.h"
#include "platform/consumer/consumer.h"
#include "platform/consumer/consumer_int.h"
#include "platform/loop/worker.h"
#include "platform/sqs/sqs_client.h"

/* The component of this file's log records (ob__log). */
#undef OB__LOG_COMPONENT
#define OB__LOG_COMPONENT "consumer"

#define BATCH_MAX OB__CONSUMER_BATCH_MAX
/* Close: how long committed messages may take to be deleted (and unhandled
** ones released) before they are left to SQS. */
#define CLOSE_DEADLINE_MS 5000
/* After a keepalive extension failed as a whole: try again after this. */
#define KA_RETRY_MS 1000
/* An empty receive that came back sooner than this (short polling,
** wait_seconds 0) waits out the rest before the next one. */
#define MIN_EMPTY_POLL_MS 1000

static int running(const consumer_t* c) {
  return ob__consumer_running(c);
}
static int draining(const consumer_t* c) {
  return c->w.state == OB__WORKER_DRAINING;
}
static int client_gone(const consumer_t* c) {
  return ob__consumer_client_gone(c);
}
#define LINK(c) ((c)->w.link)

/* What the consumer decides on, the FIFO fields, and AWS's X-Ray header:
** all kept with the message (its headers). Not SenderId: it names the
** producer's IAM principal, which a terminal's failure store has no use
** for. */
static const char* const k_system_attrs[] = {
    "ApproximateReceiveCount", "ApproximateFirstReceiveTimestamp",
    "SentTimestamp", "MessageGroupId", "MessageDeduplicationId",
    "SequenceNumber", "AWSTraceHeader"};
static const char* const k_all_attrs[] = {"All"};

static void pump(consumer_t* c);

uint64_t ob__consumer_mono_ms(void) {
  return uv_hrtime() / 1000000u;
}

static uint64_t mono_ms(void) {
  return ob__consumer_mono_ms();
}

/* SQS's clock, as the SQS client learned it from Date headers. */
static int64_t server_now(const consumer_t* c) {
  ob__sqs_stats_t s;
  ob__sqs_client_stats(c->client, &s);
  return ob__engine_now(c->e) + s.clock_offset_ms;
}

static uint64_t vt_ms(const consumer_t* c) {
  return (uint64_t)c->vt_s * 1000u;
}

/* ---- messages ------------------------------------------------------------ */

static void msg_free(msg_t* m) {
  if (m == NULL) return;
  free(m->sqs_id);
  free(m->receipt);
  free(m->body);
  free(m->group_key);
  free(m->sqs_headers);
  free(m);
}

static msg_t* msg_new(consumer_t* c, const ob__sqs_message_t* s,
                      uint64_t now) {
  msg_t* m = calloc(1, sizeof *m);
  if (m == NULL) return NULL;
  m->sqs_id = strdup(s->message_id ? s->message_id : "");
  m->receipt = strdup(s->receipt_handle ? s->receipt_handle : "");
  m->body = malloc(s->body_len + 1);
  if (m->sqs_id == NULL || m->receipt == NULL || m->body == NULL) {
    msg_free(m);
    return NULL;
  }
  if (s->body_len > 0) memcpy(m->body, s->body, s->body_len);
  m->body[s->body_len] = '\0';
  m->body_len = s->body_len;
  if (c->fifo && s->group_id != NULL) {
    size_t nu = strlen(c->queue_url), ng = strlen(s->group_id);
    m->group_key = malloc(nu + ng + 2);
    if (m->group_key == NULL) {
      msg_free(m);
      return NULL;
    }
    memcpy(m->group_key, c->queue_url, nu);
    m->group_key[nu] = ' ';
    memcpy(m->group_key + nu + 1, s->group_id, ng + 1);
  }
  if (ob__sqs_headers_json(s, &m->sqs_headers) == OB_ENOMEM) {
    msg_free(m);
    return NULL;
  }
  m->receive_count = s->receive_count > INT_MAX ? INT_MAX
                     : s->receive_count < 0   ? 0
                                              : (int)s->receive_count;
  /* Without the attribute, now is a safe stand-in: it is not earlier. */
  m->first_receive_ms = s->first_receive_timestamp_ms >= 0
                            ? s->first_receive_timestamp_ms
                            : server_now(c);
  m->sent_ms = s->sent_timestamp_ms;
  /* We asked for VisibilityTimeout = vt_s (the one in force): it runs
  ** from about now. */
  m->visible_until = now + vt_ms(c);
  return m;
}

static void msg_append(consumer_t* c, msg_t* m) {
  msg_t** pp = &c->msgs;
  while (*pp != NULL) pp = &(*pp)->next;
  m->next = NULL;
  *pp = m;
}

/* Unlink and free. */
static void msg_remove(consumer_t* c, msg_t* m) {
  for (msg_t** pp = &c->msgs; *pp != NULL; pp = &(*pp)->next)
    if (*pp == m) {
      *pp = m->next;
      break;
    }
  msg_free(m);
}

/* Leave m to SQS (it comes back when its visibility ends). One whose
** keepalive extension is in the batch in flight is only marked: that
** batch's callback still reads it, and frees it. */
static void msg_drop(consumer_t* c, msg_t* m) {
  if (m->ka_sent) m->state = M_DROPPED;
  else msg_remove(c, m);
}

static int in_flight(const msg_t* m) {
  return m->ka_sent || m->state == M_DELETING || m->state == M_VIS_SENT;
}

/* Forget every message that no batch in flight refers to: it stays with
** SQS and comes back when its visibility ends (a committed one as a
** duplicate). */
static void drop_idle_messages(consumer_t* c) {
  msg_t** pp = &c->msgs;
  while (*pp != NULL) {
    msg_t* m = *pp;
    if (in_flight(m)) {
      pp = &m->next;
      continue;
    }
    *pp = m->next;
    msg_free(m);
  }
}

static msg_t* first_in(const consumer_t* c, int state) {
  for (msg_t* m = c->msgs; m != NULL; m = m->next)
    if (m->state == state) return m;
  return NULL;
}

/* Seconds this message may still be held invisible (<= 0: none). */
static int budget_s(const consumer_t* c, const msg_t* m) {
  return ob__consumer_visibility_budget_s(m->first_receive_ms, server_now(c));
}

/* Batch entry Ids: "0".."9", the index into batch.msgs. */
static void batch_id(char id[2], size_t i) {
  id[0] = (char)('0' + i);
  id[1] = '\0';
}

static int batch_index(const char* id) {
  if (id == NULL || id[0] < '0' || id[0] > '9' || id[1] != '\0') return -1;
  return id[0] - '0';
}

/* ---- deletes ------------------------------------------------------------- */

static void on_deleted(ob__sqs_req_t* req, int status) {
  consumer_t* c = req->data;
  ob_engine_t* e = c->e;

  c->del.inflight = 0;
  /* A failed delete is harmless: each of these messages is committed, so
  ** when SQS delivers it again the dedup guard finds it processed, it is
  ** acknowledged as a duplicate and deleted then. That also covers a lost
  ** reply (the delete applied, the answer gone): the client's retry of it
  ** succeeds or SQS never brings the message back. */
  if (status == 0) {
    for (size_t i = 0; i < req->batch.nfailed; i++) {
      const ob__sqs_batch_err_t* f = &req->batch.failed[i];
      int k = batch_index(f->id);
      ob__log(e, OB_LOG_WARN,
              "sqs consumer: delete of message %s refused: %s: %s; it will "
              "come back and be acknowledged as a duplicate",
              k >= 0 && (size_t)k < c->del.n ? c->del.msgs[k]->sqs_id : "?",
              f->code, f->message);
    }
  } else if (status != OB_ECANCELED) {
    ob__log(e, OB_LOG_WARN,
            "sqs consumer: DeleteMessageBatch of %zu messages failed: %s; "
            "they will come back and be acknowledged as duplicates",
            c->del.n, req->detail);
  }
  for (size_t i = 0; i < c->del.n; i++) msg_remove(c, c->del.msgs[i]);
  c->del.n = 0;
  ob__sqs_req_cleanup(req);
  pump(c);
}

/* Delete up to 10 committed messages. Only when SQS can be reached: an
** offline consumer keeps them (and drops them at close). */
static void flush_deletes(consumer_t* c) {
  ob__sqs_handle_entry_t ent[BATCH_MAX];
  char ids[BATCH_MAX][2];
  size_t n = 0;
  int rc;

  if (c->del.inflight || !LINK(c).online || client_gone(c)) return;
  for (msg_t* m = c->msgs; m != NULL && n < BATCH_MAX; m = m->next) {
    if (m->state != M_DONE || m->ka_sent) continue;
    batch_id(ids[n], n);
    ent[n].id = ids[n];
    ent[n].receipt_handle = m->receipt;
    ent[n].visibility_timeout = -1;
    c->del.msgs[n++] = m;
  }
  if (n == 0) return;
  c->del.req.data = c;
  rc = ob__sqs_delete_message_batch(c->client, &c->del.req, c->queue_url, ent,
                                   n, on_deleted);
  if (rc < 0) {
    ob__log(c->e, OB_LOG_WARN,
            "sqs consumer: cannot send DeleteMessageBatch: %s (%s); the "
            "messages will come back and be acknowledged as duplicates",
            ob__sqs_strerror(rc), c->del.req.detail);
    for (size_t i = 0; i < n; i++) msg_remove(c, c->del.msgs[i]);
    ob__sqs_req_cleanup(&c->del.req);
    return;
  }
  for (size_t i = 0; i < n; i++) c->del.msgs[i]->state = M_DELETING;
  c->del.n = n;
  c->del.inflight = 1;
}

/* ---- visibility: retries, releases, keepalive ---------------------------- */

static const ob__sqs_batch_err_t* entry_failed(const ob__sqs_req_t* req,
                                               size_t i) {
  for (size_t k = 0; k < req->batch.nfailed; k++)
    if (batch_index(req->batch.failed[k].id) == (int)i)
      return &req->batch.failed[k];
  return NULL;
}

static void on_visibility(ob__sqs_req_t* req, int status) {
  consumer_t* c = req->data;
  ob_engine_t* e = c->e;
  uint64_t now = mono_ms();

  c->cmv.inflight = 0;
  if (status != 0 && status != OB_ECANCELED)
    ob__log(e, OB_LOG_WARN,
            "sqs consumer: ChangeMessageVisibilityBatch failed: %s",
            req->detail);
  for (size_t i = 0; i < c->cmv.n; i++) {
    msg_t* m = c->cmv.msgs[i];
    const ob__sqs_batch_err_t* f = status == 0 ? entry_failed(req, i) : NULL;
    if (m->state == M_DROPPED) {
      msg_remove(c, m);
      continue;
    }
    if (m->state == M_VIS_SENT) {
      /* Not applied: it comes back when its current visibility ends, which
      ** is only sooner than asked. */
      if (f != NULL)
        ob__log(e, OB_LOG_WARN,
                "sqs consumer: visibility %d s of message %s refused: %s: %s",
                c->cmv.value[i], m->sqs_id, f->code, f->message);
      /* A retry: an until-idle run waits until it is back (a release at
      ** close, 0 s, is visible at once). */
      if (status == 0 && f == NULL && c->cmv.value[i] > 0)
        ob__consumer_idle_own_hidden(
            &c->idle, (int64_t)(c->cmv.sent_at +
                                (uint64_t)c->cmv.value[i] * 1000u));
      msg_remove(c, m);
      continue;
    }
    m->ka_sent = 0;
    if (status == 0 && f == NULL) {
      /* Counted from the call: the request left at sent_at or later. */
      m->visible_until = c->cmv.sent_at + (uint64_t)c->cmv.value[i] * 1000u;
    } else if (status == 0) {
      /* SQS no longer holds it for us (e.g. its visibility already ended):
      ** stop extending; handling it is still right, the dedup guard makes
      ** a second delivery a duplicate. */
      m->ka_off = 1;
      ob__log(e, OB_LOG_INFO,
              "sqs consumer: keepalive of message %s refused: %s: %s",
              m->sqs_id, f->code, f->message);
    } else {
      m->ka_retry_at = now + KA_RETRY_MS;
    }
  }
  c->cmv.n = 0;
  ob__sqs_req_cleanup(req);
  pump(c);
}

static void on_keepalive_timer(uv_timer_t* t) {
  pump(t->data);
}

/* Send the pending visibility changes (retry delays, releases) and the
** keepalive extensions that fall due, up to 10; arm the keepalive timer for
** the next one. An extension falls due when less than half the visibility
** timeout is left. */
static void flush_visibility(consumer_t* c, uint64_t now) {
  ob__sqs_handle_entry_t ent[BATCH_MAX];
  char ids[BATCH_MAX][2];
  uint64_t half = vt_ms(c) / 2;
  uint64_t next_due = UINT64_MAX;
  size_t n = 0;
  int rc;

  if (c->cmv.inflight || client_gone(c)) return;  /* its callback pumps */
  uv_timer_stop(&c->t_keepalive);
  if (!LINK(c).online) {
    /* Nothing can reach SQS: retried messages come back when their
    ** current visibility ends, a bit early; no extension is attempted. */
    msg_t** pp = &c->msgs;
    while (*pp != NULL) {
      msg_t* m = *pp;
      if (m->state == M_VIS) {
        *pp = m->next;
        msg_free(m);
      } else {
        pp = &m->next;
      }
    }
    return;
  }
  for (msg_t* m = c->msgs; m != NULL && n < BATCH_MAX; m = m->next) {
    if (m->state != M_VIS) continue;
    batch_id(ids[n], n);
    ent[n].id = ids[n];
    ent[n].receipt_handle = m->receipt;
    ent[n].visibility_timeout = m->vis_s;
    c->cmv.value[n] = m->vis_s;
    c->cmv.msgs[n++] = m;
  }
  for (msg_t* m = c->msgs; m != NULL; m = m->next) {
    uint64_t due;
    int ext;
    if ((m->state != M_NEW && m->state != M_DONE) || m->ka_off) continue;
    due = m->visible_until > half ? m->visible_until - half : 0;
    if (m->ka_retry_at > due) due = m->ka_retry_at;
    if (due > now || n == BATCH_MAX) {
      if (due < next_due) next_due = due;
      continue;
    }
    /* Never past 12 h after the first receive. */
    ext = budget_s(c, m);
    if (ext > c->vt_s) ext = c->vt_s;
    if (ext < 1) {
      m->ka_off = 1;
      ob__log(c->e, OB_LOG_INFO,
              "sqs consumer: message %s reached the 12 h visibility limit; "
              "no more keepalive",
              m->sqs_id);
      continue;
    }
    batch_id(ids[n], n);
    ent[n].id = ids[n];
    ent[n].receipt_handle = m->receipt;
    ent[n].visibility_timeout = ext;
    c->cmv.value[n] = ext;
    c->cmv.msgs[n++] = m;
  }
  if (n > 0) {
    c->cmv.req.data = c;
    rc = ob__sqs_change_visibility_batch(c->client, &c->cmv.req, c->queue_url,
                                        ent, n, on_visibility);
    if (rc == 0) {
      for (size_t i = 0; i < n; i++) {
        if (c->cmv.msgs[i]->state == M_VIS) c->cmv.msgs[i]->state = M_VIS_SENT;
        else c->cmv.msgs[i]->ka_sent = 1;
      }
      c->cmv.n = n;
      c->cmv.sent_at = now;
      c->cmv.inflight = 1;
      return;
    }
    ob__log(c->e, OB_LOG_WARN,
            "sqs consumer: cannot send ChangeMessageVisibilityBatch: %s (%s)",
            ob__sqs_strerror(rc), c->cmv.req.detail);
    ob__sqs_req_cleanup(&c->cmv.req);
    for (size_t i = 0; i < n; i++) {
      msg_t* m = c->cmv.msgs[i];
      if (m->state == M_VIS) {
        msg_remove(c, m);
      } else {
        m->ka_retry_at = now + KA_RETRY_MS;
        if (m->ka_retry_at < next_due) next_due = m->ka_retry_at;
      }
    }
  }
  if (next_due != UINT64_MAX)
    uv_timer_start(&c->t_keepalive, on_keepalive_timer,
                   next_due > now ? next_due - now : 0, 0);
}

/* ---- handling ------------------------------------------------------------ */

static int attempts_of(const msg_t* m) {
  return m->receive_count > 1 ? m->receive_count - 1 : 0;
}

/* A body that is not a valid CloudEvent: the failure store, in one
** transaction (core/consumer/consumer_tx.h), with everything SQS said about
** it (its attributes), so a person sees and can send again what arrived. */
static int store_invalid(consumer_t* c, const msg_t* m, const char* why) {
  char id[OB_UUID_BUFLEN];
  int stored;
  return ob__consumer_store_invalid(c->e, m->sqs_id, why, m->sqs_headers,
                                    m->body, m->body_len, attempts_of(m),
                                    m->sent_ms, id, &stored);
}

/* The headers a CloudEvent is handled with: its datacontenttype and trace
** context under their CloudEvents names (core/engine/msg_context.h), then
** what SQS said (m->sqs_headers). malloc'd; NULL when there is nothing to
** say or out of memory (*oom). */
static char* event_headers(const msg_t* m, const ob__cloudevent_t* ce,
                           int* oom) {
  const char* names[3] = {"datacontenttype", "traceparent", "tracestate"};
  const char* values[3] = {ce->content_type,
                           ce->traceparent[0] ? ce->traceparent : NULL,
                           ce->tracestate[0] ? ce->tracestate : NULL};
  const char* rest = m->sqs_headers;  /* "{...}" */
  char* out = NULL;
  for (int pass = 0; pass < 2; pass++) {
    size_t n = 0;
    int members = 0;
    ob__json_put_raw(out, &n, "{");
    for (int i = 0; i < 3; i++) {
      if (values[i] == NULL) continue;
      if (members++) ob__json_put_raw(out, &n, ",");
      ob__json_put_str(out, &n, names[i], SIZE_MAX);
      ob__json_put_raw(out, &n, ":");
      ob__json_put_str(out, &n, values[i], SIZE_MAX);
    }
    if (rest != NULL && strcmp(rest, "{}") != 0) {
      if (members++) ob__json_put_raw(out, &n, ",");
      ob__json_put_raw(out, &n, rest + 1);
    } else {
      ob__json_put_raw(out, &n, "}");
    }
    if (members == 0) return NULL;
    if (pass == 0) {
      out = malloc(n + 1);
      if (out == NULL) {
        *oom = 1;
        return NULL;
      }
    } else {
      out[n] = '\0';
    }
  }
  return out;
}

/* Other components (the relay) may have work: outbox rows committed. */
static void kick_others(consumer_t* c) {
  ob__worker_kick_others(&c->w);
}

/* m did not settle (a retry, a failure left to SQS): on a FIFO queue, the
** later messages of its group in hand must not overtake it. They go back
** to SQS at once (visibility 0); SQS gives none of them out while m is in
** flight, and then in order, after m. */
static void hold_group(consumer_t* c, const msg_t* m) {
  size_t n = 0;
  if (m->group_key == NULL) return;
  for (msg_t* o = m->next; o != NULL; o = o->next) {
    if (o->state != M_NEW || o->group_key == NULL ||
        strcmp(o->group_key, m->group_key) != 0)
      continue;
    o->state = M_VIS;
    o->vis_s = 0;
    n++;
  }
  if (n > 0)
    ob__log(c->e, OB_LOG_DEBUG,
            "sqs message %s did not settle: %zu later messages of its group "
            "released to keep their order",
            m->sqs_id, n);
}

/* One message, one transaction. Afterwards the message is M_DONE (to
** delete), M_VIS (to make invisible for the retry delay), or gone (nothing
** committed: SQS redelivers it). */
static void handle_one(consumer_t* c, msg_t* m) {
  ob_engine_t* e = c->e;
  ob__cloudevent_t ce;
  ob__external_msg_t row;
  ob_batch_result_t res;
  char why[256], idtext[96];
  char* headers = NULL;
  const char* outcome;
  int64_t delay = -1;
  int rc, vis, left = 0, oom = 0;

  rc = ob__cloudevent_decode(m->body, m->body_len, &ce, why, sizeof why);
  if (rc == OB_ENOMEM) {
    rc = ob__engine_seterr(e, OB_ENOMEM, "out of memory");
    goto fail;
  }
  if (rc != 0) {
    if (c->failures_to_sqs) {
      /* Left as it is: its redrive policy moves it to the dead-letter
      ** queue after maxReceiveCount receives. */
      ob__log(e, OB_LOG_WARN,
              "sqs message %s: invalid CloudEvent: %s; left in SQS for the "
              "queue's redrive policy",
              m->sqs_id, why);
      hold_group(c, m);
      msg_drop(c, m);
      return;
    }
    rc = store_invalid(c, m, why);
    if (rc < 0) goto fail;
    ob__worker_storage_ok(&c->w);
    m->state = M_DONE;
    ob__log(e, OB_LOG_DEBUG,
            "sqs message %s: invalid, committed to the failure store; "
            "deleting",
            m->sqs_id);
    return;
  }
  /* Ids are any string a producer chose: logged escaped and short. */
  ob__peer_text(ce.id, strlen(ce.id) > 64 ? 64 : strlen(ce.id), idtext,
                sizeof idtext);
  if (ce.trace_dropped)
    ob__log(e, OB_LOG_DEBUG,
            "sqs message %s (event %s): invalid trace context dropped",
            m->sqs_id, idtext);
  headers = event_headers(m, &ce, &oom);
  if (oom) {
    rc = ob__engine_seterr(e, OB_ENOMEM, "out of memory");
    goto fail;
  }
  memset(&row, 0, sizeof row);
  row.queue = OB__CONSUMER_QUEUE;
  row.message_id = ce.id;
  row.type = ce.type;
  row.headers = headers;
  row.body = ce.data;  /* NUL-terminated, as for queue rows */
  row.body_len = ce.data_len;
  row.attempts = attempts_of(m);
  row.created_at = m->sent_ms >= 0 ? m->sent_ms : ob__engine_now(e);
  row.source = ce.source;
  row.group_key = m->group_key;
  row.failures_to_source = c->failures_to_sqs;
  rc = ob__engine_handle_external(e, &row, &res, &delay, &left);
  free(headers);
  ob__cloudevent_free(&ce);
  if (rc < 0) goto fail;
  ob__worker_storage_ok(&c->w);
  if (left) {
    /* Failed for good, nothing stored: SQS keeps it (see above). */
    hold_group(c, m);
    msg_drop(c, m);
    return;
  }
  if (res.retried > 0) {
    hold_group(c, m);
    vis = ob__consumer_retry_visibility_s(delay, budget_s(c, m));
    if (vis < 0) {
      ob__log(e, OB_LOG_INFO,
              "sqs message %s (event %s): retry; the 12 h visibility limit "
              "is reached, it comes back when its visibility ends",
              m->sqs_id, idtext);
      msg_drop(c, m);
      return;
    }
    m->state = M_VIS;
    m->vis_s = vis;
    ob__log(e, OB_LOG_DEBUG,
            "sqs message %s (event %s): retry, invisible for %d s", m->sqs_id,
            idtext, vis);
    return;
  }
  /* Waiting for an effect, or behind its group: it is now a local queue
  ** row, committed, so SQS can forget it like a handled one. */
  outcome = res.handled      ? "handled"
            : res.duplicates ? "duplicate"
            : res.waiting    ? "queued locally (an effect, or its group)"
                             : "in the failure store";
  m->state = M_DONE;
  /* Tests stop a worker on this line: after COMMIT, before the delete. */
  ob__log(e, OB_LOG_DEBUG, "sqs message %s (event %s): %s, committed; deleting",
          m->sqs_id, idtext, outcome);
  if (res.handled > 0 || res.waiting > 0) kick_others(c);
  return;

fail:
  ob__cloudevent_free(&ce);
  /* Nothing was committed: leave the message to SQS, it comes back after
  ** its visibility timeout (no longer extended). Pause handling for a
  ** while, as the runner does after a failed batch. */
  ob__log(e, OB_LOG_ERROR,
          "sqs message %s: handling failed, left to SQS: %s: %s", m->sqs_id,
          ob_strerror(rc), ob_errmsg(e));
  hold_group(c, m);
  msg_drop(c, m);
  c->pause_until = mono_ms() + (uint64_t)ob__worker_storage_failed(&c->w);
}

/* A keepalive in flight must reach SQS before a (possibly slow) handler
** blocks the loop; wait for it, but not for long. */
static uint64_t keepalive_wait_ms(const consumer_t* c) {
  uint64_t w = vt_ms(c) / 4;
  return w < 100 ? 100 : w > 2000 ? 2000 : w;
}

/* The worker's timer: the next transaction. */
static void on_handle_timer(ob__worker_t* w) {
  consumer_t* c = w->self;
  uint64_t now = mono_ms();
  msg_t* m = first_in(c, M_NEW);

  if (now < c->pause_until ||
      (c->cmv.inflight && now < c->cmv.sent_at + keepalive_wait_ms(c))) {
    pump(c);  /* re-arms for the rest of the wait */
    return;
  }
  if (m != NULL) {
    /* A handler may call ob_network_changed or ob_detach: what they ask is
    ** done once the transaction returned, never on the message in hand. */
    ob__worker_enter(w);
    handle_one(c, m);
    uv_update_time(c->loop);  /* the transaction took time */
    if (ob__worker_leave(w)) return;  /* a handler asked to close */
  }
  pump(c);
}

static void arm_handle(consumer_t* c, uint64_t now) {
  uint64_t delay = 0;
  if (ob__engine_stopping(c->e) || first_in(c, M_NEW) == NULL) {
    ob__worker_disarm(&c->w);
    return;
  }
  if (now < c->pause_until) {
    delay = c->pause_until - now;
  } else if (c->cmv.inflight) {
    uint64_t until = c->cmv.sent_at + keepalive_wait_ms(c);
    if (now < until) delay = until - now;  /* its callback pumps sooner */
  }
  ob__worker_arm(&c->w, (int64_t)delay);
}

/* ---- receiving ----------------------------------------------------------- */

static void on_receive_timer(uv_timer_t* t) {
  consumer_t* c = t->data;
  c->recv_wait = 0;
  pump(c);
}

/* A request (op, e.g. "ReceiveMessage") could not reach SQS or was
** refused: offline, log, and hold the next receive for the probe delay.
** consumer_queue.c reaches it through c->request_failed. */
static void request_failed(consumer_t* c, const char* op, int status,
                           const char* detail) {
  ob_engine_t* e = c->e;
  int was_online = LINK(c).online;
  int64_t delay = ob__worker_link_failed(&c->w);

  ob_log_record_t lr = OB__LOG_RECORD(OB_LOG_ERROR, "consumer",
                                      "consumer_request_failed");
  lr.error = ob__err_public(status);
  /* Each failure is a record; the repeat limiter keeps one per window of
  ** an outage and counts the rest. */
  if (!ob__sqs_status_is_transient(status)) {
    ob__logr(e, &lr, "sqs consumer: %s failed: %s (%s); retrying in %lld ms",
             op, ob__sqs_strerror(status), detail, (long long)delay);
  } else {
    lr.level = OB_LOG_WARN;
    lr.event = "consumer_offline";
    ob__logr(e, &lr, "sqs consumer: %s: %s; retrying in %lld ms",
             was_online ? "offline" : "still offline", detail,
             (long long)delay);
  }
  c->recv_wait = 1;
  uv_timer_start(&c->t_receive, on_receive_timer, (uint64_t)delay, 0);
}

static void receive_failed(consumer_t* c, int status, const char* detail) {
  request_failed(c, "ReceiveMessage", status, detail);
}

static void on_received(ob__sqs_req_t* req, int status) {
  consumer_t* c = req->data;
  ob_engine_t* e = c->e;
  uint64_t now = mono_ms();

  c->recv_inflight = 0;
  if (status == OB_ECANCELED) goto out;
  if (status != 0) {
    if (running(c)) receive_failed(c, status, req->detail);
    goto out;
  }
  if (ob__worker_link_ok(&c->w))
    ob__log(e, OB_LOG_INFO, "sqs consumer: online again");
  c->received_once = 1;
  c->last_empty = req->receive.n == 0;
  ob__consumer_queue_received(c, req->receive.n, c->recv_started);
  for (size_t i = 0; i < req->receive.n; i++) {
    msg_t* m = msg_new(c, &req->receive.messages[i], now);
    if (m == NULL) {
      /* It comes back after its visibility timeout. */
      ob__log(e, OB_LOG_ERROR, "sqs consumer: out of memory for message %s",
              req->receive.messages[i].message_id);
      continue;
    }
    if (!running(c)) {
      /* Received while closing (the cancel came too late): release it. */
      m->state = M_VIS;
      m->vis_s = 0;
    }
    msg_append(c, m);
  }
  ob__log(e, OB_LOG_DEBUG, "sqs consumer: received %zu messages",
          req->receive.n);
  if (c->last_empty && running(c) &&
      now - c->recv_started < MIN_EMPTY_POLL_MS) {
    /* Nothing there and no long poll held us: don't hammer SQS. */
    c->recv_wait = 1;
    uv_timer_start(&c->t_receive, on_receive_timer,
                   MIN_EMPTY_POLL_MS - (now - c->recv_started), 0);
  }
out:
  ob__sqs_req_cleanup(req);
  pump(c);
}

static void maybe_receive(consumer_t* c) {
  ob__sqs_receive_t p;
  size_t done = 0;
  int rc;

  if (c->recv_inflight || c->recv_wait || !ob__worker_active(&c->w)) return;
  /* The queue's VisibilityTimeout first, or an until-idle run's counts. */
  if (ob__consumer_queue_step(c)) return;
  for (const msg_t* m = c->msgs; m != NULL; m = m->next) {
    if (m->state == M_NEW) return;  /* the prefetch buffer is not empty */
    if (m->state == M_DONE) done++;
  }
  /* Let the deletes catch up first. Offline, the receive is the probe. */
  if (LINK(c).online && done >= BATCH_MAX) return;
  ob__sqs_receive_init(&p);
  p.queue_url = c->queue_url;
  p.system_attribute_names = k_system_attrs;
  p.nsystem_attribute_names = sizeof k_system_attrs / sizeof k_system_attrs[0];
  p.message_attribute_names = k_all_attrs;
  p.nmessage_attribute_names = 1;
  p.max_messages = c->prefetch;
  p.wait_time_seconds = c->wait_s;
  /* The one in force (the queue's, read at start, or the configured one),
  ** always sent: the keepalive then knows exactly when each message would
  ** reappear, even if the queue's is changed while we run. */
  p.visibility_timeout = c->vt_s;
  c->recv.data = c;
  rc = ob__sqs_receive_message(c->client, &c->recv, &p, on_received);
  if (rc < 0) {
    receive_failed(c, rc, c->recv.detail);
    ob__sqs_req_cleanup(&c->recv);
    return;
  }
  c->recv_inflight = 1;
  c->recv_started = mono_ms();
  ob__log(c->e, OB_LOG_DEBUG, "sqs consumer: receiving (up to %d, %d s)",
          c->prefetch, c->wait_s);
}

/* ---- closing ------------------------------------------------------------- */

/* Everything is closed (the worker closed the client, then the timers). */
static void c_closed(ob__worker_t* w) {
  consumer_t* c = w->self;
  drop_idle_messages(c);
  c->client = NULL;
  ob__log(c->e, OB_LOG_INFO, "sqs consumer: closed");
}

static void c_close_client(ob__worker_t* w) {
  consumer_t* c = w->self;
  ob__worker_close_sqs(w, &c->client);
}

/* Close the client once nothing is in flight and nothing is left to send. */
static void maybe_finish_close(consumer_t* c) {
  if (!draining(c)) return;
  if (c->recv_inflight || c->del.inflight || c->cmv.inflight ||
      c->attrs_inflight)
    return;
  if (!LINK(c).online) drop_idle_messages(c);
  if (c->msgs != NULL) return;
  uv_timer_stop(&c->t_close);
  ob__worker_drained(&c->w);
}

static void on_close_deadline(uv_timer_t* t) {
  consumer_t* c = t->data;
  size_t n = 0;
  for (const msg_t* m = c->msgs; m != NULL; m = m->next) n++;
  ob__log(c->e, OB_LOG_WARN,
          "sqs consumer: close: %zu messages not settled after %d ms; they "
          "are left to SQS (committed ones come back as duplicates)",
          n, CLOSE_DEADLINE_MS);
  /* Offline from here on: nothing more is sent, what is held is dropped
  ** once its request is canceled. */
  LINK(c).online = 0;
  if (c->recv_inflight) (void)ob__sqs_cancel(&c->recv);
  if (c->del.inflight) (void)ob__sqs_cancel(&c->del.req);
  if (c->cmv.inflight) (void)ob__sqs_cancel(&c->cmv.req);
  ob__consumer_queue_drain(c);
  maybe_finish_close(c);
}

/* ---- the component ------------------------------------------------------- */

static void pump(consumer_t* c) {
  uint64_t now;
  if (client_gone(c) || c->w.in_work > 0) return;
  now = mono_ms();
  flush_deletes(c);
  flush_visibility(c, now);
  if (!running(c)) {
    maybe_finish_close(c);
    return;
  }
  arm_handle(c, now);
  maybe_receive(c);
}

static int c_open(ob__worker_t* w, uv_loop_t* loop, char* err,
                  size_t errlen) {
  consumer_t* c = w->self;
  return ob__sqs_client_open_aws(&c->client, loop, &c->aws,
                                 ob__engine_clock(w->e), err, errlen);
}

static void c_started(ob__worker_t* w) {
  consumer_t* c = w->self;
  c->e = w->e;
  c->loop = w->loop;
  ob__worker_timer_init(w, &c->t_receive);
  ob__worker_timer_init(w, &c->t_keepalive);
  ob__worker_timer_init(w, &c->t_close);
  memset(&c->recv, 0, sizeof c->recv);
  memset(&c->del, 0, sizeof c->del);
  memset(&c->cmv, 0, sizeof c->cmv);
  c->recv_inflight = c->recv_wait = 0;
  c->recv_started = 0;
  c->received_once = c->last_empty = 0;
  c->msgs = NULL;
  c->pause_until = 0;
  ob__consumer_queue_start(c, pump, request_failed);
  if (c->vt_cfg > 0)
    ob__log(c->e, OB_LOG_INFO,
            "sqs consumer: consuming %s (prefetch %d, long poll %d s, "
            "visibility %d s, configured)",
            c->queue_url, c->prefetch, c->wait_s, c->vt_s);
  else
    ob__log(c->e, OB_LOG_INFO,
            "sqs consumer: consuming %s (prefetch %d, long poll %d s, "
            "visibility: the queue's VisibilityTimeout)",
            c->queue_url, c->prefetch, c->wait_s);
  pump(c);
}

static void c_network(ob__worker_t* w) {
  consumer_t* c = w->self;
  if (c->recv_wait) {
    uv_timer_stop(&c->t_receive);
    c->recv_wait = 0;
  }
  pump(c);
}

/* Idle: nothing to handle, nothing being deleted or changed, and either
** SQS can't be reached (what is held can't progress now), or the last
** receive came back empty, nothing is held, and the queue's counts say the
** rest (consumer_queue.c: messages others hold, our own retries). */
static int c_idle(ob__worker_t* w) {
  consumer_t* c = w->self;
  /* Only an until-idle run asks: from now on, empty receives are followed
  ** by the counts. */
  c->idle_asked = 1;
  if (w->in_work > 0 || c->del.inflight || c->cmv.inflight)
    return OB__IDLE_BUSY;
  if (first_in(c, M_NEW) != NULL) return OB__IDLE_BUSY;
  /* Offline: whether the queue holds anything is unknown. */
  if (!LINK(c).online) return OB__IDLE_BLOCKED;
  if (c->msgs != NULL || !c->received_once || !c->last_empty)
    return OB__IDLE_BUSY;
  return ob__consumer_queue_idle(c);
}

/* Closing begins (the worker's drain): deletes and releases go out until
** the deadline, then maybe_finish_close lets the worker close the client. */
static int c_drain(ob__worker_t* w) {
  consumer_t* c = w->self;
  size_t release = 0, commit = 0;

  uv_timer_stop(&c->t_receive);
  uv_timer_stop(&c->t_keepalive);
  c->recv_wait = 0;
  /* The long poll: its callback follows with OB_ECANCELED (or with the
  ** messages it already had, which are then released). */
  if (c->recv_inflight) (void)ob__sqs_cancel(&c->recv);
  ob__consumer_queue_drain(c);
  /* Handling is synchronous, so no message is half-handled here. What was
  ** committed is deleted (if SQS answers before the deadline); what was
  ** received but not handled is made visible again at once for whoever
  ** consumes next. */
  for (msg_t* m = c->msgs; m != NULL; m = m->next) {
    if (m->state == M_NEW) {
      m->state = M_VIS;
      m->vis_s = 0;
      release++;
    } else if (m->state == M_DONE || m->state == M_DELETING) {
      commit++;
    }
  }
  if (release + commit > 0)
    ob__log(c->e, OB_LOG_INFO,
            "sqs consumer: closing: deleting %zu committed messages, "
            "releasing %zu unhandled",
            commit, release);
  uv_timer_start(&c->t_close, on_close_deadline, CLOSE_DEADLINE_MS, 0);
  pump(c);
  return 1;
}

static void c_destroy(void* self) {
  consumer_t* c = self;
  if (c == NULL) return;
  while (c->msgs != NULL) {
    msg_t* m = c->msgs;
    c->msgs = m->next;
    msg_free(m);
  }
  free(c->queue_url);
  ob__aws_config_free(&c->aws);
  free(c);
}

/* ---- enabling ------------------------------------------------------------ */

static const ob__worker_ops_t consumer_ops = {
    .open = c_open,
    .close_client = c_close_client,
    .started = c_started,
    .run = on_handle_timer,
    .idle = c_idle,
    .kick = NULL,  /* SQS is the source of work, not commits */
    .network = c_network,
    .drain = c_drain,
    .closed = c_closed,
    .destroy = c_destroy,
};

void ob_consumer_options_init(ob_consumer_options_t* o) {
  memset(o, 0, sizeof *o);
  o->wait_seconds = 20;
  o->prefetch = 1;
  o->visibility_timeout_s = 0;  /* the queue's */
  ob__probe_options_init(&o->probe, 300000);
}

int ob__consumer_enable_env(ob_engine_t* e, const ob_consumer_options_t* o,
                            ob__aws_getenv_fn getenv_fn, void* env_ctx,
                            char* errbuf, size_t errlen) {
  consumer_t* c = NULL;
  char err[768] = "";
  char warn[768];
  int rc, plain;

  if (errbuf != NULL && errlen > 0) errbuf[0] = '\0';
  rc = ob__consumer_options_check(o, errbuf, errlen);
  if (rc == 0)
    rc = ob__worker_check(e, OB__CONSUMER_NAME, &o->probe, errbuf, errlen);
  if (rc < 0) return rc;
  c = calloc(1, sizeof *c);
  if (c == NULL) return OB_ENOMEM;
  c->queue_url = strdup(o->queue_url);
  if (c->queue_url == NULL) {
    rc = OB_ENOMEM;
    goto fail;
  }
  c->wait_s = o->wait_seconds;
  c->prefetch = o->prefetch;
  c->vt_cfg = o->visibility_timeout_s;
  c->fifo = ob__relay_queue_is_fifo(c->queue_url);
  c->failures_to_sqs = o->failures_to_sqs != 0;
  rc = ob__aws_config_load(&c->aws, getenv_fn, env_ctx, NULL, err, sizeof err);
  if (rc < 0) {
    /* Every configuration problem is the caller's to fix: OB_EINVAL. */
    if (rc != OB_ENOMEM) rc = OB_EINVAL;
    goto fail;
  }
  /* http:// only with the opt-in (docs/security.md, "Plain HTTP"). */
  plain = rc = ob__aws_plain_http_check(&c->aws, o->allow_http, warn,
                                        sizeof warn, err, sizeof err);
  if (rc < 0) goto fail;
  rc = ob__worker_register(&c->w, e, OB__CONSUMER_NAME, &consumer_ops, c,
                           &o->probe, err, sizeof err);
  if (rc < 0) goto fail;
  if (plain == 1) ob__log(e, OB_LOG_WARN, "sqs consumer: %s", warn);
  ob__log(e, OB_LOG_DEBUG, "sqs consumer enabled for %s (endpoint %s)",
          c->queue_url, c->aws.endpoint.url);
  return 0;

fail:
  (void)ob__errbuf_set(errbuf, errlen, 0, "%s", err[0] ? err : ob_strerror(rc));
  c_destroy(c);
  return rc;
}

int ob_consumer_enable(ob_engine_t* e, const ob_consumer_options_t* o,
                       char* errbuf, size_t errlen) {
  return ob__consumer_enable_env(e, o, NULL, NULL, errbuf, errlen);
}
