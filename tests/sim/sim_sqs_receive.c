/* SPDX-License-Identifier: Apache-2.0 */
/*
** The consumer's side of the simulated SQS (sim_sqs_int.h), from AWS's
** documentation (Amazon SQS API Reference; Developer Guide: "Visibility
** timeout", "Short and long polling", "At-least-once delivery", "FIFO
** queue delivery logic"):
**   - ReceiveMessage: MaxNumberOfMessages 1..10, WaitTimeSeconds 0..20 (a
**     long poll answers as soon as a message is there, or empty when the
**     wait ends; a short poll samples a subset of the servers and may miss
**     messages), VisibilityTimeout 0..43200; a new receipt handle on every
**     receive; ApproximateReceiveCount, ApproximateFirstReceiveTimestamp,
**     SentTimestamp and, on FIFO, MessageGroupId, MessageDeduplicationId,
**     SequenceNumber when asked; the message attributes asked for, with
**     MD5OfMessageAttributes; MD5OfBody. A message not deleted before its
**     visibility ends is received again;
**   - standard queues: at-least-once (a copy may be delivered a second
**     time, and a delete that misses a server's copy lets the message come
**     back once its visibility ends), best-effort order (messages may come
**     out of send order);
**   - FIFO queues: messages of a group in send order; no message of a
**     group while an earlier one is in flight; one receive returns as many
**     messages of one group as it can before the next group;
**   - DeleteMessage[Batch]: only the latest receipt handle deletes; an
**     older one (the message was received again since) succeeds and
**     deletes nothing (DeleteMessage's documented behaviour); a handle of
**     a message already deleted succeeds; a malformed one is
**     ReceiptHandleIsInvalid;
**   - ChangeMessageVisibility[Batch]: only on a message in flight under
**     that handle (else MessageNotInflight), 0..43200 s and never past
**     12 h after that receive (InvalidParameterValue); 0 makes it visible
**     at once;
**   - GetQueueAttributes: VisibilityTimeout and the approximate counts
**     (exact here).
** Not modelled: ReceiveRequestAttemptId, redrive to a dead-letter queue,
** the in-flight limit (OverLimit), purges, retention (4 days).
*/
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "tests/sim/sim.h"
#include "tests/sim/sim_sqs_int.h"

static int int_param(const cJSON* req, const char* name, int dflt, int lo,
                     int hi, int* out) {
  const cJSON* v = cJSON_GetObjectItemCaseSensitive(req, name);
  if (v == NULL) {
    *out = dflt;
    return 0;
  }
  if (!cJSON_IsNumber(v) || v->valuedouble < lo || v->valuedouble > hi)
    return -1;
  *out = (int)v->valuedouble;
  return 0;
}

/* A visibility that ended makes the message visible again. */
static void expire(sqs_queue_t* q, int64_t now) {
  for (size_t i = 0; i < q->n; i++)
    if (q->m[i]->in_flight && q->m[i]->visible_at <= now)
      q->m[i]->in_flight = 0;
}

static int visible(const sqs_msg_t* m, int64_t now) {
  return !m->in_flight && m->visible_at <= now;
}

static int names_has(const cJSON* names, const char* name) {
  const cJSON* it;
  cJSON_ArrayForEach(it, names) {
    const char* s = cJSON_IsString(it) ? it->valuestring : "";
    size_t n = strlen(s);
    if (strcmp(s, "All") == 0 || strcmp(s, ".*") == 0 ||
        strcmp(s, name) == 0)
      return 1;
    /* "prefix.*" */
    if (n > 2 && strcmp(s + n - 2, ".*") == 0 &&
        strncmp(s, name, n - 1) == 0)
      return 1;
  }
  return 0;
}

static void add_i64(cJSON* o, const char* k, int64_t v) {
  char b[24];
  snprintf(b, sizeof b, "%lld", (long long)v);
  cJSON_AddStringToObject(o, k, b);
}

