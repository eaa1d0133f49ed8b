/* SPDX-License-Identifier: Apache-2.0 */
/*
** SQS responses: success bodies, batch results, error responses.
**
** A response is untrusted input (a proxy, an emulator, a broken or hostile
** peer): the whole body is capped, nesting is pre-scanned, every member is
** type-checked, every string is length-capped, counts are capped to what the
** protocol allows, and each failure names the member involved.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mbedtls/base64.h>

#include "core/util/peer_text.h"
#include "core/sqs/sqs_int.h"
#include "oncebox.h"

#define MAX_SYSTEM_ATTRIBUTES 32
#define MAX_QUEUE_ATTRIBUTES 64
#define MAX_QUEUE_ATTRIBUTE_VALUE 65536  /* Policy, RedrivePolicy documents */

static void diag_reset(ob__sqs_diag_t* d) {
  if (d) {
    d->fault = OB__SQS_FAULT_NONE;
    d->field[0] = '\0';
  }
}

/* A string member. Absent or null: *out = NULL, an error only if required. */
static int member_str(const cJSON* o, const char* key, int required,
                      size_t max, const char* prefix, const char** out,
                      ob__sqs_diag_t* d) {
  const cJSON* v = cJSON_GetObjectItemCaseSensitive(o, key);
  *out = NULL;
  if (v == NULL || cJSON_IsNull(v)) {
    if (required)
      return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_MISSING, "%s%s", prefix,
                          key);
    return 0;
  }
  if (!cJSON_IsString(v) || v->valuestring == NULL)
    return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_WRONG_TYPE, "%s%s", prefix,
                        key);
  if (strlen(v->valuestring) > max)
    return ob__sqs_fail(d, OB_ETOOBIG, OB__SQS_FAULT_TOO_BIG, "%s%s", prefix,
                        key);
  *out = v->valuestring;
  return 0;
}

/* An optional container member of the given kind; absent/null gives NULL. */
static int member_container(const cJSON* o, const char* key, int want_array,
                            const char* prefix, const cJSON** out,
                            ob__sqs_diag_t* d) {
  const cJSON* v = cJSON_GetObjectItemCaseSensitive(o, key);
  *out = NULL;
  if (v == NULL || cJSON_IsNull(v)) return 0;
  if (want_array ? !cJSON_IsArray(v) : !cJSON_IsObject(v))
    return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_WRONG_TYPE, "%s%s", prefix,
                        key);
  *out = v;
  return 0;
}

static size_t count_children(const cJSON* c) {
  size_t n = 0;
  const cJSON* it;
  cJSON_ArrayForEach(it, c) n++;
  return n;
}

/* Decimal integer as SQS sends counts and timestamps (strings of digits). */
static int parse_i64(const char* s, int64_t* out) {
  int64_t v = 0;
  if (s == NULL || *s == '\0') return -1;
  for (; *s; s++) {
    if (*s < '0' || *s > '9') return -1;
    if (v > (INT64_MAX - (*s - '0')) / 10) return -1;
    v = v * 10 + (*s - '0');
  }
  *out = v;
  return 0;
}

/* The base type of a message attribute DataType (any label). */
static ob__sqs_data_type_t attr_kind(const char* t) {
  static const char* const base[] = {"String", "Number", "Binary"};
  for (int k = 0; k < 3; k++)
    if (strncmp(t, base[k], 6) == 0)  /* then t[6] is in the string */
      return t[6] == '\0' || t[6] == '.'
                 ? (ob__sqs_data_type_t)(OB__SQS_DT_STRING + k)
                 : OB__SQS_DT_INVALID;
  return OB__SQS_DT_INVALID;
}

static int decode_b64(ob__sqs_pool_t* pool, const char* s, void** out,
                      size_t* out_len) {
  size_t need = 0, olen = 0;
  unsigned char* buf;
  int rc = mbedtls_base64_decode(NULL, 0, &need, (const unsigned char*)s,
                                 strlen(s));
  if (rc != 0 && rc != MBEDTLS_ERR_BASE64_BUFFER_TOO_SMALL) return OB_EINVAL;
  buf = ob__sqs_pool_alloc(pool, need + 1, 1);
  if (buf == NULL) return OB_ENOMEM;
  rc = mbedtls_base64_decode(buf, need + 1, &olen, (const unsigned char*)s,
                             strlen(s));
  if (rc != 0) return OB_EINVAL;
  *out = buf;
  *out_len = olen;
  return 0;
}

