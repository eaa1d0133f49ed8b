/* SPDX-License-Identifier: Apache-2.0 */
/*
** Answers that say the server is not the SQS JSON API (sqs.h,
** ob__sqs_not_json_api; the rule and why: docs/decisions/
** 0014-not-the-sqs-json-api.md).
**
** oncebox speaks only SQS's JSON protocol (awsJson1_0, X-Amz-Target). A
** server that speaks only the older query protocol (sqslite, ElasticMQ
** before 1.4, old LocalStack), an emulator without the operation, a web
** server or a captive portal at the endpoint answers every request the
** same way, whatever the request holds: nothing a row did, nothing a retry
** fixes. The answers below are what such servers were measured or
** documented to send; an answer that carries one of SQS's own error codes
** is never one of them, and gateway statuses (502, 503, 504) stay outages.
*/
#include <stdio.h>
#include <string.h>

#include "core/sqs/sqs.h"
#include "core/util/peer_text.h"

/* The code to show: the body's type (what the server named it), else the
** code, without SQS's query prefix; "" when none. */
static const char* shown_code(const ob__sqs_error_t* e) {
  static const char prefix[] = "AWS.SimpleQueueService.";
  const char* c = e->type[0] ? e->type : e->code;
  if (strncmp(c, prefix, sizeof prefix - 1) == 0) c += sizeof prefix - 1;
  return c;
}

/* ASCII case-insensitive substring test on NUL-terminated strings. */
static int contains_ci(const char* s, const char* needle) {
  size_t k = strlen(needle);
  for (; *s; s++) {
    size_t j = 0;
    for (; j < k && s[j]; j++) {
      char a = s[j], b = needle[j];
      if (a >= 'A' && a <= 'Z') a = (char)(a - 'A' + 'a');
      if (a != b) break;
    }
    if (j == k) return 1;
  }
  return 0;
}

/* "text/html" from "text/html; charset=utf-8", cleaned; "no Content-Type"
** when absent. */
static void media_type(const char* ct, char* out, size_t cap) {
  size_t n;
  if (ct == NULL) ct = "";
  while (*ct == ' ' || *ct == '\t') ct++;
  n = strcspn(ct, "; \t");
  if (n == 0) {
    snprintf(out, cap, "no Content-Type");
    return;
  }
  ob__peer_text(ct, n > 64 ? 64 : n, out, cap);
}

int ob__sqs_not_json_api(const ob__sqs_error_t* e, const char* content_type,
                         const char* target, const char* endpoint, char* buf,
                         size_t cap) {
  /* SQS's own 404s: a request fault, not a missing API. */
  static const char* const sqs_404[] = {
      "ReceiptHandleIsInvalid", "InvalidAddress", "ResourceNotFoundException",
      "QueueDoesNotExist", "NonExistentQueue"};
  char code[sizeof e->type], media[80];
  int s, n, unknown_op, sqs_code_404 = 0;

  if (e == NULL || buf == NULL || cap == 0) return 0;
  buf[0] = '\0';
  if (target == NULL) target = "the request";
  s = e->http_status;
  ob__peer_text(shown_code(e), strlen(shown_code(e)), code, sizeof code);
  media_type(content_type, media, sizeof media);

  if (s >= 200 && s < 300) {
    /* SQS answers every operation with a JSON object (or, for the ones
    ** without output, an empty body: those parse, and never get here). */
    if (e->body == OB__SQS_BODY_JSON) return 0;
    n = snprintf(buf, cap,
                 "the server's answer is not SQS's JSON (HTTP %d, %s, to %s): "
                 "the endpoint is not an SQS endpoint, or a captive portal "
                 "or proxy answers in its place",
                 s, e->body == OB__SQS_BODY_EMPTY ? "empty body" : media,
                 target);
    goto done;
  }
  if (s < 400 || s == 502 || s == 503 || s == 504) return 0;

  if (s == 415 || s == 405 || s == 501) {
    /* 415 Unsupported Media Type: no parser for application/x-amz-json-1.0
    ** (sqslite's fastify); 405 / 501: the method or the request is not
    ** implemented. */
    n = snprintf(buf, cap,
                 "the server does not speak SQS's JSON protocol (HTTP %d to %s)",
                 s, target);
    goto done;
  }
  if (e->body == OB__SQS_BODY_XML) {
    n = snprintf(buf, cap,
                 "the server does not speak SQS's JSON protocol: it answered "
                 "in XML, as servers of SQS's older query protocol do (HTTP "
                 "%d%s%s to %s)",
                 s, code[0] ? " " : "", code, target);
    goto done;
  }
  if (ob__sqs_error_is(e, "MissingAction")) {
    /* We always send X-Amz-Target: the server looked for a query-protocol
    ** Action parameter, or something on the way dropped the header. */
    n = snprintf(buf, cap,
                 "the server found no operation in the request for %s (HTTP "
                 "%d MissingAction): it reads SQS's query protocol, or a "
                 "proxy dropped X-Amz-Target",
                 target, s);
    goto done;
  }
  unknown_op = ob__sqs_error_is(e, "UnknownOperationException") ||
               ob__sqs_error_is(e, "UnknownOperation") ||
               ob__sqs_error_is(e, "InvalidAction") ||
               contains_ci(e->message, "unknown operation") ||
               contains_ci(e->message, "unknown action");
  if (unknown_op) {
    n = snprintf(buf, cap,
                 "the server does not know the operation %s (HTTP %d%s%s)",
                 target, s, code[0] ? " " : "", code);
    goto done;
  }
  for (size_t i = 0; i < sizeof sqs_404 / sizeof sqs_404[0]; i++)
    sqs_code_404 |= ob__sqs_error_is(e, sqs_404[i]);
  if (s == 404 && !sqs_code_404) {
    /* Requests go to the endpoint's "/" with the queue URL in the body. */
    n = snprintf(buf, cap,
                 "the server has no SQS API at the endpoint's path / (HTTP "
                 "404 to %s%s%s)",
                 target, endpoint ? ", endpoint " : "", endpoint ? endpoint : "");
    goto done;
  }
  if (s < 500 && s != 408 && s != 413 && s != 414 && s != 429 && s != 431 &&
      e->code[0] == '\0' && e->body != OB__SQS_BODY_JSON) {
    /* A 4xx with no error code and a page or text for a body: a proxy or
    ** a web server answered; SQS always names its errors. Not the size
    ** and timeout statuses, which can be about this request. */
    n = snprintf(buf, cap,
                 "the server's answer is not SQS's JSON (HTTP %d, %s, to %s): "
                 "the endpoint is not an SQS endpoint, or a proxy answers in "
                 "its place",
                 s, e->body == OB__SQS_BODY_EMPTY ? "empty body" : media,
                 target);
    goto done;
  }
  return 0;

done:
  if (n > 0 && (size_t)n < cap && e->message[0])
    snprintf(buf + n, cap - (size_t)n, "; the server said: %s", e->message);
  return 1;
}
