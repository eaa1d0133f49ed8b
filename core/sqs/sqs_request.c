/* SPDX-License-Identifier: Apache-2.0 */
/*
** SQS request bodies (AWS JSON 1.0). Members are written in the service
** model's order, which is what the SDKs send (docs/sqs-protocol.md, "Wire
** format"); SQS does not care, but it keeps captures comparable.
**
** Everything is validated before writing, with the limits of
** docs/sqs-protocol.md ("Limits"), so a
** request SQS would refuse (InvalidMessageContents, BatchRequestTooLong,
** TooManyEntriesInBatchRequest, ...) fails here with a specific diagnosis
** instead of costing a round trip and a retry budget.
*/
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/sqs/sqs_int.h"
#include "oncebox.h"

static const char* const k_targets[OB__SQS_OP_COUNT] = {
    "AmazonSQS.SendMessage",
    "AmazonSQS.SendMessageBatch",
    "AmazonSQS.ReceiveMessage",
    "AmazonSQS.DeleteMessage",
    "AmazonSQS.DeleteMessageBatch",
    "AmazonSQS.ChangeMessageVisibility",
    "AmazonSQS.ChangeMessageVisibilityBatch",
    "AmazonSQS.GetQueueUrl",
    "AmazonSQS.GetQueueAttributes",
};

const char* ob__sqs_target(ob__sqs_op_t op) {
  if ((int)op < 0 || op >= OB__SQS_OP_COUNT) return NULL;
  return k_targets[op];
}

void ob__sqs_send_init(ob__sqs_send_t* m) {
  memset(m, 0, sizeof *m);
  m->delay_seconds = -1;
}

void ob__sqs_receive_init(ob__sqs_receive_t* r) {
  memset(r, 0, sizeof *r);
  r->visibility_timeout = -1;
  r->wait_time_seconds = -1;
}

/* Saturating: a bogus length must not wrap around and pass a limit. */
static size_t add_sat(size_t a, size_t b) {
  return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

size_t ob__sqs_message_size(const ob__sqs_send_t* m) {
  size_t n = m->body_len;
  for (size_t i = 0; i < m->nattrs && m->attrs; i++) {
    const ob__sqs_attr_t* a = &m->attrs[i];
    n = add_sat(n, a->name ? strlen(a->name) : 0);
    n = add_sat(n, a->data_type ? strlen(a->data_type) : 0);
    n = add_sat(n, a->value_len);
  }
  return n;
}

/* ---------------------------------------------------------------------------
** Validation.
*/
static int is_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9');
}

/* A non-empty string of valid UTF-8 (JSON needs it). */
static int check_str(const char* s, const char* field, ob__sqs_diag_t* d) {
  if (s == NULL || *s == '\0')
    return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_ARG, "%s", field);
  if (!ob__sqs_utf8_ok(s, strlen(s), 0))
    return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_TEXT, "%s", field);
  return 0;
}

/* Batch entry Id: [A-Za-z0-9_-]{1,80}. */
static int valid_batch_id(const char* s) {
  size_t n = 0;
  if (s == NULL) return 0;
  for (; s[n]; n++)
    if (!is_alnum(s[n]) && s[n] != '_' && s[n] != '-') return 0;
  return n >= 1 && n <= 80;
}

/* MessageDeduplicationId, MessageGroupId, ReceiveRequestAttemptId: 1..128
** of alphanumerics and ASCII punctuation. */
static int valid_token128(const char* s) {
  size_t n = 0;
  for (; s[n]; n++)
    if ((unsigned char)s[n] < 0x21 || (unsigned char)s[n] > 0x7e) return 0;
  return n >= 1 && n <= 128;
}

/* Attribute name: 1..256 of [A-Za-z0-9_.-], no leading/trailing/double
** '.', no "AWS." / "Amazon." prefix (any case). */
static int valid_attr_name(const char* s) {
  size_t n = 0;
  if (s == NULL || *s == '\0' || *s == '.') return 0;
  for (; s[n]; n++) {
    if (!is_alnum(s[n]) && s[n] != '_' && s[n] != '-' && s[n] != '.') return 0;
    if (s[n] == '.' && s[n + 1] == '.') return 0;
  }
  if (n > 256 || s[n - 1] == '.') return 0;
  if (n >= 4 && strncasecmp(s, "aws.", 4) == 0) return 0;
  if (n >= 7 && strncasecmp(s, "amazon.", 7) == 0) return 0;
  return 1;
}