/* "MessageAttributes": {name: {DataType, StringValue | BinaryValue}}. */
static int parse_message_attributes(ob__sqs_pool_t* pool, const cJSON* obj,
                                    const char* prefix, ob__sqs_attr_t** out,
                                    size_t* nout, ob__sqs_diag_t* d) {
  const cJSON* it;
  size_t n = count_children(obj), i = 0;
  ob__sqs_attr_t* a;
  *out = NULL;
  *nout = 0;
  if (n > OB__SQS_MAX_ATTRIBUTES)
    return ob__sqs_fail(d, OB_ETOOBIG, OB__SQS_FAULT_TOO_MANY,
                        "%sMessageAttributes", prefix);
  a = ob__sqs_pool_alloc(pool, n, sizeof *a);
  if (a == NULL) return OB_ENOMEM;
  cJSON_ArrayForEach(it, obj) {
    char p2[96];
    const char *dt, *sv, *bv;
    int rc;
    ob__sqs_data_type_t kind;
    snprintf(p2, sizeof p2, "%sMessageAttributes.%.16s.", prefix,
             it->string ? it->string : "");
    if (it->string == NULL || *it->string == '\0' ||
        strlen(it->string) > 256)
      return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_NAME, "%s", p2);
    if (!cJSON_IsObject(it))
      return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_WRONG_TYPE, "%s", p2);
    if ((rc = member_str(it, "DataType", 1, 256, p2, &dt, d)) != 0) return rc;
    kind = attr_kind(dt);
    if (kind == OB__SQS_DT_INVALID)
      return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_BAD_VALUE, "%sDataType",
                          p2);
    a[i].name = it->string;
    a[i].data_type = dt;
    if (kind != OB__SQS_DT_BINARY) {
      if ((rc = member_str(it, "StringValue", 1, OB__SQS_MAX_MESSAGE_BYTES, p2,
                           &sv, d)) != 0)
        return rc;
      a[i].value = sv;
      a[i].value_len = strlen(sv);
    } else {
      void* bytes;
      size_t blen;
      /* base64 of at most 1 MiB */
      if ((rc = member_str(it, "BinaryValue", 1,
                           OB__SQS_MAX_MESSAGE_BYTES / 3 * 4 + 4, p2, &bv,
                           d)) != 0)
        return rc;
      rc = decode_b64(pool, bv, &bytes, &blen);
      if (rc == OB_ENOMEM) return rc;
      if (rc != 0)
        return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_BAD_VALUE,
                            "%sBinaryValue", p2);
      a[i].value = bytes;
      a[i].value_len = blen;
    }
    i++;
  }
  *out = a;
  *nout = n;
  return 0;
}

