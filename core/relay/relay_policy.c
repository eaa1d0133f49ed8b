#include "core/relay/relay_policy.h"

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

void ob__relay_link_init(ob__relay_link_t* l, int64_t base_ms, int64_t cap_ms) {
  memset(l, 0, sizeof *l);
  l->online = 1;
  l->base_ms = base_ms;
  l->cap_ms = cap_ms;
}

int ob__relay_link_ok(ob__relay_link_t* l) {
  int back = !l->online;
  l->online = 1;
  l->failures = 0;
  l->next_probe_at = 0;
  return back;
}

int64_t ob__relay_link_failed(ob__relay_link_t* l, int64_t now,
                              const ob_clock_t* c) {
  int64_t d;
  OB__ASSERT(!l->online || l->failures == 0);  /* failures count offline */
  l->online = 0;
  if (l->failures < 64) l->failures++;
  d = ob__relay_row_backoff(l->base_ms, l->cap_ms, l->failures, c);
  l->next_probe_at = now + d;
  return d;
}

void ob__relay_link_nudge(ob__relay_link_t* l, int64_t now) {
  OB__ASSERT(!l->online || l->failures == 0);
  if (!l->online) {
    l->next_probe_at = now;
    /* Start the backoff over: the host has reason to think it works. */
    l->failures = 0;
  }
}