/* One received message as ReceiveMessage renders it. */
static cJSON* render(const sqs_queue_t* q, const sqs_msg_t* m,
                     const cJSON* sys, const cJSON* mnames) {
  cJSON* o = cJSON_CreateObject();
  cJSON* a = cJSON_AddObjectToObject(o, "Attributes");
  cJSON_AddStringToObject(o, "MessageId", m->id);
  cJSON_AddStringToObject(o, "ReceiptHandle", m->receipt);
  cJSON_AddStringToObject(o, "MD5OfBody", m->md5_body);
  cJSON_AddStringToObject(o, "Body", m->body);
  if (names_has(sys, "ApproximateReceiveCount"))
    add_i64(a, "ApproximateReceiveCount", m->receive_count);
  if (names_has(sys, "ApproximateFirstReceiveTimestamp"))
    add_i64(a, "ApproximateFirstReceiveTimestamp", m->first_receive_ms);
  if (names_has(sys, "SentTimestamp")) add_i64(a, "SentTimestamp", m->sent_ms);
  if (names_has(sys, "SenderId"))
    cJSON_AddStringToObject(a, "SenderId", "AIDASIMULATEDPRODUCER");
  if (q->fifo) {
    if (names_has(sys, "MessageGroupId"))
      cJSON_AddStringToObject(a, "MessageGroupId", m->group);
    if (names_has(sys, "MessageDeduplicationId"))
      cJSON_AddStringToObject(a, "MessageDeduplicationId", m->dedup);
    if (names_has(sys, "SequenceNumber"))
      cJSON_AddStringToObject(a, "SequenceNumber", m->seq);
  }
  if (m->attrs != NULL) {
    /* Only the attributes asked for; the MD5 then covers those. The
    ** world's producers send none or ask for All, so the stored MD5 of
    ** all of them is right whenever any is returned. */
    cJSON* all = cJSON_Parse(m->attrs);
    cJSON* keep = cJSON_CreateObject();
    cJSON* it;
    int n = 0;
    cJSON_ArrayForEach(it, all) if (names_has(mnames, it->string)) {
      cJSON_AddItemToObject(keep, it->string, cJSON_Duplicate(it, 1));
      n++;
    }
    cJSON_Delete(all);
    if (n > 0) {
      cJSON_AddItemToObject(o, "MessageAttributes", keep);
      cJSON_AddStringToObject(o, "MD5OfMessageAttributes", m->md5_attrs);
    } else {
      cJSON_Delete(keep);
    }
  }
  return o;
}

static void new_receipt(sim_sqs_t* s, sqs_msg_t* m) {
  snprintf(m->receipt, sizeof m->receipt, "AQEB%016llx%08x%016llx",
           (unsigned long long)m->uid, (unsigned)m->receive_count,
           (unsigned long long)sim_rng_next(&s->rng));
}

/* The messages a receive hands out, in the order returned. */
static size_t pick(sim_sqs_t* s, sqs_queue_t* q, int max, int short_poll,
                   int64_t now, sqs_msg_t** out) {
  size_t n = 0;
  if (q->fifo) {
    /* Groups with a message in flight give nothing; the others, in the
    ** order of their first message, as many of theirs as fit. */
    for (size_t i = 0; i < q->n && n < (size_t)max; i++) {
      const char* g = q->m[i]->group;
      int blocked = 0, taken = 0;
      for (size_t j = 0; j < q->n && !blocked; j++)
        if (strcmp(q->m[j]->group, g) == 0 &&
            (q->m[j]->in_flight || (j < i && !visible(q->m[j], now))))
          blocked = 1;
      for (size_t k = 0; k < n; k++)
        if (strcmp(out[k]->group, g) == 0) taken = 1;
      if (blocked || taken) continue;
      for (size_t j = i; j < q->n && n < (size_t)max; j++)
        if (strcmp(q->m[j]->group, g) == 0 && visible(q->m[j], now))
          out[n++] = q->m[j];
    }
    return n;
  }
  /* Standard: what the servers asked hold (all of them on a long poll, a
  ** sample on a short one), nearly in send order. */
  for (size_t i = 0; i < q->n && n < (size_t)max + 4; i++)
    if (visible(q->m[i], now) && (!short_poll || sim_rng_chance(&s->rng, 600)))
      out[n++] = q->m[i];
  for (size_t i = 0; i + 1 < n; i++) {
    size_t j = i + (size_t)sim_rng_below(&s->rng, n - i < 4 ? n - i : 4);
    sqs_msg_t* t = out[i];
    out[i] = out[j];
    out[j] = t;
  }
  return n < (size_t)max ? n : (size_t)max;
}