static int parse_message(ob__sqs_pool_t* pool, const cJSON* m, size_t idx,
                         int flags, ob__sqs_message_t* msg,
                         ob__sqs_diag_t* d) {
  char prefix[48];
  char md5[OB__SQS_MD5_BUFLEN];
  const cJSON *attrs, *mattrs, *it;
  int rc;
  snprintf(prefix, sizeof prefix, "Messages[%zu].", idx);
  msg->sent_timestamp_ms = -1;
  msg->first_receive_timestamp_ms = -1;
  if (!cJSON_IsObject(m))
    return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_WRONG_TYPE, "Messages[%zu]",
                        idx);
  if ((rc = member_str(m, "MessageId", 1, OB__SQS_MAX_FIELD_BYTES, prefix,
                       &msg->message_id, d)) != 0 ||
      (rc = member_str(m, "ReceiptHandle", 1, OB__SQS_MAX_FIELD_BYTES, prefix,
                       &msg->receipt_handle, d)) != 0 ||
      (rc = member_str(m, "MD5OfBody", 1, 64, prefix, &msg->md5_of_body, d)) !=
          0 ||
      (rc = member_str(m, "Body", 1, OB__SQS_MAX_MESSAGE_BYTES, prefix,
                       &msg->body, d)) != 0 ||
      (rc = member_str(m, "MD5OfMessageAttributes", 0, 64, prefix,
                       &msg->md5_of_message_attributes, d)) != 0)
    return rc;
  msg->body_len = strlen(msg->body);
  if ((rc = ob__sqs_md5_hex(msg->body, msg->body_len, md5)) != 0) return rc;
  if (!ob__sqs_md5_equal(msg->md5_of_body, md5))
    return ob__sqs_fail(d, OB_EIO, OB__SQS_FAULT_MD5, "%sMD5OfBody", prefix);

  if ((rc = member_container(m, "Attributes", 0, prefix, &attrs, d)) != 0)
    return rc;
  if (attrs) {
    size_t n = count_children(attrs), i = 0;
    if (n > MAX_SYSTEM_ATTRIBUTES)
      return ob__sqs_fail(d, OB_ETOOBIG, OB__SQS_FAULT_TOO_MANY,
                          "%sAttributes", prefix);
    msg->attributes = ob__sqs_pool_alloc(pool, n, sizeof *msg->attributes);
    if (msg->attributes == NULL) return OB_ENOMEM;
    cJSON_ArrayForEach(it, attrs) {
      const char* v;
      if (!cJSON_IsString(it) || it->valuestring == NULL || it->string == NULL)
        return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_WRONG_TYPE,
                            "%sAttributes.%.20s", prefix,
                            it->string ? it->string : "");
      v = it->valuestring;
      if (strlen(v) > OB__SQS_MAX_FIELD_BYTES)
        return ob__sqs_fail(d, OB_ETOOBIG, OB__SQS_FAULT_TOO_BIG,
                            "%sAttributes.%.20s", prefix, it->string);
      msg->attributes[i].name = it->string;
      msg->attributes[i].value = v;
      i++;
      if (strcmp(it->string, "ApproximateReceiveCount") == 0 ||
          strcmp(it->string, "SentTimestamp") == 0 ||
          strcmp(it->string, "ApproximateFirstReceiveTimestamp") == 0) {
        int64_t x;
        if (parse_i64(v, &x) != 0)
          return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_BAD_VALUE,
                              "%sAttributes.%s", prefix, it->string);
        if (strcmp(it->string, "ApproximateReceiveCount") == 0)
          msg->receive_count = x;
        else if (strcmp(it->string, "SentTimestamp") == 0)
          msg->sent_timestamp_ms = x;
        else
          msg->first_receive_timestamp_ms = x;
      } else if (strcmp(it->string, "MessageGroupId") == 0) {
        msg->group_id = v;
      } else if (strcmp(it->string, "MessageDeduplicationId") == 0) {
        msg->dedup_id = v;
      } else if (strcmp(it->string, "SequenceNumber") == 0) {
        msg->sequence_number = v;
      }
    }
    msg->nattributes = n;
  }

  if ((rc = member_container(m, "MessageAttributes", 0, prefix, &mattrs, d)) !=
      0)
    return rc;
  if (mattrs) {
    rc = parse_message_attributes(pool, mattrs, prefix,
                                  &msg->message_attributes,
                                  &msg->nmessage_attributes, d);
    if (rc != 0) return rc;
  }
  if ((flags & OB__SQS_VERIFY_ATTR_MD5) && msg->nmessage_attributes) {
    if (msg->md5_of_message_attributes == NULL)
      return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_MISSING,
                          "%sMD5OfMessageAttributes", prefix);
    rc = ob__sqs_md5_of_attributes(msg->message_attributes,
                                   msg->nmessage_attributes, md5);
    if (rc != 0) return rc;
    if (!ob__sqs_md5_equal(msg->md5_of_message_attributes, md5))
      return ob__sqs_fail(d, OB_EIO, OB__SQS_FAULT_MD5,
                          "%sMD5OfMessageAttributes", prefix);
  }
  return 0;
}

int ob__sqs_parse_receive_message(const char* body, size_t len, int flags,
                                  ob__sqs_receive_result_t* out,
                                  ob__sqs_diag_t* d) {
  ob__sqs_pool_t* pool = NULL;
  const cJSON *msgs, *it;
  size_t n, i = 0;
  int rc;
  diag_reset(d);
  if (out == NULL) return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_ARG, "out");
  memset(out, 0, sizeof *out);
  if ((pool = ob__sqs_pool_new()) == NULL) return OB_ENOMEM;
  if ((rc = ob__sqs_json_object(body, len, &pool->root, d)) != 0) goto fail;
  if ((rc = member_container(pool->root, "Messages", 1, "", &msgs, d)) != 0)
    goto fail;
  n = msgs ? count_children(msgs) : 0;
  if (n > OB__SQS_MAX_RECEIVE) {
    rc = ob__sqs_fail(d, OB_ETOOBIG, OB__SQS_FAULT_TOO_MANY, "Messages");
    goto fail;
  }
  out->messages = ob__sqs_pool_alloc(pool, n, sizeof *out->messages);
  if (out->messages == NULL) {
    rc = OB_ENOMEM;
    goto fail;
  }
  if (msgs) {
    cJSON_ArrayForEach(it, msgs) {
      rc = parse_message(pool, it, i, flags, &out->messages[i], d);
      if (rc != 0) goto fail;
      i++;
    }
  }
  out->n = n;
  out->priv_ = pool;
  return 0;
fail:
  ob__sqs_pool_free(pool);
  memset(out, 0, sizeof *out);
  return rc;
}