/* The base type, or OB__SQS_DT_INVALID. Optional ".label" of printable
** ASCII; 256 characters at most in all. */
static ob__sqs_data_type_t data_type_kind(const char* s) {
  static const char* const base[] = {"String", "Number", "Binary"};
  size_t n;
  if (s == NULL) return OB__SQS_DT_INVALID;
  n = strlen(s);
  if (n > 256) return OB__SQS_DT_INVALID;
  for (int k = 0; k < 3; k++) {
    if (strncmp(s, base[k], 6) != 0) continue;
    if (s[6] == '\0') return (ob__sqs_data_type_t)(OB__SQS_DT_STRING + k);
    if (s[6] != '.' || s[7] == '\0') return OB__SQS_DT_INVALID;
    for (size_t i = 7; i < n; i++)
      if ((unsigned char)s[i] < 0x21 || (unsigned char)s[i] > 0x7e)
        return OB__SQS_DT_INVALID;
    return (ob__sqs_data_type_t)(OB__SQS_DT_STRING + k);
  }
  return OB__SQS_DT_INVALID;
}

/* SQS Number: optional sign, digits with an optional fraction, optional
** exponent. */
static int valid_number(const char* s, size_t n) {
  size_t i = 0, digits = 0;
  if (i < n && (s[i] == '+' || s[i] == '-')) i++;
  while (i < n && s[i] >= '0' && s[i] <= '9') i++, digits++;
  if (i < n && s[i] == '.') {
    i++;
    while (i < n && s[i] >= '0' && s[i] <= '9') i++, digits++;
  }
  if (digits == 0) return 0;
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    size_t e = 0;
    i++;
    if (i < n && (s[i] == '+' || s[i] == '-')) i++;
    while (i < n && s[i] >= '0' && s[i] <= '9') i++, e++;
    if (e == 0) return 0;
  }
  return i == n;
}

static int check_attrs(const ob__sqs_attr_t* a, size_t n, const char* where,
                       ob__sqs_diag_t* d) {
  if (n > OB__SQS_MAX_ATTRIBUTES)
    return ob__sqs_fail(d, OB_ETOOBIG, OB__SQS_FAULT_TOO_MANY,
                        "%sMessageAttributes", where);
  if (n && a == NULL)
    return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_ARG, "%sMessageAttributes",
                        where);
  for (size_t i = 0; i < n; i++) {
    ob__sqs_data_type_t kind = data_type_kind(a[i].data_type);
    if (!valid_attr_name(a[i].name))
      return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_NAME,
                          "%sMessageAttributes[%zu]", where, i);
    for (size_t j = 0; j < i; j++)
      if (strcmp(a[i].name, a[j].name) == 0)
        return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_DUPLICATE,
                            "%sMessageAttributes.%.20s", where, a[i].name);
    if (kind == OB__SQS_DT_INVALID)
      return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_NAME,
                          "%sMessageAttributes.%.20s.DataType", where,
                          a[i].name);
    if (a[i].value == NULL || a[i].value_len == 0)
      return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_ARG,
                          "%sMessageAttributes.%.20s.Value", where, a[i].name);
    if (a[i].value_len > OB__SQS_MAX_MESSAGE_BYTES)
      return ob__sqs_fail(d, OB_ETOOBIG, OB__SQS_FAULT_TOO_BIG,
                          "%sMessageAttributes.%.20s.Value", where, a[i].name);
    if (kind != OB__SQS_DT_BINARY && !ob__sqs_utf8_ok(a[i].value, a[i].value_len, 1))
      return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_TEXT,
                          "%sMessageAttributes.%.20s.StringValue", where,
                          a[i].name);
    if (kind == OB__SQS_DT_NUMBER && !valid_number(a[i].value, a[i].value_len))
      return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_TEXT,
                          "%sMessageAttributes.%.20s.StringValue", where,
                          a[i].name);
  }
  return 0;
}

