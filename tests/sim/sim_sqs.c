/* SPDX-License-Identifier: Apache-2.0 */
/*
** The simulated SQS service (sim.h): its queues, the JSON protocol the
** client sends (awsJson1_0, X-Amz-Target), and the producer's side.
** Modelled from AWS's documentation (Amazon SQS API Reference and
** Developer Guide):
**   - SendMessage and SendMessageBatch: at most 10 entries with distinct
**     Ids, the MD5 of the body and of the message attributes in the
**     answer; DelaySeconds hides a standard queue's message (0..900 s);
**   - FIFO queues (a name ending in .fifo): MessageGroupId required
**     (MissingParameter), a MessageDeduplicationId or the queue's
**     ContentBasedDeduplication (the SHA-256 of the body) required
**     (InvalidParameterValue), no per-message DelaySeconds; a message
**     whose deduplication id was sent in the last 5 minutes is accepted
**     and not delivered, and its answer repeats the first MessageId and
**     SequenceNumber ("Exactly-once processing");
**   - GetQueueUrl, and the +-15 minute window on X-Amz-Date
**     (RequestExpired, "Common Errors") against the world's true time: a
**     terminal whose clock jumped is refused until its client corrects the
**     offset from the Date header, as the SDKs do.
** The consumer's side is sim_sqs_receive.c.
*/
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <mbedtls/md.h>

#include "tests/sim/sim.h"
#include "tests/sim/sim_sqs_int.h"

sim_sqs_t* sim_sqs_new(uint64_t seed) {
  sim_sqs_t* q = calloc(1, sizeof *q);
  if (q != NULL) sim_rng_init(&q->rng, seed, 11);
  return q;
}

void sim_sqs__msg_free(sqs_msg_t* m) {
  if (m == NULL) return;
  free(m->body);
  free(m->attrs);
  free(m);
}

void sim_sqs_free(sim_sqs_t* s) {
  if (s == NULL) return;
  for (size_t k = 0; k < s->nq; k++) {
    for (size_t i = 0; i < s->q[k].n; i++) sim_sqs__msg_free(s->q[k].m[i]);
    free(s->q[k].m);
    free(s->q[k].dd);
  }
  for (size_t i = 0; i < s->nsent; i++) free(s->sent[i].body);
  free(s->sent);
  free(s);
}

int sim_sqs_create(sim_sqs_t* s, const char* name, int content_dedup,
                   int visibility_s) {
  sqs_queue_t* q;
  size_t n = strlen(name);
  if (s->nq == sizeof s->q / sizeof s->q[0] || n >= sizeof q->name) return -1;
  q = &s->q[s->nq++];
  memset(q, 0, sizeof *q);
  memcpy(q->name, name, n + 1);
  q->fifo = n > 5 && strcmp(name + n - 5, ".fifo") == 0;
  q->content_dedup = q->fifo && content_dedup;
  q->visibility_s = visibility_s;
  return 0;
}

static sqs_queue_t* queue_named(sim_sqs_t* s, const char* name) {
  for (size_t k = 0; k < s->nq; k++)
    if (strcmp(s->q[k].name, name) == 0) return &s->q[k];
  return NULL;
}

/* The queue a request's QueueUrl names (by its last path segment, as SQS
** resolves it), or NULL. */
sqs_queue_t* sim_sqs__queue_of(sim_sqs_t* s, const cJSON* req) {
  const cJSON* u = cJSON_GetObjectItemCaseSensitive(req, "QueueUrl");
  const char* slash;
  if (!cJSON_IsString(u)) return NULL;
  slash = strrchr(u->valuestring, '/');
  return queue_named(s, slash ? slash + 1 : u->valuestring);
}

size_t sim_sqs_sent(const sim_sqs_t* s, size_t from,
                    void (*fn)(void*, const char*, const char*, const char*),
                    void* arg) {
  for (size_t i = from; fn != NULL && i < s->nsent; i++)
    fn(arg, s->sent[i].queue, s->sent[i].group, s->sent[i].body);
  return s->nsent;
}

