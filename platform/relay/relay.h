/* SPDX-License-Identifier: Apache-2.0 */
/*
** oncebox internal: what the outbox relay (platform/relay/relay.c, a
** platform/loop/worker.h worker) tells the code that drives it, from
** memory. The public entry points are ob_relay_options_init and
** ob_relay_enable in oncebox.h; the relay's database verbs are
** core/relay/relay_tx.h.
*/
#ifndef OB_PLATFORM_RELAY_H
#define OB_PLATFORM_RELAY_H

#include <stdint.h>

#include "oncebox.h"

typedef struct ob__relay_progress_s {
  int64_t published;  /* rows this relay marked published since enabled */
  int64_t parked;     /* rows this relay parked since enabled */
  int busy;           /* 1: rows claimed or a batch in flight */
  int online;         /* 1 until a request could not reach SQS; 0 while
                      ** offline and probing */
  char tls_version[16]; /* of the last TLS connection to SQS: "TLSv1.3" */
  char tls_suite[64];   /* and its suite; "" before the first or over http */
} ob__relay_progress_t;

/*
** The counters of e's relay, kept in memory as it settles each batch (no
** query): for a progress report that must not slow the relay down
** (`oncebox outbox drain`). Call from the loop thread. Returns 0, or
** OB_ENOTFOUND (*out zeroed) when no relay is enabled.
*/
int ob__relay_progress(ob_engine_t* e, ob__relay_progress_t* out);

#endif
