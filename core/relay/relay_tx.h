/* SPDX-License-Identifier: Apache-2.0 */
/*
** oncebox internal: the outbox relay's database verbs, for the relay worker
** (platform/relay). Each runs its own short transaction through storage/
** and never inside a handler's (OB_ESTATE then). The claim token names one
** relay's lease: a relay whose lease was taken over changes nothing.
*/
#ifndef OB_CORE_RELAY_TX_H
#define OB_CORE_RELAY_TX_H

#include <stddef.h>
#include <stdint.h>

#include "oncebox.h"
#include "storage/store.h" /* ob__relay_row_t, ob__relay_row_free */

/* Claim up to max publishable rows until now + lease_ms (oldest first;
** ordered: per aggregate), the rows of priority[0..npriority) types before
** any other (npriority <= OB__RELAY_MAX_PRIORITY). Returns how many, 0 when
** none, < 0 on error (ob_errmsg says why). */
int ob__relay_take(ob_engine_t* e, const char* token, int64_t lease_ms,
                   size_t max, int ordered, const char* const* priority,
                   int npriority, ob__relay_row_t* rows);
/* When the next row becomes publishable: 0 and *at, OB_ENOTFOUND when the
** outbox holds nothing to publish. */
int ob__relay_due_at(ob_engine_t* e, int ordered, int64_t* at);
/* The backlog for `oncebox outbox drain`, read over the unpublished rows
** only (never the history): how many are unpublished and how many of those
** are parked. Returns 0 or < 0. */
int ob__relay_backlog_count(ob_engine_t* e, int64_t* unpublished,
                            int64_t* parked);
/* 1 while an unpublished row that is not parked exists (due_only: one that
** is due now, a batch in flight included), 0 when none, < 0 on error. */
int ob__relay_has_pending(ob_engine_t* e, int due_only);
/* Give back every row token holds (they are published later, with the same
** ids). Returns 0 or < 0. */
int ob__relay_give_back(ob_engine_t* e, const char* token);
/* Connectivity for `oncebox stats` (skipped inside a handler). */
int ob__relay_record_status(ob_engine_t* e, int online, int64_t published_at,
                            const char* error);

/* The outcome of one row of a batch. */
typedef struct ob__relay_result_s {
  int ok;              /* 1: SQS accepted it */
  int park;            /* failed through the sender's fault: counts toward
                       ** parking */
  const char* error;   /* why it failed (ok == 0) */
} ob__relay_result_t;

/* What a settle did. */
typedef struct ob__relay_settled_s {
  int published;       /* rows marked published */
  int parked;          /* rows parked by this settle */
  int lost_leases;     /* rows whose lease another relay holds now */
} ob__relay_settled_t;

/*
** Record the outcomes of rows[0..n) in one transaction: published rows are
** marked; failed ones are backed off (base doubling to cap, jitter) and,
** when park != 0, parked after park_after attempts (0: never). The marks
** are written with synchronous=NORMAL (docs/decisions/0008): a mark lost to
** a power cut only publishes the row again with the same id. Returns 0, or
** < 0 when nothing was recorded (the rows stay claimed until their lease
** expires).
*/
int ob__relay_settle(ob_engine_t* e, const char* token,
                     const ob__relay_row_t* rows,
                     const ob__relay_result_t* results, size_t n,
                     int park_after, int64_t backoff_base_ms,
                     int64_t backoff_cap_ms, ob__relay_settled_t* out);

#endif
