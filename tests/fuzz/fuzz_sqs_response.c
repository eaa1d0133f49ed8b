/* SPDX-License-Identifier: Apache-2.0 */
/*
** Fuzz target: every SQS JSON 1.0 response parser (core/sqs/sqs_response.c)
** and the error parser with its x-amzn-query-error / x-amzn-errortype
** headers.
**
** Input: a selector byte, then the rest. Letters pick a parser (upper case:
** no request context; lower case: with the context that enables the
** request-dependent checks); any other byte picks one by its value.
**   R / r  ReceiveMessage        (r: with OB__SQS_VERIFY_ATTR_MD5)
**   S / s  SendMessage           (s: checked against a sent message "hello"
**                                 with two attributes)
**   B / b  SendMessageBatch      (b: sent entries m0 "hello", m1 "Body")
**   D / d  DeleteMessageBatch    (d: requested Ids a, b-2, c_3)
**   V / v  ChangeMessageVisibilityBatch (v: Ids as d)
**   U      GetQueueUrl
**   A      GetQueueAttributes
**   Z      DeleteMessage / ChangeMessageVisibility (empty response)
**   E      an error response: the rest is
**            "<status>\n<x-amzn-query-error>\n<x-amzn-errortype>\n<body>"
**          where an empty header line means "header absent".
** For every parser but E the rest is the response body.
**
** Properties, beyond "no crash, no sanitizer report, no leak":
**   - 0 or a negative OB_E* code; on failure the result is zeroed and the
**     diagnostic names a fault (and the field text is NUL-terminated);
**   - on success every count is within the protocol's caps, every required
**     string is present, lengths agree with the strings, MD5 fields are at
**     most 64 bytes, a Binary attribute's bytes are really there;
**   - the error parser always succeeds, its strings are NUL-terminated
**     within their fields, code is the query code, else the type, else the
**     sanitised errortype;
**   - parsing is deterministic (a second parse gives the same answer);
**   - the *_free functions are idempotent.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/sqs/sqs.h"
#include "oncebox.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

static void fail(const char* what, const char* detail) {
  fprintf(stderr, "fuzz_sqs_response: property violated: %s%s%s\n", what,
          detail ? ": " : "", detail ? detail : "");
  abort();
}

static void check_rc(int rc, const ob__sqs_diag_t* d) {
  if (rc > 0) fail("positive return", NULL);
  if (rc == 0) {
    if (d->fault != OB__SQS_FAULT_NONE) fail("fault set on success", NULL);
    return;
  }
  if (rc != OB_EINVAL && rc != OB_ETOOBIG && rc != OB_EIO && rc != OB_ENOMEM)
    fail("unexpected code", ob_strerror(rc));
  if (memchr(d->field, '\0', sizeof d->field) == NULL)
    fail("diag field not NUL-terminated", NULL);
  if (rc != OB_ENOMEM && d->fault == OB__SQS_FAULT_NONE)
    fail("error without a fault", ob_strerror(rc));
  if (strcmp(ob__sqs_fault_name(d->fault), "UNKNOWN") == 0)
    fail("unknown fault", NULL);
}

static void str_max(const char* s, size_t max, int required, const char* what) {
  if (s == NULL) {
    if (required) fail("required string missing", what);
    return;
  }
  if (strlen(s) > max) fail("string over its cap", what);
}

static int is_zero(const void* p, size_t n) {
  const unsigned char* b = p;
  for (size_t i = 0; i < n; i++)
    if (b[i]) return 0;
  return 1;
}

/* Touch every byte a result points to, so ASan checks the extents. */
static volatile unsigned char g_sink;
static void touch(const void* p, size_t n) {
  const unsigned char* b = p;
  for (size_t i = 0; i < n; i++) g_sink ^= b[i];
}