static int check_message(const ob__sqs_send_t* m, const char* where,
                         int in_batch, ob__sqs_diag_t* d) {
  int rc;
  if (in_batch && !valid_batch_id(m->id))
    return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_NAME, "%sId", where);
  if (m->body == NULL || m->body_len == 0)
    return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_ARG, "%sMessageBody",
                        where);
  if (m->body_len > OB__SQS_MAX_MESSAGE_BYTES)
    return ob__sqs_fail(d, OB_ETOOBIG, OB__SQS_FAULT_TOO_BIG, "%sMessageBody",
                        where);
  if (!ob__sqs_utf8_ok(m->body, m->body_len, 1))
    return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_TEXT, "%sMessageBody",
                        where);
  if (m->delay_seconds < -1 || m->delay_seconds > 900)
    return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_ARG, "%sDelaySeconds",
                        where);
  if ((rc = check_attrs(m->attrs, m->nattrs, where, d)) != 0) return rc;
  if (ob__sqs_message_size(m) > OB__SQS_MAX_MESSAGE_BYTES)
    return ob__sqs_fail(d, OB_ETOOBIG, OB__SQS_FAULT_TOO_BIG, "%smessage size",
                        where);
  if (m->trace_header &&
      (*m->trace_header == '\0' ||
       !ob__sqs_utf8_ok(m->trace_header, strlen(m->trace_header), 1)))
    return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_TEXT,
                        "%sMessageSystemAttributes.AWSTraceHeader", where);
  if (m->dedup_id && !valid_token128(m->dedup_id))
    return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_NAME,
                        "%sMessageDeduplicationId", where);
  if (m->group_id && !valid_token128(m->group_id))
    return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_NAME, "%sMessageGroupId",
                        where);
  return 0;
}

static void write_mav(ob__jw_t* w, const char* data_type, const void* v,
                      size_t n) {
  ob__jw_begin_object(w);
  if (data_type_kind(data_type) == OB__SQS_DT_BINARY) {
    ob__jw_key(w, "BinaryValue");
    ob__jw_base64(w, v, n);
  } else {
    ob__jw_key(w, "StringValue");
    ob__jw_string(w, v, n);
  }
  ob__jw_key(w, "DataType");
  ob__jw_cstring(w, data_type);
  ob__jw_end_object(w);
}

/* The members of SendMessage after QueueUrl, and of a batch entry. */
static void write_message(ob__jw_t* w, const ob__sqs_send_t* m, int in_batch) {
  if (in_batch) {
    ob__jw_key(w, "Id");
    ob__jw_cstring(w, m->id);
  }
  ob__jw_key(w, "MessageBody");
  ob__jw_string(w, m->body, m->body_len);
  if (m->delay_seconds >= 0) {
    ob__jw_key(w, "DelaySeconds");
    ob__jw_int(w, m->delay_seconds);
  }
  if (m->nattrs) {
    ob__jw_key(w, "MessageAttributes");
    ob__jw_begin_object(w);
    for (size_t i = 0; i < m->nattrs; i++) {
      ob__jw_key(w, m->attrs[i].name);
      write_mav(w, m->attrs[i].data_type, m->attrs[i].value,
                m->attrs[i].value_len);
    }
    ob__jw_end_object(w);
  }
  if (m->trace_header) {
    ob__jw_key(w, "MessageSystemAttributes");
    ob__jw_begin_object(w);
    ob__jw_key(w, "AWSTraceHeader");
    write_mav(w, "String", m->trace_header, strlen(m->trace_header));
    ob__jw_end_object(w);
  }
  if (m->dedup_id) {
    ob__jw_key(w, "MessageDeduplicationId");
    ob__jw_cstring(w, m->dedup_id);
  }
  if (m->group_id) {
    ob__jw_key(w, "MessageGroupId");
    ob__jw_cstring(w, m->group_id);
  }
}

static int finish(ob__jw_t* w, char** out, size_t* out_len,
                  ob__sqs_diag_t* d) {
  int rc = ob__jw_finish(w, out, out_len);
  if (rc == OB_EINVAL)  /* only reachable if a check above missed a string */
    return ob__sqs_fail(d, rc, OB__SQS_FAULT_TEXT, "request");
  if (rc != 0) return ob__sqs_fail(d, rc, OB__SQS_FAULT_NONE, "request");
  return 0;
}

static void reset_out(char** out, size_t* out_len, ob__sqs_diag_t* d) {
  if (out) *out = NULL;
  if (out_len) *out_len = 0;
  if (d) {
    d->fault = OB__SQS_FAULT_NONE;
    d->field[0] = '\0';
  }
}

