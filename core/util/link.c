/* SPDX-License-Identifier: Apache-2.0 */
/* Connectivity and probing (link.h). */
#include <stdio.h>
#include <string.h>

#include "core/util/assert.h"
#include "core/util/errbuf.h"
#include "core/util/link.h"
#include "core/util/retry.h"

void ob__link_init(ob__link_t* l, int64_t base_ms, int64_t cap_ms) {
  memset(l, 0, sizeof *l);
  l->online = 1;
  l->base_ms = base_ms;
  l->cap_ms = cap_ms;
}

int ob__link_ok(ob__link_t* l) {
  int back = !l->online;
  l->online = 1;
  l->failures = 0;
  l->next_probe_at = 0;
  return back;
}

int64_t ob__link_failed(ob__link_t* l, int64_t now, const ob_clock_t* c) {
  int64_t d;
  OB__ASSERT(!l->online || l->failures == 0);  /* failures count offline */
  l->online = 0;
  if (l->failures < 64) l->failures++;
  {
    /* base doubling to cap, +-10% jitter: the relay's row backoff rule */
    ob_retry_policy_t p = {0, l->base_ms, 2.0, l->cap_ms, 0.1};
    d = ob__retry_jitter(&p, ob__retry_base_delay(&p, l->failures), c);
  }
  l->next_probe_at = now + d;
  return d;
}

void ob__link_nudge(ob__link_t* l, int64_t now) {
  OB__ASSERT(!l->online || l->failures == 0);
  if (!l->online) {
    l->next_probe_at = now;
    /* Start the backoff over: the host has reason to think it works. */
    l->failures = 0;
  }
}

int ob__probe_options_check(const char* part, const ob_probe_options_t* p,
                            char* errbuf, size_t errlen) {
  if (p->base_ms >= 1 && p->cap_ms >= p->base_ms) return 0;
  return ob__errbuf_set(errbuf, errlen, OB_EINVAL, "%s: probe.base_ms must "
                        "be >= 1 and probe.cap_ms >= probe.base_ms", part);
}

void ob__probe_options_init(ob_probe_options_t* p, int64_t cap_ms) {
  p->base_ms = 1000;
  p->cap_ms = cap_ms;
}