static int receive(sim_sqs_t* s, sqs_queue_t* q, const cJSON* req,
                   int64_t held_ms, sim_http_res_t* res) {
  sqs_msg_t* got[16];
  sqs_msg_t* copies[10];
  int max, wait, vis;
  size_t n, ncopies = 0;
  int64_t now = sim_true_ms();
  cJSON *doc, *list;
  const cJSON* sys =
      cJSON_GetObjectItemCaseSensitive(req, "MessageSystemAttributeNames");
  const cJSON* mnames =
      cJSON_GetObjectItemCaseSensitive(req, "MessageAttributeNames");
  if (sys == NULL) sys = cJSON_GetObjectItemCaseSensitive(req, "AttributeNames");
  if (int_param(req, "MaxNumberOfMessages", 1, 1, 10, &max) < 0 ||
      int_param(req, "WaitTimeSeconds", 0, 0, 20, &wait) < 0 ||
      int_param(req, "VisibilityTimeout", q->visibility_s, 0,
                SQS_MAX_VISIBILITY_S, &vis) < 0)
    return sim_sqs__error(res, 400, "InvalidParameterValue",
                          "MaxNumberOfMessages, WaitTimeSeconds or "
                          "VisibilityTimeout out of range");
  expire(q, now);
  n = pick(s, q, max, wait == 0, now, got);
  if (n == 0 && (int64_t)wait * 1000 > held_ms) {
    /* A long poll: hold it until the wait ends, or until a hidden message
    ** shows again (sim_net_kick wakes it sooner for a new one). */
    int64_t hold = (int64_t)wait * 1000 - held_ms;
    for (size_t i = 0; i < q->n; i++)
      if (q->m[i]->visible_at > now && q->m[i]->visible_at - now < hold)
        hold = q->m[i]->visible_at - now;
    res->status = 0;
    res->hold_ms = hold > 0 ? hold : 1;
    return 0;
  }
  if (held_ms > 0 && n > 0) s->st.long_polls_woken++;
  s->st.receives++;
  s->st.received += (int64_t)n;
  if (n == 0) s->st.empty_receives++;
  doc = cJSON_CreateObject();
  list = cJSON_AddArrayToObject(doc, "Messages");
  for (size_t i = 0; i < n; i++) {
    sqs_msg_t* m = got[i];
    m->receive_count++;
    if (m->first_receive_ms == 0) m->first_receive_ms = now;
    m->receive_ms = now;
    m->in_flight = vis > 0;
    m->visible_at = now + (int64_t)vis * 1000;
    new_receipt(s, m);
    cJSON_AddItemToArray(list, render(q, m, sys, mnames));
    /* A server that held a copy delivers it too, later. */
    if (!q->fifo && s->dup_pm && sim_rng_chance(&s->rng, s->dup_pm))
      copies[ncopies++] = m;
  }
  for (size_t i = 0; i < ncopies; i++) {
    sqs_msg_t c = *copies[i];
    c.visible_at = now + (int64_t)sim_rng_below(&s->rng, 60000);
    if (sim_sqs__append(s, q, &c) != NULL) s->st.duplicates++;
  }
  if (n > 0 && s->on_receive) s->on_receive(s->on_receive_arg, n);
  return sim_sqs__answer(res, 200, doc);
}