/* ---------------------------------------------------------------------------
** Builders.
*/
int ob__sqs_build_send_message(const char* queue_url, const ob__sqs_send_t* m,
                               char** out, size_t* out_len,
                               ob__sqs_diag_t* d) {
  ob__jw_t w = {0};
  int rc;
  reset_out(out, out_len, d);
  if (out == NULL || m == NULL)
    return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_ARG, "out");
  if ((rc = check_str(queue_url, "QueueUrl", d)) != 0) return rc;
  if ((rc = check_message(m, "", 0, d)) != 0) return rc;
  ob__jw_begin_object(&w);
  ob__jw_key(&w, "QueueUrl");
  ob__jw_cstring(&w, queue_url);
  write_message(&w, m, 0);
  ob__jw_end_object(&w);
  return finish(&w, out, out_len, d);
}

static int check_batch_ids(const char* const* ids, size_t n,
                           ob__sqs_diag_t* d) {
  for (size_t i = 0; i < n; i++) {
    if (!valid_batch_id(ids[i]))
      return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_NAME, "Entries[%zu].Id",
                          i);
    for (size_t j = 0; j < i; j++)
      if (strcmp(ids[i], ids[j]) == 0)
        return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_DUPLICATE,
                            "Entries[%zu].Id", i);
  }
  return 0;
}

static int check_batch_count(size_t n, ob__sqs_diag_t* d) {
  if (n == 0)
    return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_ARG, "Entries");
  if (n > OB__SQS_MAX_BATCH_ENTRIES)
    return ob__sqs_fail(d, OB_ETOOBIG, OB__SQS_FAULT_TOO_MANY, "Entries");
  return 0;
}

int ob__sqs_build_send_message_batch(const char* queue_url,
                                     const ob__sqs_send_t* e, size_t n,
                                     char** out, size_t* out_len,
                                     ob__sqs_diag_t* d) {
  ob__jw_t w = {0};
  const char* ids[OB__SQS_MAX_BATCH_ENTRIES] = {0};
  size_t total = 0;
  int rc;
  reset_out(out, out_len, d);
  if (out == NULL || (n && e == NULL))
    return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_ARG, "out");
  if ((rc = check_str(queue_url, "QueueUrl", d)) != 0) return rc;
  if ((rc = check_batch_count(n, d)) != 0) return rc;
  for (size_t i = 0; i < n; i++) {
    char where[32];
    snprintf(where, sizeof where, "Entries[%zu].", i);
    if ((rc = check_message(&e[i], where, 1, d)) != 0) return rc;
    ids[i] = e[i].id;
    total += ob__sqs_message_size(&e[i]);
  }
  if ((rc = check_batch_ids(ids, n, d)) != 0) return rc;
  if (total > OB__SQS_MAX_BATCH_BYTES)
    return ob__sqs_fail(d, OB_ETOOBIG, OB__SQS_FAULT_TOO_BIG, "Entries");
  ob__jw_begin_object(&w);
  ob__jw_key(&w, "QueueUrl");
  ob__jw_cstring(&w, queue_url);
  ob__jw_key(&w, "Entries");
  ob__jw_begin_array(&w);
  for (size_t i = 0; i < n; i++) {
    ob__jw_begin_object(&w);
    write_message(&w, &e[i], 1);
    ob__jw_end_object(&w);
  }
  ob__jw_end_array(&w);
  ob__jw_end_object(&w);
  return finish(&w, out, out_len, d);
}

static int check_names(const char* const* names, size_t n, const char* field,
                       ob__sqs_diag_t* d) {
  if (n && names == NULL)
    return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_ARG, "%s", field);
  for (size_t i = 0; i < n; i++) {
    if (names[i] == NULL || *names[i] == '\0' ||
        !ob__sqs_utf8_ok(names[i], strlen(names[i]), 0))
      return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_NAME, "%s[%zu]", field,
                          i);
  }
  return 0;
}

static void write_names(ob__jw_t* w, const char* key, const char* const* names,
                        size_t n) {
  if (n == 0) return;
  ob__jw_key(w, key);
  ob__jw_begin_array(w);
  for (size_t i = 0; i < n; i++) ob__jw_cstring(w, names[i]);
  ob__jw_end_array(w);
}