static void fuzz_receive(const char* body, size_t len, int flags) {
  ob__sqs_receive_result_t r, r2;
  ob__sqs_diag_t d, d2;
  int rc = ob__sqs_parse_receive_message(body, len, flags, &r, &d);
  int rc2 = ob__sqs_parse_receive_message(body, len, flags, &r2, &d2);
  check_rc(rc, &d);
  if (rc != rc2 || d.fault != d2.fault || strcmp(d.field, d2.field) != 0)
    fail("receive not deterministic", d.field);
  ob__sqs_receive_result_free(&r2);
  if (rc != 0) {
    if (!is_zero(&r, sizeof r)) fail("result not zeroed on error", NULL);
    return;
  }
  if (r.n > OB__SQS_MAX_RECEIVE) fail("too many messages", NULL);
  if (r.n && r.messages == NULL) fail("messages NULL", NULL);
  for (size_t i = 0; i < r.n; i++) {
    const ob__sqs_message_t* m = &r.messages[i];
    str_max(m->message_id, OB__SQS_MAX_FIELD_BYTES, 1, "MessageId");
    str_max(m->receipt_handle, OB__SQS_MAX_FIELD_BYTES, 1, "ReceiptHandle");
    str_max(m->md5_of_body, 64, 1, "MD5OfBody");
    str_max(m->body, OB__SQS_MAX_MESSAGE_BYTES, 1, "Body");
    str_max(m->md5_of_message_attributes, 64, 0, "MD5OfMessageAttributes");
    if (m->body_len != strlen(m->body)) fail("body_len", NULL);
    if (m->nattributes > 32) fail("too many system attributes", NULL);
    if (m->nmessage_attributes > OB__SQS_MAX_ATTRIBUTES)
      fail("too many message attributes", NULL);
    if (m->receive_count < 0 || m->sent_timestamp_ms < -1 ||
        m->first_receive_timestamp_ms < -1)
      fail("negative count or timestamp", NULL);
    for (size_t k = 0; k < m->nattributes; k++) {
      str_max(m->attributes[k].name, SIZE_MAX, 1, "attribute name");
      str_max(m->attributes[k].value, OB__SQS_MAX_FIELD_BYTES, 1,
              "attribute value");
    }
    for (size_t k = 0; k < m->nmessage_attributes; k++) {
      const ob__sqs_attr_t* a = &m->message_attributes[k];
      str_max(a->name, 256, 1, "message attribute name");
      str_max(a->data_type, 256, 1, "DataType");
      if (a->value == NULL) fail("attribute value NULL", a->name);
      if (strncmp(a->data_type, "Binary", 6) == 0) {
        touch(a->value, a->value_len);
      } else {
        if (a->value_len != strlen(a->value)) fail("value_len", a->name);
        if (((const char*)a->value)[a->value_len] != '\0')
          fail("text value not NUL-ended", a->name);
      }
    }
  }
  ob__sqs_receive_result_free(&r);
  ob__sqs_receive_result_free(&r); /* idempotent */
}

static const ob__sqs_attr_t k_attrs[2] = {
  {"traceId", "String", "abc", 3},
  {"b", "Binary", "\x01\x02\x03", 3},
};

static void fuzz_send(const char* body, size_t len, int with_sent) {
  ob__sqs_send_t m;
  ob__sqs_send_result_t r;
  ob__sqs_diag_t d;
  int rc;
  ob__sqs_send_init(&m);
  m.body = "hello";
  m.body_len = 5;
  m.attrs = k_attrs;
  m.nattrs = 2;
  rc = ob__sqs_parse_send_message(body, len, with_sent ? &m : NULL, &r, &d);
  check_rc(rc, &d);
  if (rc != 0) {
    if (!is_zero(&r, sizeof r)) fail("result not zeroed on error", NULL);
    return;
  }
  str_max(r.message_id, OB__SQS_MAX_FIELD_BYTES, 1, "MessageId");
  str_max(r.md5_of_body, 64, 1, "MD5OfMessageBody");
  str_max(r.md5_of_message_attributes, 64, with_sent, "MD5OfMessageAttributes");
  str_max(r.md5_of_message_system_attributes, 64, 0, "MD5OfMessageSystem...");
  str_max(r.sequence_number, OB__SQS_MAX_FIELD_BYTES, 0, "SequenceNumber");
  if (with_sent && strcasecmp(r.md5_of_body,
                              "5d41402abc4b2a76b9719d911017c592") != 0)
    fail("MD5 accepted that does not match", r.md5_of_body);
  ob__sqs_send_result_free(&r);
  ob__sqs_send_result_free(&r);
}