/* The message a receipt handle names. 0 found (stale: an older receive's
** handle), -1 malformed, 1 no such message (deleted). */
static int find(sqs_queue_t* q, const char* handle, size_t* at, int* stale) {
  unsigned long long uid;
  if (handle == NULL || strlen(handle) != 44 || strncmp(handle, "AQEB", 4) != 0 ||
      sscanf(handle + 4, "%16llx", &uid) != 1)
    return -1;
  for (size_t i = 0; i < q->n; i++)
    if (q->m[i]->uid == uid) {
      *at = i;
      *stale = strcmp(q->m[i]->receipt, handle) != 0;
      return 0;
    }
  return 1;
}

/* Delete under one handle; NULL, or the error code of a refusal. */
static const char* delete_one(sim_sqs_t* s, sqs_queue_t* q,
                              const char* handle) {
  size_t at;
  int stale = 0, rc = find(q, handle, &at, &stale);
  sqs_msg_t* m;
  if (rc < 0) return "ReceiptHandleIsInvalid";
  if (rc > 0) return NULL;  /* already deleted: succeeds */
  if (stale) {
    /* Received again since: succeeds, deletes nothing. */
    s->st.stale_deletes++;
    return NULL;
  }
  m = q->m[at];
  memmove(&q->m[at], &q->m[at + 1], (q->n - at - 1) * sizeof q->m[0]);
  q->n--;
  s->st.deletes++;
  if (s->on_delete) s->on_delete(s->on_delete_arg, q->name, m->body);
  if (!q->fifo && s->ghost_pm && sim_rng_chance(&s->rng, s->ghost_pm)) {
    /* A server holding a copy missed the delete: the copy comes back once
    ** the visibility it shares ends. */
    sqs_msg_t c = *m;
    if (c.visible_at < sim_true_ms()) c.visible_at = sim_true_ms();
    if (sim_sqs__append(s, q, &c) != NULL) s->st.ghosts++;
  }
  sim_sqs__msg_free(m);
  return NULL;
}

static const char* change_one(sim_sqs_t* s, sqs_queue_t* q,
                              const char* handle, const cJSON* value) {
  size_t at;
  int stale = 0, rc = find(q, handle, &at, &stale);
  int64_t now = sim_true_ms();
  sqs_msg_t* m;
  int v;
  if (rc != 0) return "ReceiptHandleIsInvalid";
  m = q->m[at];
  expire(q, now);
  if (stale || !m->in_flight) return "AWS.SimpleQueueService.MessageNotInflight";
  if (!cJSON_IsNumber(value) || value->valuedouble < 0 ||
      value->valuedouble > SQS_MAX_VISIBILITY_S)
    return "InvalidParameterValue";
  v = (int)value->valuedouble;
  if (now + (int64_t)v * 1000 > m->receive_ms + SQS_MAX_VISIBILITY_S * 1000ll)
    return "InvalidParameterValue";
  s->st.visibility_changes++;
  m->visible_at = now + (int64_t)v * 1000;
  if (v == 0) {
    m->in_flight = 0;
    sim_net_kick();
  }
  return NULL;
}

static const char* handle_of(const cJSON* o) {
  const cJSON* h = cJSON_GetObjectItemCaseSensitive(o, "ReceiptHandle");
  return cJSON_IsString(h) ? h->valuestring : NULL;
}