int ob__sqs_build_receive_message(const ob__sqs_receive_t* r, char** out,
                                  size_t* out_len, ob__sqs_diag_t* d) {
  ob__jw_t w = {0};
  int rc;
  reset_out(out, out_len, d);
  if (out == NULL || r == NULL)
    return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_ARG, "out");
  if ((rc = check_str(r->queue_url, "QueueUrl", d)) != 0) return rc;
  if ((rc = check_names(r->system_attribute_names, r->nsystem_attribute_names,
                        "MessageSystemAttributeNames", d)) != 0)
    return rc;
  if ((rc = check_names(r->message_attribute_names,
                        r->nmessage_attribute_names, "MessageAttributeNames",
                        d)) != 0)
    return rc;
  if (r->max_messages < 0 || r->max_messages > OB__SQS_MAX_RECEIVE)
    return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_ARG,
                        "MaxNumberOfMessages");
  if (r->visibility_timeout < -1 || r->visibility_timeout > 43200)
    return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_ARG, "VisibilityTimeout");
  if (r->wait_time_seconds < -1 || r->wait_time_seconds > 20)
    return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_ARG, "WaitTimeSeconds");
  if (r->receive_request_attempt_id &&
      !valid_token128(r->receive_request_attempt_id))
    return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_NAME,
                        "ReceiveRequestAttemptId");
  ob__jw_begin_object(&w);
  ob__jw_key(&w, "QueueUrl");
  ob__jw_cstring(&w, r->queue_url);
  write_names(&w, "MessageSystemAttributeNames", r->system_attribute_names,
              r->nsystem_attribute_names);
  write_names(&w, "MessageAttributeNames", r->message_attribute_names,
              r->nmessage_attribute_names);
  if (r->max_messages > 0) {
    ob__jw_key(&w, "MaxNumberOfMessages");
    ob__jw_int(&w, r->max_messages);
  }
  if (r->visibility_timeout >= 0) {
    ob__jw_key(&w, "VisibilityTimeout");
    ob__jw_int(&w, r->visibility_timeout);
  }
  if (r->wait_time_seconds >= 0) {
    ob__jw_key(&w, "WaitTimeSeconds");
    ob__jw_int(&w, r->wait_time_seconds);
  }
  if (r->receive_request_attempt_id) {
    ob__jw_key(&w, "ReceiveRequestAttemptId");
    ob__jw_cstring(&w, r->receive_request_attempt_id);
  }
  ob__jw_end_object(&w);
  return finish(&w, out, out_len, d);
}

int ob__sqs_build_delete_message(const char* queue_url,
                                 const char* receipt_handle, char** out,
                                 size_t* out_len, ob__sqs_diag_t* d) {
  ob__jw_t w = {0};
  int rc;
  reset_out(out, out_len, d);
  if (out == NULL) return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_ARG, "out");
  if ((rc = check_str(queue_url, "QueueUrl", d)) != 0) return rc;
  if ((rc = check_str(receipt_handle, "ReceiptHandle", d)) != 0) return rc;
  ob__jw_begin_object(&w);
  ob__jw_key(&w, "QueueUrl");
  ob__jw_cstring(&w, queue_url);
  ob__jw_key(&w, "ReceiptHandle");
  ob__jw_cstring(&w, receipt_handle);
  ob__jw_end_object(&w);
  return finish(&w, out, out_len, d);
}

static int build_handle_batch(const char* queue_url,
                              const ob__sqs_handle_entry_t* e, size_t n,
                              int with_vt, char** out, size_t* out_len,
                              ob__sqs_diag_t* d) {
  ob__jw_t w = {0};
  const char* ids[OB__SQS_MAX_BATCH_ENTRIES] = {0};
  int rc;
  reset_out(out, out_len, d);
  if (out == NULL || (n && e == NULL))
    return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_ARG, "out");
  if ((rc = check_str(queue_url, "QueueUrl", d)) != 0) return rc;
  if ((rc = check_batch_count(n, d)) != 0) return rc;
  for (size_t i = 0; i < n; i++) {
    char field[64];
    snprintf(field, sizeof field, "Entries[%zu].ReceiptHandle", i);
    if ((rc = check_str(e[i].receipt_handle, field, d)) != 0) return rc;
    if (with_vt &&
        (e[i].visibility_timeout < -1 || e[i].visibility_timeout > 43200))
      return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_ARG,
                          "Entries[%zu].VisibilityTimeout", i);
    ids[i] = e[i].id;
  }
  if ((rc = check_batch_ids(ids, n, d)) != 0) return rc;
  ob__jw_begin_object(&w);
  ob__jw_key(&w, "QueueUrl");
  ob__jw_cstring(&w, queue_url);
  ob__jw_key(&w, "Entries");
  ob__jw_begin_array(&w);
  for (size_t i = 0; i < n; i++) {
    ob__jw_begin_object(&w);
    ob__jw_key(&w, "Id");
    ob__jw_cstring(&w, e[i].id);
    ob__jw_key(&w, "ReceiptHandle");
    ob__jw_cstring(&w, e[i].receipt_handle);
    if (with_vt && e[i].visibility_timeout >= 0) {
      ob__jw_key(&w, "VisibilityTimeout");
      ob__jw_int(&w, e[i].visibility_timeout);
    }
    ob__jw_end_object(&w);
  }
  ob__jw_end_array(&w);
  ob__jw_end_object(&w);
  return finish(&w, out, out_len, d);
}