int64_t sim_sqs_send_calls(const sim_sqs_t* s) { return s->send_calls; }

int64_t sim_sqs_left(const sim_sqs_t* s, const char* name) {
  const sqs_queue_t* q = queue_named((sim_sqs_t*)s, name);
  return q ? (int64_t)q->n : 0;
}

void sim_sqs_set_faults(sim_sqs_t* s, unsigned dup, unsigned ghost) {
  s->dup_pm = dup;
  s->ghost_pm = ghost;
}

void sim_sqs_on_delete(sim_sqs_t* s, void (*fn)(void*, const char*,
                                                const char*),
                       void* arg) {
  s->on_delete = fn;
  s->on_delete_arg = arg;
}

void sim_sqs_on_receive(sim_sqs_t* s, void (*fn)(void*, size_t), void* arg) {
  s->on_receive = fn;
  s->on_receive_arg = arg;
}

void sim_sqs_stats(const sim_sqs_t* s, sim_sqs_stats_t* st) { *st = s->st; }

sqs_msg_t* sim_sqs__append(sim_sqs_t* s, sqs_queue_t* q, const sqs_msg_t* m) {
  sqs_msg_t* c;
  if (q->n == q->cap) {
    size_t cap = q->cap ? q->cap * 2 : 64;
    sqs_msg_t** b = realloc(q->m, cap * sizeof *b);
    if (b == NULL) return NULL;
    q->m = b;
    q->cap = cap;
  }
  c = malloc(sizeof *c);
  if (c == NULL) return NULL;
  *c = *m;
  c->body = strdup(m->body);
  c->attrs = m->attrs ? strdup(m->attrs) : NULL;
  if (c->body == NULL || (m->attrs && c->attrs == NULL)) {
    sim_sqs__msg_free(c);
    return NULL;
  }
  c->uid = ++s->next_uid;
  c->in_flight = 0;
  c->receipt[0] = '\0';
  q->m[q->n++] = c;
  return c;
}

static void sha256_hex(const char* s, char out[65]) {
  unsigned char d[32];
  const mbedtls_md_info_t* md = mbedtls_md_info_from_type(MBEDTLS_MD_SHA256);
  if (md == NULL || mbedtls_md(md, (const unsigned char*)s, strlen(s), d) != 0)
    memset(d, 0, sizeof d);
  for (int i = 0; i < 32; i++) snprintf(out + 2 * i, 3, "%02x", d[i]);
}

/* MD5 through the generic md API: the same calls on mbedTLS 2.28 and 3.6
** (3.x renamed mbedtls_md5_*_ret). */
static void md5_start(mbedtls_md_context_t* c) {
  mbedtls_md_init(c);
  if (mbedtls_md_setup(c, mbedtls_md_info_from_type(MBEDTLS_MD_MD5), 0) == 0)
    (void)mbedtls_md_starts(c);
}