void ob__sqs_receive_result_free(ob__sqs_receive_result_t* r) {
  if (r == NULL) return;
  ob__sqs_pool_free(r->priv_);
  memset(r, 0, sizeof *r);
}

/* MD5OfMessageBody / MD5OfMessageAttributes of a send against what was
** sent. */
static int check_send_md5(const ob__sqs_send_t* sent, const char* md5_body,
                          const char* md5_attrs, const char* prefix,
                          ob__sqs_diag_t* d) {
  char md5[OB__SQS_MD5_BUFLEN];
  int rc = ob__sqs_md5_hex(sent->body, sent->body_len, md5);
  if (rc != 0) return rc;
  if (!ob__sqs_md5_equal(md5_body, md5))
    return ob__sqs_fail(d, OB_EIO, OB__SQS_FAULT_MD5, "%sMD5OfMessageBody",
                        prefix);
  if (sent->nattrs) {
    if (md5_attrs == NULL)
      return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_MISSING,
                          "%sMD5OfMessageAttributes", prefix);
    rc = ob__sqs_md5_of_attributes(sent->attrs, sent->nattrs, md5);
    if (rc != 0) return rc;
    if (!ob__sqs_md5_equal(md5_attrs, md5))
      return ob__sqs_fail(d, OB_EIO, OB__SQS_FAULT_MD5,
                          "%sMD5OfMessageAttributes", prefix);
  }
  return 0;
}

int ob__sqs_parse_send_message(const char* body, size_t len,
                               const ob__sqs_send_t* sent,
                               ob__sqs_send_result_t* out, ob__sqs_diag_t* d) {
  ob__sqs_pool_t* pool = NULL;
  const cJSON* root;
  int rc;
  diag_reset(d);
  if (out == NULL) return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_ARG, "out");
  memset(out, 0, sizeof *out);
  if ((pool = ob__sqs_pool_new()) == NULL) return OB_ENOMEM;
  if ((rc = ob__sqs_json_object(body, len, &pool->root, d)) != 0) goto fail;
  root = pool->root;
  if ((rc = member_str(root, "MessageId", 1, OB__SQS_MAX_FIELD_BYTES, "",
                       &out->message_id, d)) != 0 ||
      (rc = member_str(root, "MD5OfMessageBody", 1, 64, "", &out->md5_of_body,
                       d)) != 0 ||
      (rc = member_str(root, "MD5OfMessageAttributes", 0, 64, "",
                       &out->md5_of_message_attributes, d)) != 0 ||
      (rc = member_str(root, "MD5OfMessageSystemAttributes", 0, 64, "",
                       &out->md5_of_message_system_attributes, d)) != 0 ||
      (rc = member_str(root, "SequenceNumber", 0, OB__SQS_MAX_FIELD_BYTES, "",
                       &out->sequence_number, d)) != 0)
    goto fail;
  if (sent && (rc = check_send_md5(sent, out->md5_of_body,
                                   out->md5_of_message_attributes, "", d)) != 0)
    goto fail;
  out->priv_ = pool;
  return 0;
fail:
  ob__sqs_pool_free(pool);
  memset(out, 0, sizeof *out);
  return rc;
}

void ob__sqs_send_result_free(ob__sqs_send_result_t* r) {
  if (r == NULL) return;
  ob__sqs_pool_free(r->priv_);
  memset(r, 0, sizeof *r);
}

/* ---------------------------------------------------------------------------
** Batch results.
*/
static const char* requested_id(const char* const* ids,
                                const ob__sqs_send_t* sent, size_t i) {
  return ids ? ids[i] : sent[i].id;
}

/* Index of id among the request's Ids, or -1. */
static long find_id(const char* const* ids, const ob__sqs_send_t* sent,
                    size_t n, const char* id) {
  for (size_t i = 0; i < n; i++) {
    const char* r = requested_id(ids, sent, i);
    if (r && strcmp(r, id) == 0) return (long)i;
  }
  return -1;
}

