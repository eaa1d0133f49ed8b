/* SPDX-License-Identifier: Apache-2.0 */
/*
** The simulated SQS standard queue, speaking the JSON protocol the client
** sends (awsJson1_0, X-Amz-Target). Modelled from AWS's documentation:
** SendMessage and SendMessageBatch (at most 10 entries, distinct Ids, the
** MD5 of the body and of the message attributes in the answer),
** GetQueueAttributes, GetQueueUrl, and the ±15 minute window on
** X-Amz-Date (RequestExpired), against the world's true time: a terminal
** whose clock jumped is refused until its client corrects the offset from
** the Date header. ReceiveMessage and the rest of the consumer's side are
** not modelled yet (400 UnsupportedOperation).
*/
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <mbedtls/md.h>

#include "tests/sim/sim.h"

struct sim_sqs_s {
  char** bodies;   /* every message accepted, in order */
  size_t n, cap;
  int64_t send_calls;
  sim_rng_t rng;
};

sim_sqs_t* sim_sqs_new(uint64_t seed) {
  sim_sqs_t* q = calloc(1, sizeof *q);
  if (q != NULL) sim_rng_init(&q->rng, seed, 11);
  return q;
}

void sim_sqs_free(sim_sqs_t* q) {
  if (q == NULL) return;
  for (size_t i = 0; i < q->n; i++) free(q->bodies[i]);
  free(q->bodies);
  free(q);
}

size_t sim_sqs_sent(const sim_sqs_t* q, void (*fn)(void*, const char*),
                    void* arg) {
  for (size_t i = 0; fn != NULL && i < q->n; i++) fn(arg, q->bodies[i]);
  return q->n;
}

int64_t sim_sqs_send_calls(const sim_sqs_t* q) { return q->send_calls; }

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

static int answer(sim_http_res_t* res, int status, cJSON* doc) {
  res->status = status;
  res->body = cJSON_PrintUnformatted(doc);
  cJSON_Delete(doc);
  if (res->body == NULL) return -1;
  res->body_len = strlen(res->body);
  return 0;
}

static int error(sim_http_res_t* res, int status, const char* code,
                 const char* msg) {
  cJSON* d = cJSON_CreateObject();
  char type[128];
  snprintf(type, sizeof type, "com.amazonaws.sqs#%s", code);
  cJSON_AddStringToObject(d, "__type", type);
  cJSON_AddStringToObject(d, "message", msg);
  snprintf(res->header, sizeof res->header, "x-amzn-query-error: %s;%s", code,
           status < 500 ? "Sender" : "Receiver");
  return answer(res, status, d);
}

static int accept(sim_sqs_t* q, const cJSON* entry, char md5b[33],
                  char md5a[33], int* has_attrs, char msg_id[48]) {
  const cJSON* body = cJSON_GetObjectItemCaseSensitive(entry, "MessageBody");
  if (!cJSON_IsString(body) || body->valuestring[0] == '\0') return -1;
  if (q->n == q->cap) {
    size_t cap = q->cap ? q->cap * 2 : 256;
    char** b = realloc(q->bodies, cap * sizeof *b);
    if (b == NULL) return -2;
    q->bodies = b;
    q->cap = cap;
  }
  if ((q->bodies[q->n] = strdup(body->valuestring)) == NULL) return -2;
  q->n++;
  md5_body(body->valuestring, md5b);
  *has_attrs = md5_attrs(
      cJSON_GetObjectItemCaseSensitive(entry, "MessageAttributes"), md5a);
  snprintf(msg_id, 48, "%08llx-0000-4000-8000-%012llx",
           (unsigned long long)(sim_rng_next(&q->rng) & 0xffffffffu),
           (unsigned long long)q->n);
  return 0;
}