static void md5_hex(mbedtls_md_context_t* c, char out[33]) {
  unsigned char d[16];
  if (mbedtls_md_finish(c, d) != 0) memset(d, 0, sizeof d);
  for (int i = 0; i < 16; i++) snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void md5_body(const char* s, char out[33]) {
  mbedtls_md_context_t c;
  md5_start(&c);
  (void)mbedtls_md_update(&c, (const unsigned char*)s, strlen(s));
  md5_hex(&c, out);
  mbedtls_md_free(&c);
}

static void put_len(mbedtls_md_context_t* c, const char* s) {
  size_t n = strlen(s);
  unsigned char b[4] = {(unsigned char)(n >> 24), (unsigned char)(n >> 16),
                        (unsigned char)(n >> 8), (unsigned char)n};
  (void)mbedtls_md_update(c, b, 4);
  (void)mbedtls_md_update(c, (const unsigned char*)s, n);
}

static int by_name(const void* a, const void* b) {
  return strcmp((*(cJSON* const*)a)->string, (*(cJSON* const*)b)->string);
}

/* AWS's MD5OfMessageAttributes: names sorted; per attribute the name, the
** data type (each with a 4-byte big-endian length), a transport byte (1
** string, 2 binary) and the value. 0 when there are none. */
static int md5_attrs(const cJSON* attrs, char out[33]) {
  cJSON* list[16];
  int n = 0;
  mbedtls_md_context_t c;
  const cJSON* it;
  if (!cJSON_IsObject(attrs)) return 0;
  cJSON_ArrayForEach(it, attrs) if (n < 16) list[n++] = (cJSON*)it;
  if (n == 0) return 0;
  qsort(list, (size_t)n, sizeof list[0], by_name);
  md5_start(&c);
  for (int i = 0; i < n; i++) {
    const cJSON* dt = cJSON_GetObjectItemCaseSensitive(list[i], "DataType");
    const cJSON* sv = cJSON_GetObjectItemCaseSensitive(list[i], "StringValue");
    const cJSON* bv = cJSON_GetObjectItemCaseSensitive(list[i], "BinaryValue");
    unsigned char t = sv ? 1 : 2;
    put_len(&c, list[i]->string);
    put_len(&c, cJSON_IsString(dt) ? dt->valuestring : "");
    (void)mbedtls_md_update(&c, &t, 1);
    put_len(&c, cJSON_IsString(sv)   ? sv->valuestring
                : cJSON_IsString(bv) ? bv->valuestring
                                     : "");
  }
  md5_hex(&c, out);
  mbedtls_md_free(&c);
  return 1;
}

int sim_sqs__answer(sim_http_res_t* res, int status, cJSON* doc) {
  res->status = status;
  res->body = cJSON_PrintUnformatted(doc);
  cJSON_Delete(doc);
  if (res->body == NULL) return -1;
  res->body_len = strlen(res->body);
  return 0;
}

int sim_sqs__error(sim_http_res_t* res, int status, const char* code,
                   const char* msg) {
  cJSON* d = cJSON_CreateObject();
  char type[128];
  snprintf(type, sizeof type, "com.amazonaws.sqs#%s", code);
  cJSON_AddStringToObject(d, "__type", type);
  cJSON_AddStringToObject(d, "message", msg);
  snprintf(res->header, sizeof res->header, "x-amzn-query-error: %s;%s", code,
           status < 500 ? "Sender" : "Receiver");
  return sim_sqs__answer(res, status, d);
}

/* What a send's answer carries. */
typedef struct {
  char md5b[33], md5a[33], mid[48], seq[24];
  int has_attrs;
  const char* code;   /* a refusal: the error code, and why */
  const char* why;
} sent_info_t;

static const char* str_of(const cJSON* o, const char* name) {
  const cJSON* v = cJSON_GetObjectItemCaseSensitive(o, name);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Accept one message (a SendMessage or a batch entry) into q. Returns 0,
** 1 when a FIFO queue deduplicated it, -1 on a refusal (info->code), -2
** out of memory. from_terminal: logged for the oracle. */
static int accept(sim_sqs_t* s, sqs_queue_t* q, const cJSON* entry,
                  int from_terminal, sent_info_t* info) {
  const char* body = str_of(entry, "MessageBody");
  const char* group = str_of(entry, "MessageGroupId");
  const char* dedup = str_of(entry, "MessageDeduplicationId");
  const cJSON* delay = cJSON_GetObjectItemCaseSensitive(entry, "DelaySeconds");
  const cJSON* attrs =
      cJSON_GetObjectItemCaseSensitive(entry, "MessageAttributes");
  int64_t now = sim_true_ms();
  char hash[65];
  sqs_msg_t m;
  memset(&m, 0, sizeof m);
  memset(info, 0, sizeof *info);
  if (body == NULL || body[0] == '\0') {
    info->code = "MissingParameter";
    info->why = "empty body";
    return -1;
  }
  if (q->fifo) {
    if (group == NULL || group[0] == '\0' || strlen(group) > 128) {
      info->code = "MissingParameter";
      info->why = "a FIFO queue needs a MessageGroupId";
      return -1;
    }
    if (cJSON_IsNumber(delay)) {
      info->code = "InvalidParameterValue";
      info->why = "no per-message DelaySeconds on a FIFO queue";
      return -1;
    }
    if (dedup == NULL && q->content_dedup) {
      sha256_hex(body, hash);
      dedup = hash;
    }
    if (dedup == NULL || dedup[0] == '\0' || strlen(dedup) > 128) {
      info->code = "InvalidParameterValue";
      info->why = "no MessageDeduplicationId and no content-based "
                  "deduplication";
      return -1;
    }
    /* The deduplication interval: 5 minutes from the first send. */
    for (size_t i = 0; i < q->ndd; i++) {
      if (now - q->dd[i].at >= SQS_FIFO_DEDUP_MS) continue;
      if (strcmp(q->dd[i].id, dedup) != 0) continue;
      md5_body(body, info->md5b);
      info->has_attrs = md5_attrs(attrs, info->md5a);
      memcpy(info->mid, q->dd[i].msg_id, sizeof info->mid);
      memcpy(info->seq, q->dd[i].seq, sizeof info->seq);
      s->st.fifo_deduplicated++;
      return 1;
    }
    snprintf(m.group, sizeof m.group, "%s", group);
    snprintf(m.dedup, sizeof m.dedup, "%s", dedup);
    snprintf(m.seq, sizeof m.seq, "%020llu",
             (unsigned long long)(++s->next_seq * 7919));
  }
  m.body = (char*)body;
  m.sent_ms = now;
  m.visible_at = now;
  if (!q->fifo && cJSON_IsNumber(delay) && delay->valuedouble > 0 &&
      delay->valuedouble <= 900)
    m.visible_at += (int64_t)delay->valuedouble * 1000;
  md5_body(body, m.md5_body);
  info->has_attrs = md5_attrs(attrs, m.md5_attrs);
  if (info->has_attrs && (m.attrs = cJSON_PrintUnformatted(attrs)) == NULL)
    return -2;
  snprintf(m.id, sizeof m.id, "%08llx-0000-4000-8000-%012llx",
           (unsigned long long)(sim_rng_next(&s->rng) & 0xffffffffu),
           (unsigned long long)(s->next_uid + 1));
  if (sim_sqs__append(s, q, &m) == NULL) {
    free(m.attrs);
    return -2;
  }
  free(m.attrs);
  memcpy(info->md5b, m.md5_body, 33);
  memcpy(info->md5a, m.md5_attrs, 33);
  memcpy(info->mid, m.id, sizeof info->mid);
  memcpy(info->seq, m.seq, sizeof info->seq);
  if (q->fifo) {
    if (q->ndd == q->ddcap) {
      /* Forget what left the window before growing. */
      size_t k = 0;
      for (size_t i = 0; i < q->ndd; i++)
        if (now - q->dd[i].at < SQS_FIFO_DEDUP_MS) q->dd[k++] = q->dd[i];
      q->ndd = k;
    }
    if (q->ndd == q->ddcap) {
      size_t cap = q->ddcap ? q->ddcap * 2 : 64;
      sqs_dedup_t* d = realloc(q->dd, cap * sizeof *d);
      if (d == NULL) return -2;
      q->dd = d;
      q->ddcap = cap;
    }
    snprintf(q->dd[q->ndd].id, sizeof q->dd[0].id, "%s", m.dedup);
    memcpy(q->dd[q->ndd].msg_id, m.id, sizeof m.id);
    memcpy(q->dd[q->ndd].seq, m.seq, sizeof m.seq);
    q->dd[q->ndd++].at = now;
  }
  if (from_terminal) {
    sent_t* t;
    if (s->nsent == s->sentcap) {
      size_t cap = s->sentcap ? s->sentcap * 2 : 256;
      sent_t* b = realloc(s->sent, cap * sizeof *b);
      if (b == NULL) return -2;
      s->sent = b;
      s->sentcap = cap;
    }
    t = &s->sent[s->nsent];
    if ((t->body = strdup(body)) == NULL) return -2;
    snprintf(t->queue, sizeof t->queue, "%s", q->name);
    snprintf(t->group, sizeof t->group, "%s", m.group);
    s->nsent++;
  }
  /* A long poll waiting on this queue answers now. */
  sim_net_kick();
  return 0;
}

static void put_sent(cJSON* r, const sent_info_t* in) {
  cJSON_AddStringToObject(r, "MessageId", in->mid);
  cJSON_AddStringToObject(r, "MD5OfMessageBody", in->md5b);
  if (in->has_attrs) cJSON_AddStringToObject(r, "MD5OfMessageAttributes", in->md5a);
  if (in->seq[0]) cJSON_AddStringToObject(r, "SequenceNumber", in->seq);
}

const cJSON* sim_sqs__batch_entries(const cJSON* req, sim_http_res_t* res,
                                    int* rc) {
  const cJSON* entries = cJSON_GetObjectItemCaseSensitive(req, "Entries");
  const cJSON* e;
  int n = cJSON_GetArraySize(entries);
  if (!cJSON_IsArray(entries) || n == 0) {
    *rc = sim_sqs__error(res, 400, "EmptyBatchRequest", "no entries");
    return NULL;
  }
  if (n > 10) {
    *rc = sim_sqs__error(res, 400, "TooManyEntriesInBatchRequest", "over 10 entries");
    return NULL;
  }
  cJSON_ArrayForEach(e, entries) {
    const cJSON* id = cJSON_GetObjectItemCaseSensitive(e, "Id");
    if (!cJSON_IsString(id)) {
      *rc = sim_sqs__error(res, 400, "InvalidBatchEntryId", "entry without Id");
      return NULL;
    }
    for (const cJSON* f = e->next; f; f = f->next) {
      const cJSON* id2 = cJSON_GetObjectItemCaseSensitive(f, "Id");
      if (cJSON_IsString(id2) && strcmp(id2->valuestring, id->valuestring) == 0) {
        *rc = sim_sqs__error(res, 400, "BatchEntryIdsNotDistinct", "ids repeat");
        return NULL;
      }
    }
  }
  return entries;
}

static int send_batch(sim_sqs_t* s, sqs_queue_t* q, const cJSON* req,
                      sim_http_res_t* res) {
  int answered;
  const cJSON* entries = sim_sqs__batch_entries(req, res, &answered);
  const cJSON* e;
  cJSON *doc, *ok, *failed;
  if (entries == NULL) return answered;
  doc = cJSON_CreateObject();
  ok = cJSON_AddArrayToObject(doc, "Successful");
  failed = cJSON_AddArrayToObject(doc, "Failed");
  /* In a batch, messages are enqueued in the order sent. */
  cJSON_ArrayForEach(e, entries) {
    sent_info_t in;
    int rc = accept(s, q, e, 1, &in);
    cJSON* r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "Id",
                            cJSON_GetObjectItemCaseSensitive(e, "Id")->valuestring);
    if (rc == -2) {
      cJSON_Delete(r);
      cJSON_Delete(doc);
      return -1;
    }
    if (rc < 0) {
      cJSON_AddStringToObject(r, "Code", in.code);
      cJSON_AddStringToObject(r, "Message", in.why);
      cJSON_AddBoolToObject(r, "SenderFault", 1);
      cJSON_AddItemToArray(failed, r);
      continue;
    }
    put_sent(r, &in);
    cJSON_AddItemToArray(ok, r);
  }
  return sim_sqs__answer(res, 200, doc);
}

static int send_one(sim_sqs_t* s, sqs_queue_t* q, const cJSON* req,
                    sim_http_res_t* res) {
  sent_info_t in;
  int rc = accept(s, q, req, 1, &in);
  cJSON* d;
  if (rc == -2) return -1;
  if (rc < 0) return sim_sqs__error(res, 400, in.code, in.why);
  d = cJSON_CreateObject();
  put_sent(d, &in);
  return sim_sqs__answer(res, 200, d);
}

int sim_sqs_put(sim_sqs_t* s, const char* name, const char* body,
                const char* group, const char* dedup) {
  sqs_queue_t* q = queue_named(s, name);
  cJSON* e = cJSON_CreateObject();
  sent_info_t in;
  int rc;
  if (q == NULL || e == NULL) {
    cJSON_Delete(e);
    return -1;
  }
  cJSON_AddStringToObject(e, "MessageBody", body);
  if (group) cJSON_AddStringToObject(e, "MessageGroupId", group);
  if (dedup) cJSON_AddStringToObject(e, "MessageDeduplicationId", dedup);
  rc = accept(s, q, e, 0, &in);
  cJSON_Delete(e);
  return rc < 0 ? -1 : rc;
}

/* "20261207T150000Z" -> ms, or -1. */
static int64_t amz_ms(const char* s) {
  struct tm tm;
  memset(&tm, 0, sizeof tm);
  if (s == NULL || strlen(s) != 16 ||
      sscanf(s, "%4d%2d%2dT%2d%2d%2dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
             &tm.tm_hour, &tm.tm_min, &tm.tm_sec) != 6)
    return -1;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return (int64_t)timegm(&tm) * 1000;
}

int sim_sqs_service(void* ctx, const sim_http_req_t* rq, sim_http_res_t* res) {
  sim_sqs_t* s = ctx;
  const char* op = rq->target;
  sqs_queue_t* q;
  cJSON* req;
  int64_t at = amz_ms(rq->amz_date);
  int64_t skew = at - sim_true_ms();
  int rc;

  if (strncmp(op, "AmazonSQS.", 10) != 0)
    return sim_sqs__error(res, 400, "UnknownOperationException",
                          "no X-Amz-Target");
  op += 10;
  if (at < 0)
    return sim_sqs__error(res, 400, "MissingAuthenticationToken",
                          "no X-Amz-Date");
  /* Checked when the request arrives, not again while a long poll holds
  ** it. */
  if (rq->held_ms == 0 && (skew > 15 * 60000 || skew < -15 * 60000))
    return sim_sqs__error(res, 400, "RequestExpired",
                          "Request has expired (X-Amz-Date outside 15 "
                          "minutes)");
  req = cJSON_ParseWithLength(rq->body, rq->body_len);
  if (req == NULL)
    return sim_sqs__error(res, 400, "SerializationException",
                          "body is not JSON");
  if (strcmp(op, "GetQueueUrl") == 0) {
    const char* name = str_of(req, "QueueName");
    char url[256];
    if (name == NULL || queue_named(s, name) == NULL) {
      rc = sim_sqs__error(res, 400, "AWS.SimpleQueueService.NonExistentQueue",
                          "The specified queue does not exist.");
    } else {
      cJSON* d = cJSON_CreateObject();
      snprintf(url, sizeof url, SIM_SQS_URL_PREFIX "%s", name);
      cJSON_AddStringToObject(d, "QueueUrl", url);
      rc = sim_sqs__answer(res, 200, d);
    }
  } else if ((q = sim_sqs__queue_of(s, req)) == NULL) {
    rc = sim_sqs__error(res, 400, "AWS.SimpleQueueService.NonExistentQueue",
                        "The specified queue does not exist.");
  } else if (strcmp(op, "SendMessageBatch") == 0) {
    s->send_calls++;
    rc = send_batch(s, q, req, res);
  } else if (strcmp(op, "SendMessage") == 0) {
    s->send_calls++;
    rc = send_one(s, q, req, res);
  } else if (strcmp(op, "GetQueueAttributes") == 0) {
    rc = sim_sqs__attributes(s, req, res);
  } else if ((rc = sim_sqs__consumer_op(s, op, req, rq->held_ms, res)) == 1) {
    rc = sim_sqs__error(res, 400, "UnsupportedOperation",
                        "not modelled by the simulator");
  }
  cJSON_Delete(req);
  return rc;
}