int ob__sqs_parse_batch(ob__sqs_op_t op, const char* body, size_t len,
                        const ob__sqs_send_t* sent, const char* const* ids,
                        size_t n_ids, ob__sqs_batch_result_t* out,
                        ob__sqs_diag_t* d) {
  ob__sqs_pool_t* pool = NULL;
  const cJSON *okj, *failj, *it;
  unsigned char answered[OB__SQS_MAX_BATCH_ENTRIES] = {0};
  int send = op == OB__SQS_SEND_MESSAGE_BATCH;
  int know_ids;
  size_t nok, nfail, i;
  int rc;
  diag_reset(d);
  if (out == NULL) return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_ARG, "out");
  memset(out, 0, sizeof *out);
  if (op != OB__SQS_SEND_MESSAGE_BATCH && op != OB__SQS_DELETE_MESSAGE_BATCH &&
      op != OB__SQS_CHANGE_MESSAGE_VISIBILITY_BATCH)
    return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_ARG, "op");
  if (!send) sent = NULL;
  know_ids = ids != NULL || sent != NULL;
  if (know_ids && n_ids > OB__SQS_MAX_BATCH_ENTRIES)
    return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_ARG, "ids");
  if ((pool = ob__sqs_pool_new()) == NULL) return OB_ENOMEM;
  if ((rc = ob__sqs_json_object(body, len, &pool->root, d)) != 0) goto fail;
  if ((rc = member_container(pool->root, "Successful", 1, "", &okj, d)) != 0 ||
      (rc = member_container(pool->root, "Failed", 1, "", &failj, d)) != 0)
    goto fail;
  nok = okj ? count_children(okj) : 0;
  nfail = failj ? count_children(failj) : 0;
  if (nok + nfail > OB__SQS_MAX_BATCH_ENTRIES) {
    rc = ob__sqs_fail(d, OB_ETOOBIG, OB__SQS_FAULT_TOO_MANY,
                      nok > OB__SQS_MAX_BATCH_ENTRIES ? "Successful" : "Failed");
    goto fail;
  }
  out->ok = ob__sqs_pool_alloc(pool, nok, sizeof *out->ok);
  out->failed = ob__sqs_pool_alloc(pool, nfail, sizeof *out->failed);
  if (out->ok == NULL || out->failed == NULL) {
    rc = OB_ENOMEM;
    goto fail;
  }

  i = 0;
  if (okj) cJSON_ArrayForEach(it, okj) {
    ob__sqs_batch_ok_t* e = &out->ok[i];
    char prefix[48];
    snprintf(prefix, sizeof prefix, "Successful[%zu].", i);
    if (!cJSON_IsObject(it)) {
      rc = ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_WRONG_TYPE, "Successful[%zu]",
                        i);
      goto fail;
    }
    if ((rc = member_str(it, "Id", 1, 80, prefix, &e->id, d)) != 0) goto fail;
    if (send &&
        ((rc = member_str(it, "MessageId", 1, OB__SQS_MAX_FIELD_BYTES, prefix,
                          &e->message_id, d)) != 0 ||
         (rc = member_str(it, "MD5OfMessageBody", 1, 64, prefix,
                          &e->md5_of_body, d)) != 0 ||
         (rc = member_str(it, "MD5OfMessageAttributes", 0, 64, prefix,
                          &e->md5_of_message_attributes, d)) != 0 ||
         (rc = member_str(it, "SequenceNumber", 0, OB__SQS_MAX_FIELD_BYTES,
                          prefix, &e->sequence_number, d)) != 0))
      goto fail;
    i++;
  }
  i = 0;
  if (failj) cJSON_ArrayForEach(it, failj) {
    ob__sqs_batch_err_t* e = &out->failed[i];
    const cJSON* sf;
    char prefix[48];
    snprintf(prefix, sizeof prefix, "Failed[%zu].", i);
    if (!cJSON_IsObject(it)) {
      rc = ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_WRONG_TYPE, "Failed[%zu]",
                        i);
      goto fail;
    }
    if ((rc = member_str(it, "Id", 1, 80, prefix, &e->id, d)) != 0 ||
        (rc = member_str(it, "Code", 1, 256, prefix, &e->code, d)) != 0 ||
        (rc = member_str(it, "Message", 0, OB__SQS_MAX_FIELD_BYTES, prefix,
                         &e->message, d)) != 0)
      goto fail;
    if (e->message == NULL) e->message = "";
    {
      /* SQS's text (or a proxy's before it) reaches logs and last_error:
      ** cleaned of credentials and control characters (peer_text.h). */
      size_t n = strlen(e->message), cap = n * 4 + 1;
      char* clean = ob__sqs_pool_alloc(pool, 1, cap > 2048 ? 2048 : cap);
      if (clean == NULL) {
        rc = OB_ENOMEM;
        goto fail;
      }
      e->message = ob__peer_text(e->message, n, clean, cap > 2048 ? 2048 : cap);
    }
    sf = cJSON_GetObjectItemCaseSensitive(it, "SenderFault");
    if (sf == NULL) {
      rc = ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_MISSING, "%sSenderFault",
                        prefix);
      goto fail;
    }
    if (!cJSON_IsBool(sf)) {
      rc = ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_WRONG_TYPE,
                        "%sSenderFault", prefix);
      goto fail;
    }
    e->sender_fault = cJSON_IsTrue(sf);
    i++;
  }

  /* Every Id answered exactly once, and only the Ids we asked about. */
  for (i = 0; i < nok + nfail; i++) {
    const char* id = i < nok ? out->ok[i].id : out->failed[i - nok].id;
    const char* where = i < nok ? "Successful" : "Failed";
    size_t k = i < nok ? i : i - nok;
    for (size_t j = 0; j < i; j++) {
      const char* other = j < nok ? out->ok[j].id : out->failed[j - nok].id;
      if (strcmp(id, other) == 0) {
        rc = ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_DUPLICATE, "%s[%zu].Id",
                          where, k);
        goto fail;
      }
    }
    if (know_ids) {
      long at = find_id(ids, sent, n_ids, id);
      if (at < 0) {
        rc = ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_BAD_VALUE, "%s[%zu].Id",
                          where, k);
        goto fail;
      }
      answered[at] = 1;
      if (sent && i < nok) {
        char prefix[48];
        snprintf(prefix, sizeof prefix, "Successful[%zu].", k);
        rc = check_send_md5(&sent[at], out->ok[k].md5_of_body,
                            out->ok[k].md5_of_message_attributes, prefix, d);
        if (rc != 0) goto fail;
      }
    }
  }
  if (know_ids) {
    for (i = 0; i < n_ids; i++) {
      if (!answered[i]) {
        const char* id = requested_id(ids, sent, i);
        rc = ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_MISSING, "Id %.40s",
                          id ? id : "");
        goto fail;
      }
    }
  }
  out->nok = nok;
  out->nfailed = nfail;
  out->priv_ = pool;
  return 0;