int ob__sqs_build_delete_message_batch(const char* queue_url,
                                       const ob__sqs_handle_entry_t* e,
                                       size_t n, char** out, size_t* out_len,
                                       ob__sqs_diag_t* d) {
  return build_handle_batch(queue_url, e, n, 0, out, out_len, d);
}

int ob__sqs_build_change_visibility_batch(const char* queue_url,
                                          const ob__sqs_handle_entry_t* e,
                                          size_t n, char** out,
                                          size_t* out_len, ob__sqs_diag_t* d) {
  return build_handle_batch(queue_url, e, n, 1, out, out_len, d);
}

int ob__sqs_build_change_visibility(const char* queue_url,
                                    const char* receipt_handle,
                                    int visibility_timeout, char** out,
                                    size_t* out_len, ob__sqs_diag_t* d) {
  ob__jw_t w = {0};
  int rc;
  reset_out(out, out_len, d);
  if (out == NULL) return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_ARG, "out");
  if ((rc = check_str(queue_url, "QueueUrl", d)) != 0) return rc;
  if ((rc = check_str(receipt_handle, "ReceiptHandle", d)) != 0) return rc;
  if (visibility_timeout < 0 || visibility_timeout > 43200)
    return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_ARG, "VisibilityTimeout");
  ob__jw_begin_object(&w);
  ob__jw_key(&w, "QueueUrl");
  ob__jw_cstring(&w, queue_url);
  ob__jw_key(&w, "ReceiptHandle");
  ob__jw_cstring(&w, receipt_handle);
  ob__jw_key(&w, "VisibilityTimeout");
  ob__jw_int(&w, visibility_timeout);
  ob__jw_end_object(&w);
  return finish(&w, out, out_len, d);
}

int ob__sqs_build_get_queue_url(const char* queue_name,
                                const char* owner_account_id, char** out,
                                size_t* out_len, ob__sqs_diag_t* d) {
  ob__jw_t w = {0};
  int rc;
  size_t n;
  reset_out(out, out_len, d);
  if (out == NULL) return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_ARG, "out");
  if ((rc = check_str(queue_name, "QueueName", d)) != 0) return rc;
  /* ≤ 80 of [A-Za-z0-9_-], ".fifo" allowed at the end. */
  n = strlen(queue_name);
  if (n > 80)
    return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_NAME, "QueueName");
  for (size_t i = 0; i < n; i++) {
    char c = queue_name[i];
    int fifo_tail = n >= 5 && i == n - 5 && strcmp(queue_name + i, ".fifo") == 0;
    if (fifo_tail) break;
    if (!is_alnum(c) && c != '_' && c != '-')
      return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_NAME, "QueueName");
  }
  if (owner_account_id && (rc = check_str(owner_account_id,
                                          "QueueOwnerAWSAccountId", d)) != 0)
    return rc;
  ob__jw_begin_object(&w);
  ob__jw_key(&w, "QueueName");
  ob__jw_cstring(&w, queue_name);
  if (owner_account_id) {
    ob__jw_key(&w, "QueueOwnerAWSAccountId");
    ob__jw_cstring(&w, owner_account_id);
  }
  ob__jw_end_object(&w);
  return finish(&w, out, out_len, d);
}

int ob__sqs_build_get_queue_attributes(const char* queue_url,
                                       const char* const* names, size_t n,
                                       char** out, size_t* out_len,
                                       ob__sqs_diag_t* d) {
  ob__jw_t w = {0};
  int rc;
  reset_out(out, out_len, d);
  if (out == NULL) return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_ARG, "out");
  if ((rc = check_str(queue_url, "QueueUrl", d)) != 0) return rc;
  if ((rc = check_names(names, n, "AttributeNames", d)) != 0) return rc;
  ob__jw_begin_object(&w);
  ob__jw_key(&w, "QueueUrl");
  ob__jw_cstring(&w, queue_url);
  write_names(&w, "AttributeNames", names, n);
  ob__jw_end_object(&w);
  return finish(&w, out, out_len, d);
}