static void fuzz_batch(ob__sqs_op_t op, const char* body, size_t len,
                       int with_ids) {
  static const char* const ids[3] = {"a", "b-2", "c_3"};
  ob__sqs_send_t sent[2];
  ob__sqs_batch_result_t r;
  ob__sqs_diag_t d;
  int send = op == OB__SQS_SEND_MESSAGE_BATCH;
  size_t n_ids = 0;
  int rc;
  ob__sqs_send_init(&sent[0]);
  ob__sqs_send_init(&sent[1]);
  sent[0].id = "m0";
  sent[0].body = "hello";
  sent[0].body_len = 5;
  sent[1].id = "m1";
  sent[1].body = "Body";
  sent[1].body_len = 4;
  sent[1].attrs = k_attrs;
  sent[1].nattrs = 2;
  if (with_ids) n_ids = send ? 2 : 3;
  rc = ob__sqs_parse_batch(op, body, len, (with_ids && send) ? sent : NULL,
                           (with_ids && !send) ? ids : NULL, n_ids, &r, &d);
  check_rc(rc, &d);
  if (rc != 0) {
    if (!is_zero(&r, sizeof r)) fail("result not zeroed on error", NULL);
    return;
  }
  if (r.nok + r.nfailed > OB__SQS_MAX_BATCH_ENTRIES) fail("too many", NULL);
  if (with_ids && r.nok + r.nfailed != n_ids)
    fail("not every requested Id answered exactly once", NULL);
  for (size_t i = 0; i < r.nok; i++) {
    const ob__sqs_batch_ok_t* e = &r.ok[i];
    str_max(e->id, 80, 1, "Successful.Id");
    str_max(e->message_id, OB__SQS_MAX_FIELD_BYTES, send, "MessageId");
    str_max(e->md5_of_body, 64, send, "MD5OfMessageBody");
    str_max(e->md5_of_message_attributes, 64, 0, "MD5OfMessageAttributes");
    str_max(e->sequence_number, OB__SQS_MAX_FIELD_BYTES, 0, "SequenceNumber");
    if (!send && (e->message_id || e->md5_of_body)) fail("send fields", NULL);
    for (size_t j = 0; j < i; j++)
      if (strcmp(r.ok[j].id, e->id) == 0) fail("duplicate Id accepted", e->id);
  }
  for (size_t i = 0; i < r.nfailed; i++) {
    const ob__sqs_batch_err_t* e = &r.failed[i];
    str_max(e->id, 80, 1, "Failed.Id");
    str_max(e->code, 256, 1, "Failed.Code");
    str_max(e->message, OB__SQS_MAX_FIELD_BYTES, 1, "Failed.Message");
    if (e->sender_fault != 0 && e->sender_fault != 1) fail("SenderFault", NULL);
    for (size_t j = 0; j < r.nok; j++)
      if (strcmp(r.ok[j].id, e->id) == 0) fail("Id both ok and failed", e->id);
  }
  ob__sqs_batch_result_free(&r);
  ob__sqs_batch_result_free(&r);
}

static void fuzz_queue_url(const char* body, size_t len) {
  ob__sqs_diag_t d;
  char* url = (char*)1;
  int rc = ob__sqs_parse_get_queue_url(body, len, &url, &d);
  check_rc(rc, &d);
  if (rc != 0) {
    if (url != NULL) fail("url set on error", NULL);
    return;
  }
  if (url == NULL || *url == '\0') fail("empty QueueUrl accepted", NULL);
  str_max(url, OB__SQS_MAX_FIELD_BYTES, 1, "QueueUrl");
  free(url);
}

static void fuzz_attributes(const char* body, size_t len) {
  ob__sqs_attrs_result_t r;
  ob__sqs_diag_t d;
  int rc = ob__sqs_parse_get_queue_attributes(body, len, &r, &d);
  check_rc(rc, &d);
  if (rc != 0) {
    if (!is_zero(&r, sizeof r)) fail("result not zeroed on error", NULL);
    return;
  }
  if (r.n > 64) fail("too many attributes", NULL);
  for (size_t i = 0; i < r.n; i++) {
    str_max(r.attrs[i].name, SIZE_MAX, 1, "attribute name");
    str_max(r.attrs[i].value, 65536, 1, "attribute value");
    /* The first attribute of a name is the one looked up. */
    {
      const char* v = ob__sqs_attr_get(&r, r.attrs[i].name);
      size_t first = 0;
      while (strcmp(r.attrs[first].name, r.attrs[i].name) != 0) first++;
      if (v != r.attrs[first].value) fail("ob__sqs_attr_get", NULL);
    }
  }
  ob__sqs_attrs_result_free(&r);
  ob__sqs_attrs_result_free(&r);
}

static void fuzz_empty(const char* body, size_t len) {
  ob__sqs_diag_t d;
  check_rc(ob__sqs_parse_empty(body, len, &d), &d);
}

static int terminated(const char* s, size_t cap) {
  return memchr(s, '\0', cap) != NULL;
}

