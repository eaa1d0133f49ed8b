/* SPDX-License-Identifier: Apache-2.0 */
#include "core/relay/relay_policy.h"

#include "core/util/errbuf.h"
#include "core/util/uri_ref.h"

#include <stdio.h>
#include <string.h>

#include "core/util/assert.h"
#include "core/util/retry.h"

int ob__relay_queue_is_fifo(const char* url) {
  size_t n;
  if (url == NULL) return 0;
  n = strlen(url);
  while (n > 0 && url[n - 1] == '/') n--;
  return n >= 5 && memcmp(url + n - 5, ".fifo", 5) == 0;
}

size_t ob__relay_batch_fit(const size_t* sizes, size_t n, size_t max_bytes) {
  size_t k = 0, total = 0;
  while (k < n && k < OB__SQS_MAX_BATCH_ENTRIES) {
    if (sizes[k] > max_bytes - total) break;
    total += sizes[k];
    k++;
  }
  OB__ASSERT(k <= OB__SQS_MAX_BATCH_ENTRIES && total <= max_bytes);
  return k;
}

int64_t ob__relay_row_backoff(int64_t base_ms, int64_t cap_ms, int attempt,
                              const ob_clock_t* c) {
  ob_retry_policy_t p = {0, base_ms, 2.0, cap_ms, 0.1};
  if (attempt < 1) attempt = 1;
  if (attempt > 64) attempt = 64;  /* the cap is reached long before */
  return ob__retry_jitter(&p, ob__retry_base_delay(&p, attempt), c);
}


int ob__relay_source_check(const char* source, char* err, size_t errlen) {
  char why[160];
  if (source == NULL || source[0] == '\0')
    return ob__errbuf_set(err, errlen, OB_EINVAL,
                          "the CloudEvents source is empty");
  if (ob__uri_reference_check(source, strlen(source), why, sizeof why) != 0)
    return ob__errbuf_set(err, errlen, OB_EINVAL,
                          "the CloudEvents source must be a URI-reference "
                          "(RFC 3986): %s",
                          why);
  return 0;
}

void ob__relay_default_source(const char* host, char* out, size_t cap) {
  size_t n;
  snprintf(out, cap, "urn:oncebox:%s", host);
  /* A host name is letters, digits, '-' and '.'; anything else a
  ** misconfigured one holds becomes '-'. */
  for (n = 12; out[n] != '\0'; n++)
    if (!((out[n] >= 'a' && out[n] <= 'z') || (out[n] >= 'A' && out[n] <= 'Z') ||
          (out[n] >= '0' && out[n] <= '9') || out[n] == '-' || out[n] == '.'))
      out[n] = '-';
}