static int batch(sim_sqs_t* s, sqs_queue_t* q, const cJSON* req, int del,
                 sim_http_res_t* res) {
  int answered;
  const cJSON* entries = sim_sqs__batch_entries(req, res, &answered);
  const cJSON* e;
  cJSON *doc, *ok, *failed;
  if (entries == NULL) return answered;
  doc = cJSON_CreateObject();
  ok = cJSON_AddArrayToObject(doc, "Successful");
  failed = cJSON_AddArrayToObject(doc, "Failed");
  cJSON_ArrayForEach(e, entries) {
    const char* id = cJSON_GetObjectItemCaseSensitive(e, "Id")->valuestring;
    const char* code =
        del ? delete_one(s, q, handle_of(e))
            : change_one(s, q, handle_of(e),
                         cJSON_GetObjectItemCaseSensitive(e,
                                                          "VisibilityTimeout"));
    cJSON* r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "Id", id);
    if (code != NULL) {
      if (!del) s->st.visibility_refused++;
      cJSON_AddStringToObject(r, "Code", code);
      cJSON_AddStringToObject(r, "Message", code);
      cJSON_AddBoolToObject(r, "SenderFault", 1);
      cJSON_AddItemToArray(failed, r);
    } else {
      cJSON_AddItemToArray(ok, r);
    }
  }
  return sim_sqs__answer(res, 200, doc);
}

static int single(sim_sqs_t* s, sqs_queue_t* q, const cJSON* req, int del,
                  sim_http_res_t* res) {
  const char* code =
      del ? delete_one(s, q, handle_of(req))
          : change_one(s, q, handle_of(req),
                       cJSON_GetObjectItemCaseSensitive(req,
                                                        "VisibilityTimeout"));
  if (code != NULL) {
    if (!del) s->st.visibility_refused++;
    return sim_sqs__error(res, strcmp(code, "ReceiptHandleIsInvalid") == 0
                                   ? 404 : 400,
                          code, code);
  }
  return sim_sqs__answer(res, 200, cJSON_CreateObject());
}

int sim_sqs__consumer_op(sim_sqs_t* s, const char* op, const cJSON* req,
                         int64_t held_ms, sim_http_res_t* res) {
  sqs_queue_t* q = sim_sqs__queue_of(s, req);
  if (q == NULL) return 1;
  if (strcmp(op, "ReceiveMessage") == 0) return receive(s, q, req, held_ms, res);
  if (strcmp(op, "DeleteMessage") == 0) return single(s, q, req, 1, res);
  if (strcmp(op, "DeleteMessageBatch") == 0) return batch(s, q, req, 1, res);
  if (strcmp(op, "ChangeMessageVisibility") == 0)
    return single(s, q, req, 0, res);
  if (strcmp(op, "ChangeMessageVisibilityBatch") == 0)
    return batch(s, q, req, 0, res);
  return 1;
}

int sim_sqs__attributes(sim_sqs_t* s, const cJSON* req, sim_http_res_t* res) {
  sqs_queue_t* q = sim_sqs__queue_of(s, req);
  const cJSON* names = cJSON_GetObjectItemCaseSensitive(req, "AttributeNames");
  int64_t now = sim_true_ms(), vis = 0, hidden = 0, delayed = 0;
  cJSON *d, *a;
  (void)s;
  if (q == NULL)
    return sim_sqs__error(res, 400, "AWS.SimpleQueueService.NonExistentQueue",
                          "The specified queue does not exist.");
  expire(q, now);
  for (size_t i = 0; i < q->n; i++) {
    if (q->m[i]->in_flight) hidden++;
    else if (q->m[i]->visible_at > now) delayed++;
    else vis++;
  }
  d = cJSON_CreateObject();
  a = cJSON_AddObjectToObject(d, "Attributes");
  if (names_has(names, "VisibilityTimeout"))
    add_i64(a, "VisibilityTimeout", q->visibility_s);
  if (names_has(names, "ApproximateNumberOfMessages"))
    add_i64(a, "ApproximateNumberOfMessages", vis);
  if (names_has(names, "ApproximateNumberOfMessagesNotVisible"))
    add_i64(a, "ApproximateNumberOfMessagesNotVisible", hidden);
  if (names_has(names, "ApproximateNumberOfMessagesDelayed"))
    add_i64(a, "ApproximateNumberOfMessagesDelayed", delayed);
  if (q->fifo && names_has(names, "FifoQueue"))
    cJSON_AddStringToObject(a, "FifoQueue", "true");
  return sim_sqs__answer(res, 200, d);
}