fail:
  ob__sqs_pool_free(pool);
  memset(out, 0, sizeof *out);
  return rc;
}

void ob__sqs_batch_result_free(ob__sqs_batch_result_t* r) {
  if (r == NULL) return;
  ob__sqs_pool_free(r->priv_);
  memset(r, 0, sizeof *r);
}

/* ---------------------------------------------------------------------------
** Small responses.
*/
int ob__sqs_parse_empty(const char* body, size_t len, ob__sqs_diag_t* d) {
  cJSON* root = NULL;
  int rc;
  size_t i = 0;
  diag_reset(d);
  while (i < len && (body[i] == ' ' || body[i] == '\t' || body[i] == '\r' ||
                     body[i] == '\n'))
    i++;
  if (i == len) return 0;
  rc = ob__sqs_json_object(body, len, &root, d);
  cJSON_Delete(root);
  return rc;
}

int ob__sqs_parse_get_queue_url(const char* body, size_t len, char** url_out,
                                ob__sqs_diag_t* d) {
  cJSON* root = NULL;
  const char* url;
  int rc;
  diag_reset(d);
  if (url_out == NULL)
    return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_ARG, "out");
  *url_out = NULL;
  if ((rc = ob__sqs_json_object(body, len, &root, d)) != 0) return rc;
  rc = member_str(root, "QueueUrl", 1, OB__SQS_MAX_FIELD_BYTES, "", &url, d);
  if (rc == 0 && *url == '\0')
    rc = ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_BAD_VALUE, "QueueUrl");
  if (rc == 0 && (*url_out = strdup(url)) == NULL) rc = OB_ENOMEM;
  cJSON_Delete(root);
  return rc;
}

int ob__sqs_parse_get_queue_attributes(const char* body, size_t len,
                                       ob__sqs_attrs_result_t* out,
                                       ob__sqs_diag_t* d) {
  ob__sqs_pool_t* pool = NULL;
  const cJSON *attrs, *it;
  size_t n, i = 0;
  int rc;
  diag_reset(d);
  if (out == NULL) return ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_ARG, "out");
  memset(out, 0, sizeof *out);
  if ((pool = ob__sqs_pool_new()) == NULL) return OB_ENOMEM;
  if ((rc = ob__sqs_json_object(body, len, &pool->root, d)) != 0) goto fail;
  if ((rc = member_container(pool->root, "Attributes", 0, "", &attrs, d)) != 0)
    goto fail;
  n = attrs ? count_children(attrs) : 0;
  if (n > MAX_QUEUE_ATTRIBUTES) {
    rc = ob__sqs_fail(d, OB_ETOOBIG, OB__SQS_FAULT_TOO_MANY, "Attributes");
    goto fail;
  }
  out->attrs = ob__sqs_pool_alloc(pool, n, sizeof *out->attrs);
  if (out->attrs == NULL) {
    rc = OB_ENOMEM;
    goto fail;
  }
  if (attrs) cJSON_ArrayForEach(it, attrs) {
    if (!cJSON_IsString(it) || it->valuestring == NULL || it->string == NULL) {
      rc = ob__sqs_fail(d, OB_EINVAL, OB__SQS_FAULT_WRONG_TYPE,
                        "Attributes.%.40s", it->string ? it->string : "");
      goto fail;
    }
    if (strlen(it->valuestring) > MAX_QUEUE_ATTRIBUTE_VALUE) {
      rc = ob__sqs_fail(d, OB_ETOOBIG, OB__SQS_FAULT_TOO_BIG,
                        "Attributes.%.40s", it->string);
      goto fail;
    }
    out->attrs[i].name = it->string;
    out->attrs[i].value = it->valuestring;
    i++;
  }
  out->n = n;
  out->priv_ = pool;
  return 0;