/* "<status>\n<query-error>\n<errortype>\n<body>" */
static void fuzz_error(const char* in, size_t len) {
  ob__sqs_error_t e;
  const char* end = in + len;
  const char* line[3];
  size_t llen[3];
  char* hdr[3] = {NULL, NULL, NULL};
  const char* body;
  int status = 0, rc;
  const char* p = in;
  for (int i = 0; i < 3; i++) {
    const char* nl = memchr(p, '\n', (size_t)(end - p));
    line[i] = p;
    llen[i] = nl ? (size_t)(nl - p) : (size_t)(end - p);
    p = nl ? nl + 1 : end;
  }
  body = p;
  for (size_t i = 0; i < llen[0] && i < 4; i++)
    if (line[0][i] >= '0' && line[0][i] <= '9')
      status = status * 10 + (line[0][i] - '0');
  for (int i = 1; i < 3; i++) {
    if (llen[i] == 0) continue; /* header absent */
    hdr[i] = malloc(llen[i] + 1);
    if (hdr[i] == NULL) goto out;
    memcpy(hdr[i], line[i], llen[i]);
    hdr[i][llen[i]] = '\0';
  }
  rc = ob__sqs_parse_error(status, body, (size_t)(end - body), hdr[1], hdr[2],
                           &e);
  if (rc != 0) fail("parse_error failed", NULL);
  if (e.http_status != status) fail("http_status", NULL);
  if (!terminated(e.code, sizeof e.code) || !terminated(e.type, sizeof e.type) ||
      !terminated(e.query_code, sizeof e.query_code) ||
      !terminated(e.message, sizeof e.message))
    fail("error string not NUL-terminated", NULL);
  if (e.sender_fault < -1 || e.sender_fault > 1) fail("sender_fault", NULL);
  /* Without the header, only a query-protocol XML body (<Type>) gives a
  ** fault. */
  if (hdr[1] == NULL &&
      (e.query_code[0] ||
       (e.sender_fault != -1 && e.body != OB__SQS_BODY_XML)))
    fail("query code without the header", NULL);
  if (e.query_code[0] ? strcmp(e.code, e.query_code) != 0
      : e.type[0]     ? strcmp(e.code, e.type) != 0
      : hdr[2] == NULL && e.code[0] != '\0')
    fail("code precedence", e.code);
  if (e.code[0] && !ob__sqs_error_is(&e, e.code) &&
      strncmp(e.code, "AWS.SimpleQueueService.", 23) != 0)
    fail("ob__sqs_error_is(code)", e.code);
  (void)ob__sqs_error_is(&e, "QueueDoesNotExist");
  (void)ob__sqs_error_is(&e, "");
  if (e.body != OB__SQS_BODY_JSON && e.body != OB__SQS_BODY_XML && e.type[0])
    fail("a type from a body that is neither JSON nor XML", e.type);
  {
    /* The sentence for a server that is not the SQS JSON API: terminated,
    ** never for an outage, no control byte from the peer (a log line). */
    char sentence[768];
    /* (the x-amzn-errortype line doubles as the Content-Type here) */
    int r = ob__sqs_not_json_api(&e, hdr[2], "AmazonSQS.SendMessageBatch",
                                 "https://sqs.test/", sentence,
                                 sizeof sentence);
    if (r != 0 && r != 1) fail("not_json_api result", NULL);
    if (!terminated(sentence, sizeof sentence)) fail("sentence not NUL-terminated", NULL);
    if (r == 1 && (sentence[0] == '\0' || status == 502 || status == 503 ||
                   status == 504))
      fail("not_json_api said yes", sentence);
    if (r == 0 && sentence[0] != '\0') fail("a sentence without yes", sentence);
    for (const char* c = sentence; *c; c++)
      if ((unsigned char)*c < 0x20 || *c == 0x7f)
        fail("a control byte in the sentence", sentence);
  }
out:
  free(hdr[1]);
  free(hdr[2]);
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const char sel_of[] = "RrSsBbDdVvUAZE";
  char sel;
  char* body;
  size_t len;

  if (size < 1 || size > 1024 * 1024) return 0;
  sel = (char)data[0];
  if (strchr(sel_of, sel) == NULL || sel == '\0')
    sel = sel_of[data[0] % (sizeof sel_of - 1)];
  len = size - 1;
  /* Exact-size private copy: parsers must respect len. */
  body = malloc(len ? len : 1);
  if (body == NULL) return 0;
  memcpy(body, data + 1, len);

  switch (sel) {
    case 'R': fuzz_receive(body, len, 0); break;
    case 'r': fuzz_receive(body, len, OB__SQS_VERIFY_ATTR_MD5); break;
    case 'S': fuzz_send(body, len, 0); break;
    case 's': fuzz_send(body, len, 1); break;
    case 'B': fuzz_batch(OB__SQS_SEND_MESSAGE_BATCH, body, len, 0); break;
    case 'b': fuzz_batch(OB__SQS_SEND_MESSAGE_BATCH, body, len, 1); break;
    case 'D': fuzz_batch(OB__SQS_DELETE_MESSAGE_BATCH, body, len, 0); break;
    case 'd': fuzz_batch(OB__SQS_DELETE_MESSAGE_BATCH, body, len, 1); break;
    case 'V':
      fuzz_batch(OB__SQS_CHANGE_MESSAGE_VISIBILITY_BATCH, body, len, 0);
      break;
    case 'v':
      fuzz_batch(OB__SQS_CHANGE_MESSAGE_VISIBILITY_BATCH, body, len, 1);
      break;
    case 'U': fuzz_queue_url(body, len); break;
    case 'A': fuzz_attributes(body, len); break;
    case 'Z': fuzz_empty(body, len); break;
    default: fuzz_error(body, len); break;
  }
  free(body);
  return 0;
}
