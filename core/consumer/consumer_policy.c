/* SPDX-License-Identifier: Apache-2.0 */
/* The SQS consumer's pure decisions: option checks, visibility arithmetic,
** the failure-store id of an invalid message. No I/O, no clock reads. */
#include <stdio.h>
#include <string.h>

#include <mbedtls/md.h>

#include "core/sqs/sqs.h"
#include "core/util/errbuf.h"
#include "core/util/link.h"
#include "core/util/uuid.h"
#include "core/consumer/consumer_policy.h"

int ob__consumer_options_check(const ob_consumer_options_t* o, char* errbuf,
                               size_t errlen) {
  const char *u, *why;
  if (o == NULL) return ob__errbuf_set(errbuf, errlen, OB_EINVAL,
                                       "consumer: options are required");
  u = o->queue_url;
  if (u == NULL || u[0] == '\0')
    return ob__errbuf_set(errbuf, errlen, OB_EINVAL,
                          "consumer: queue_url is required");
  if ((why = ob__sqs_queue_url_problem(u)) != NULL) {
    return ob__errbuf_set(errbuf, errlen, OB_EINVAL,
                          "consumer: queue URL %s", why);
  }
  if (o->wait_seconds < 0 || o->wait_seconds > 20)
    return ob__errbuf_set(errbuf, errlen, OB_EINVAL,
                          "consumer: wait_seconds must be 0..20");
  if (o->prefetch < 1 || o->prefetch > 10)
    return ob__errbuf_set(errbuf, errlen, OB_EINVAL,
                          "consumer: prefetch must be 1..10");
  if (o->visibility_timeout_s < 0 ||
      o->visibility_timeout_s > OB__CONSUMER_MAX_VISIBILITY_S)
    return ob__errbuf_set(errbuf, errlen, OB_EINVAL,
                          "consumer: visibility_timeout_s must be 0 (the "
                          "queue's) or 1..43200");
  return ob__probe_options_check("consumer", &o->probe, errbuf, errlen);
}

int ob__consumer_queue_visibility_s(const char* value) {
  long v = 0;
  if (value == NULL || *value == '\0') return -1;
  /* Digits only, no sign or space: SQS writes a plain number. */
  for (const char* p = value; *p != '\0'; p++) {
    if (*p < '0' || *p > '9') return -1;
    v = v * 10 + (*p - '0');
    if (v > OB__CONSUMER_MAX_VISIBILITY_S) return -1;
  }
  return v < 1 ? 1 : (int)v;
}

int ob__consumer_visibility_budget_s(int64_t first_receive_ms,
                                     int64_t server_now_ms) {
  int64_t left_ms = first_receive_ms +
                    (int64_t)OB__CONSUMER_MAX_VISIBILITY_S * 1000 -
                    server_now_ms;
  /* Floor, so the budget never rounds past the limit. */
  int64_t left_s = left_ms >= 0 ? left_ms / 1000 : -((999 - left_ms) / 1000);
  left_s -= OB__CONSUMER_VISIBILITY_MARGIN_S;
  if (left_s > OB__CONSUMER_MAX_VISIBILITY_S)
    left_s = OB__CONSUMER_MAX_VISIBILITY_S;
  if (left_s < -1) left_s = -1;
  return (int)left_s;
}

int ob__consumer_retry_visibility_s(int64_t delay_ms, int budget_s) {
  int64_t s;
  if (budget_s < 0) return -1;
  if (delay_ms < 0) delay_ms = 0;
  /* Rounded up: the message must not come back before its delay. */
  s = delay_ms / 1000 + (delay_ms % 1000 != 0);
  if (s > budget_s) s = budget_s;
  return (int)s;
}

int ob__consumer_failure_id(const char* id, char out[OB_UUID_BUFLEN]) {
  static const char ns_text[] = OB__CONSUMER_ID_NAMESPACE;
  const mbedtls_md_info_t* md = mbedtls_md_info_from_type(MBEDTLS_MD_SHA1);
  mbedtls_md_context_t ctx;
  uint8_t ns[16], digest[20];
  int rc;

  if (id == NULL) return OB_EINVAL;
  if (ob__uuid_normalize(id, out) == 0) return 0;
  if (md == NULL || ob__uuid_parse(ns_text, ns) != 0) return OB_EIO;
  /* UUIDv5: SHA-1(namespace bytes || name), version 5, variant 10. */
  mbedtls_md_init(&ctx);
  rc = mbedtls_md_setup(&ctx, md, 0);
  if (rc == 0) rc = mbedtls_md_starts(&ctx);
  if (rc == 0) rc = mbedtls_md_update(&ctx, ns, sizeof ns);
  if (rc == 0) rc = mbedtls_md_update(&ctx, (const uint8_t*)id, strlen(id));
  if (rc == 0) rc = mbedtls_md_finish(&ctx, digest);
  mbedtls_md_free(&ctx);
  if (rc != 0) return OB_EIO;
  digest[6] = (uint8_t)((digest[6] & 0x0f) | 0x50);
  digest[8] = (uint8_t)((digest[8] & 0x3f) | 0x80);
  ob__uuid_format(digest, out);
  return 0;
}