fail:
  ob__sqs_pool_free(pool);
  memset(out, 0, sizeof *out);
  return rc;
}

void ob__sqs_attrs_result_free(ob__sqs_attrs_result_t* r) {
  if (r == NULL) return;
  ob__sqs_pool_free(r->priv_);
  memset(r, 0, sizeof *r);
}

const char* ob__sqs_attr_get(const ob__sqs_attrs_result_t* r,
                             const char* name) {
  for (size_t i = 0; r && i < r->n; i++)
    if (strcmp(r->attrs[i].name, name) == 0) return r->attrs[i].value;
  return NULL;
}

/* ---------------------------------------------------------------------------
** Errors (docs/sqs-protocol.md, "Errors"; @smithy/core loadJsonRpcErrorCode and
** sanitizeErrorCode, @aws-sdk/core setQueryCompatError).
*/
static void copy_trunc(char* dst, size_t cap, const char* s, size_t n) {
  if (n >= cap) n = cap - 1;
  memcpy(dst, s, n);
  dst[n] = '\0';
}

static int is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* "com.amazonaws.sqs#QueueDoesNotExist:http://...,x" -> "QueueDoesNotExist":
** cut at the first ',' and the first ':', keep what follows the last '#'. */
static void sanitize_code(char* dst, size_t cap, const char* s) {
  size_t n = strcspn(s, ",");
  const char* start = s;
  size_t colon = strcspn(s, ":");
  if (colon < n) n = colon;
  for (size_t i = 0; i < n; i++)
    if (s[i] == '#') start = s + i + 1;
  n -= (size_t)(start - s);
  while (n && is_space(*start)) start++, n--;
  while (n && is_space(start[n - 1])) n--;
  copy_trunc(dst, cap, start, n);
  /* An error code is an identifier; it reaches logs and stats, so a peer's
  ** control bytes (or anything else) never pass through it. */
  for (char* p = dst; *p; p++)
    if ((unsigned char)*p < 0x21 || (unsigned char)*p > 0x7e) *p = '?';
}

/* Where s[0..n) holds needle (a NUL-terminated string), or NULL; with ci,
** ASCII case-insensitively. Bounded: bodies are not NUL-terminated. */
static const char* find_in(const char* s, size_t n, const char* needle,
                           int ci) {
  size_t k = strlen(needle);
  for (size_t i = 0; k <= n && i <= n - k; i++) {
    size_t j = 0;
    for (; j < k; j++) {
      char a = s[i + j], b = needle[j];
      if (ci) {
        if (a >= 'A' && a <= 'Z') a = (char)(a - 'A' + 'a');
        if (b >= 'A' && b <= 'Z') b = (char)(b - 'A' + 'a');
      }
      if (a != b) break;
    }
    if (j == k) return s + i;
  }
  return NULL;
}

/* The text of the first <name>..</name> in an XML body, cleaned for a log
** (ob__peer_text) into out; "" when there is none. */
static void xml_element(const char* b, size_t len, const char* name,
                        char* out, size_t cap) {
  char open[24], close[24];
  const char *start, *end;
  snprintf(open, sizeof open, "<%s>", name);
  snprintf(close, sizeof close, "</%s>", name);
  out[0] = '\0';
  start = find_in(b, len, open, 0);
  if (start == NULL) return;
  start += strlen(open);
  end = find_in(start, len - (size_t)(start - b), close, 0);
  if (end == NULL) return;
  ob__peer_text(start, (size_t)(end - start), out, cap);
}

