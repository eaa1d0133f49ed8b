/* SPDX-License-Identifier: Apache-2.0 */
/*
** The repeat limiter of log records (ob_log_record_t in oncebox.h): a
** terminal whose uplink is down for a day must not write one warning per
** probe to its flash, yet the operator must see how often it failed.
**
** Deterministic: time is the `now` each call is given (the engine passes
** its monotonic clock), nothing is read here. Pure, no I/O, no allocation.
**
** A record is *limited* when it is at OB_LOG_INFO or above, has an error
** code and names no message (a failing message is news each time:
** its id is what the operator looks for; its retries are already spaced by
** its backoff). Its key is (component, event, error). The first record of
** a key opens a window of window_ms and is delivered; records of that key
** inside the window are counted and dropped. A window closes when
**   - a later record (of any key) arrives at or after its end, or
**   - a record of the same component at OB_LOG_INFO or above without an
**     error code arrives (the component says something else, typically
**     that it recovered: the summary must come before that), or
**   - ob__log_limit_flush is called (the engine closes);
** and if it counted any, the summary callback gets the slot (its count in
** suppressed) before the record that closed it is delivered. Up to
** OB__LOG_LIMIT_SLOTS keys are tracked at once; a new key past that closes
** the oldest window.
*/
#ifndef OB_CORE_UTIL_LOG_LIMIT_H
#define OB_CORE_UTIL_LOG_LIMIT_H

#include <stdint.h>

#include "oncebox.h"

#define OB__LOG_LIMIT_SLOTS 8

typedef struct ob__log_limit_slot_s {
  int used;
  /* component and event are the static strings of the first record. */
  const char* component;
  const char* event;
  int error;
  ob_log_level_t level;
  int64_t start;        /* when the window opened */
  unsigned suppressed;  /* records dropped since */
} ob__log_limit_slot_t;

typedef struct ob__log_limit_s {
  int64_t window_ms;
  ob__log_limit_slot_t slot[OB__LOG_LIMIT_SLOTS];
} ob__log_limit_t;

/* Called for each closed window that dropped records, with the slot as it
** was (it is reused after the call). */
typedef void (*ob__log_limit_summary_fn)(void* arg,
                                         const ob__log_limit_slot_t* s);

/* Empty limiter with that window (> 0). This function can't fail. */
void ob__log_limit_init(ob__log_limit_t* l, int64_t window_ms);

/* 1 if the record is subject to limiting (see above). */
int ob__log_limit_applies(const ob_log_record_t* r);

/* The record r arrives at now: close the windows the rules above close
** (summary for each that dropped records), then return 1 to deliver the
** record, 0 when it is dropped (counted). r's component and event must be
** static strings (kept in the slot). This function can't fail. */
int ob__log_limit_pass(ob__log_limit_t* l, const ob_log_record_t* r,
                       int64_t now, ob__log_limit_summary_fn summary,
                       void* arg);

/* Close every window (summary for each that dropped records). This
** function can't fail. */
void ob__log_limit_flush(ob__log_limit_t* l, ob__log_limit_summary_fn summary,
                         void* arg);

#endif
