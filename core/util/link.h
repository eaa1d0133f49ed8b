/* SPDX-License-Identifier: Apache-2.0 */
/* oncebox internal: the connectivity of a part that talks to a peer (the
** relay, the SQS consumer, an effects executor), free of I/O so it is
** tested with a fake clock. platform/loop/worker.c holds one per worker. */
#ifndef OB_CORE_UTIL_LINK_H
#define OB_CORE_UTIL_LINK_H

#include <stddef.h>
#include <stdint.h>

#include "oncebox.h"

/* Connectivity: online until a transport failure; then offline, probing
** with backoff (base doubling to cap, jitter) until a request succeeds. */
typedef struct ob__link_s {
  int online;            /* 1 until proven otherwise */
  int failures;          /* consecutive transport failures */
  int64_t next_probe_at; /* when offline: earliest next attempt */
  int64_t base_ms;
  int64_t cap_ms;
} ob__link_t;

void ob__link_init(ob__link_t* l, int64_t base_ms, int64_t cap_ms);
/* A request reached its peer and got an answer (any HTTP status). Returns 1 if
** this brought the link back online. */
int ob__link_ok(ob__link_t* l);
/* A request could not reach its peer. Returns the delay until the next probe;
** the link is offline. */
int64_t ob__link_failed(ob__link_t* l, int64_t now,
                              const ob_clock_t* c);
/* The host said the network is back: probe now. */
void ob__link_nudge(ob__link_t* l, int64_t now);

/* Validate probe options for part ("relay", "consumer", "provider x"):
** base_ms >= 1 and cap_ms >= base_ms. Returns 0, or OB_EINVAL with the
** reason in errbuf. */
int ob__probe_options_check(const char* part, const ob_probe_options_t* p,
                            char* errbuf, size_t errlen);
/* The defaults: 1000 .. cap_ms. This function can't fail. */
void ob__probe_options_init(ob_probe_options_t* p, int64_t cap_ms);

#endif