/* What body[0..len) is, when it is not a JSON object. */
static ob__sqs_body_t body_kind(const char* b, size_t len) {
  size_t i = 0, head;
  if (len >= 3 && (unsigned char)b[0] == 0xEF && (unsigned char)b[1] == 0xBB &&
      (unsigned char)b[2] == 0xBF)
    i = 3;  /* a UTF-8 byte order mark */
  while (i < len && is_space(b[i])) i++;
  if (i == len) return OB__SQS_BODY_EMPTY;
  if (b[i] != '<') return OB__SQS_BODY_OTHER;
  head = len - i < 1024 ? len - i : 1024;
  if (find_in(b + i, head, "<!doctype html", 1) == b + i ||
      find_in(b + i, head, "<html", 1) != NULL)
    return OB__SQS_BODY_HTML;
  return OB__SQS_BODY_XML;
}

int ob__sqs_parse_error(int http_status, const char* body, size_t len,
                        const char* query_error, const char* errortype,
                        ob__sqs_error_t* out) {
  if (out == NULL) return OB_EINVAL;
  memset(out, 0, sizeof *out);
  out->http_status = http_status;
  out->sender_fault = -1;

  if (query_error != NULL) {
    size_t n = strcspn(query_error, ";");
    const char* s = query_error;
    while (n && is_space(*s)) s++, n--;
    copy_trunc(out->query_code, sizeof out->query_code, s, n);
    n = strlen(out->query_code);  /* may have been truncated */
    while (n && is_space(out->query_code[n - 1])) out->query_code[--n] = '\0';
    for (char* p = out->query_code; *p; p++)  /* as sanitize_code */
      if ((unsigned char)*p < 0x21 || (unsigned char)*p > 0x7e) *p = '?';
    if (query_error[strcspn(query_error, ";")] == ';') {
      const char* f = query_error + strcspn(query_error, ";") + 1;
      while (is_space(*f)) f++;
      if (strncmp(f, "Sender", 6) == 0) out->sender_fault = 1;
      else if (strncmp(f, "Receiver", 8) == 0) out->sender_fault = 0;
    }
  }

  /* The body is best effort: anything unreadable is simply ignored. */
  out->body = body != NULL ? body_kind(body, len) : OB__SQS_BODY_EMPTY;
  if (body != NULL && len > 0 && out->body == OB__SQS_BODY_XML) {
    /* SQS's query protocol (and ElasticMQ, sqslite): <ErrorResponse>
    ** <Error><Type>Sender</Type><Code>..</Code><Message>..</Message>. */
    char code[sizeof out->type], fault[16];
    xml_element(body, len, "Code", code, sizeof code);
    sanitize_code(out->type, sizeof out->type, code);
    xml_element(body, len, "Message", out->message, sizeof out->message);
    xml_element(body, len, "Type", fault, sizeof fault);
    if (out->sender_fault < 0 && strcmp(fault, "Sender") == 0)
      out->sender_fault = 1;
    else if (out->sender_fault < 0 && strcmp(fault, "Receiver") == 0)
      out->sender_fault = 0;
  } else if (body != NULL && len > 0 && out->body == OB__SQS_BODY_OTHER) {
    cJSON* root = NULL;
    if (ob__sqs_json_object(body, len, &root, NULL) == 0) {
      static const char* const type_keys[] = {"__type", "code", "Code"};
      static const char* const msg_keys[] = {"message", "Message"};
      out->body = OB__SQS_BODY_JSON;
      for (size_t i = 0; i < 3 && out->type[0] == '\0'; i++) {
        const cJSON* v = cJSON_GetObjectItemCaseSensitive(root, type_keys[i]);
        if (cJSON_IsString(v) && v->valuestring)
          sanitize_code(out->type, sizeof out->type, v->valuestring);
      }
      for (size_t i = 0; i < 2 && out->message[0] == '\0'; i++) {
        const cJSON* v = cJSON_GetObjectItemCaseSensitive(root, msg_keys[i]);
        if (cJSON_IsString(v) && v->valuestring)
          ob__peer_text(v->valuestring, strlen(v->valuestring), out->message,
                        sizeof out->message);
      }
    }
    cJSON_Delete(root);
  }

  if (out->query_code[0])
    memcpy(out->code, out->query_code, sizeof out->code);
  else if (out->type[0])
    memcpy(out->code, out->type, sizeof out->code);
  else if (errortype != NULL)
    sanitize_code(out->code, sizeof out->code, errortype);
  return 0;
}

static int code_is(const char* code, const char* name) {
  static const char prefix[] = "AWS.SimpleQueueService.";
  if (strncmp(code, prefix, sizeof prefix - 1) == 0)
    code += sizeof prefix - 1;
  return code[0] != '\0' && strcmp(code, name) == 0;
}

int ob__sqs_error_is(const ob__sqs_error_t* e, const char* name) {
  if (e == NULL || name == NULL) return 0;
  return code_is(e->code, name) || code_is(e->type, name) ||
         code_is(e->query_code, name);
}