static int send_batch(sim_sqs_t* q, const cJSON* req, sim_http_res_t* res) {
  const cJSON* entries = cJSON_GetObjectItemCaseSensitive(req, "Entries");
  const cJSON* e;
  cJSON *doc, *ok, *failed;
  int n = cJSON_GetArraySize(entries);
  if (!cJSON_IsArray(entries) || n == 0)
    return error(res, 400, "EmptyBatchRequest", "no entries");
  if (n > 10)
    return error(res, 400, "TooManyEntriesInBatchRequest", "over 10 entries");
  cJSON_ArrayForEach(e, entries) {
    const cJSON* id = cJSON_GetObjectItemCaseSensitive(e, "Id");
    const cJSON* f;
    if (!cJSON_IsString(id))
      return error(res, 400, "InvalidBatchEntryId", "entry without Id");
    for (f = e->next; f; f = f->next) {
      const cJSON* id2 = cJSON_GetObjectItemCaseSensitive(f, "Id");
      if (cJSON_IsString(id2) && strcmp(id2->valuestring, id->valuestring) == 0)
        return error(res, 400, "BatchEntryIdsNotDistinct", "ids repeat");
    }
  }
  doc = cJSON_CreateObject();
  ok = cJSON_AddArrayToObject(doc, "Successful");
  failed = cJSON_AddArrayToObject(doc, "Failed");
  cJSON_ArrayForEach(e, entries) {
    char md5b[33], md5a[33], mid[48];
    int has_attrs = 0;
    const char* id = cJSON_GetObjectItemCaseSensitive(e, "Id")->valuestring;
    int rc = accept(q, e, md5b, md5a, &has_attrs, mid);
    cJSON* r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "Id", id);
    if (rc == -2) {
      cJSON_Delete(r);
      cJSON_Delete(doc);
      return -1;
    }
    if (rc < 0) {
      cJSON_AddStringToObject(r, "Code", "InvalidParameterValue");
      cJSON_AddStringToObject(r, "Message", "empty body");
      cJSON_AddBoolToObject(r, "SenderFault", 1);
      cJSON_AddItemToArray(failed, r);
      continue;
    }
    cJSON_AddStringToObject(r, "MessageId", mid);
    cJSON_AddStringToObject(r, "MD5OfMessageBody", md5b);
    if (has_attrs) cJSON_AddStringToObject(r, "MD5OfMessageAttributes", md5a);
    cJSON_AddItemToArray(ok, r);
  }
  return answer(res, 200, doc);
}

static int send_one(sim_sqs_t* q, const cJSON* req, sim_http_res_t* res) {
  char md5b[33], md5a[33], mid[48];
  int has_attrs = 0;
  int rc = accept(q, req, md5b, md5a, &has_attrs, mid);
  cJSON* d;
  if (rc == -2) return -1;
  if (rc < 0) return error(res, 400, "InvalidParameterValue", "empty body");
  d = cJSON_CreateObject();
  cJSON_AddStringToObject(d, "MessageId", mid);
  cJSON_AddStringToObject(d, "MD5OfMessageBody", md5b);
  if (has_attrs) cJSON_AddStringToObject(d, "MD5OfMessageAttributes", md5a);
  return answer(res, 200, d);
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
  sim_sqs_t* q = ctx;
  const char* op = rq->target;
  cJSON* req;
  int64_t at = amz_ms(rq->amz_date);
  int64_t skew = at - sim_true_ms();
  int rc;

  if (strncmp(op, "AmazonSQS.", 10) != 0)
    return error(res, 400, "UnknownOperationException", "no X-Amz-Target");
  op += 10;
  if (at < 0)
    return error(res, 400, "MissingAuthenticationToken", "no X-Amz-Date");
  if (skew > 15 * 60000 || skew < -15 * 60000)
    return error(res, 400, "RequestExpired",
                 "Request has expired (X-Amz-Date outside 15 minutes)");
  req = cJSON_ParseWithLength(rq->body, rq->body_len);
  if (req == NULL)
    return error(res, 400, "SerializationException", "body is not JSON");
  if (strcmp(op, "SendMessageBatch") == 0) {
    q->send_calls++;
    rc = send_batch(q, req, res);
  } else if (strcmp(op, "SendMessage") == 0) {
    q->send_calls++;
    rc = send_one(q, req, res);
  } else if (strcmp(op, "GetQueueUrl") == 0) {
    cJSON* d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "QueueUrl",
                            "https://sqs.eu-west-1.amazonaws.com/000000000000/"
                            "terminal-events");
    rc = answer(res, 200, d);
  } else if (strcmp(op, "GetQueueAttributes") == 0) {
    cJSON* d = cJSON_CreateObject();
    cJSON* a = cJSON_AddObjectToObject(d, "Attributes");
    cJSON_AddStringToObject(a, "VisibilityTimeout", "30");
    cJSON_AddStringToObject(a, "ApproximateNumberOfMessages", "0");
    cJSON_AddStringToObject(a, "ApproximateNumberOfMessagesNotVisible", "0");
    cJSON_AddStringToObject(a, "ApproximateNumberOfMessagesDelayed", "0");
    rc = answer(res, 200, d);
  } else {
    rc = error(res, 400, "UnsupportedOperation",
               "not modelled by the simulator");
  }
  cJSON_Delete(req);
  return rc;
}
