/* SPDX-License-Identifier: Apache-2.0 */
/* When an until-idle run may call the SQS consumer done (consumer_idle.h).
** Pure: the caller passes every time in. */
#include <stddef.h>

#include "core/consumer/consumer_idle.h"

void ob__consumer_idle_init(ob__consumer_idle_t* w) {
  w->since_ms = -1;
  w->own_until_ms = -1;
}

void ob__consumer_idle_progress(ob__consumer_idle_t* w) {
  w->since_ms = -1;
}

void ob__consumer_idle_own_hidden(ob__consumer_idle_t* w, int64_t until_ms) {
  if (until_ms > w->own_until_ms) w->own_until_ms = until_ms;
}

int64_t ob__consumer_counts_left(const ob__consumer_counts_t* c) {
  if (c == NULL || !c->known) return 0;
  return (c->visible > 0 ? c->visible : 0) +
         (c->not_visible > 0 ? c->not_visible : 0) +
         (c->delayed > 0 ? c->delayed : 0);
}

int64_t ob__consumer_idle_deadline_ms(const ob__consumer_idle_t* w, int vt_s) {
  int64_t end;
  if (w->since_ms < 0) return -1;
  end = w->since_ms + (int64_t)(vt_s > 0 ? vt_s : 0) * 1000;
  if (w->own_until_ms > end) end = w->own_until_ms;
  return end + OB__CONSUMER_IDLE_MARGIN_MS;
}

ob__consumer_idle_verdict_t ob__consumer_idle_decide(
    ob__consumer_idle_t* w, const ob__consumer_counts_t* c,
    int64_t receive_started_ms, int vt_s) {
  /* Our own retry is still hidden when this receive began: it comes back
  ** later, whatever the (approximate) counts say. */
  int own_hidden = w->own_until_ms >= 0 &&
                   receive_started_ms <
                       w->own_until_ms + OB__CONSUMER_IDLE_MARGIN_MS;
  int left = c == NULL || !c->known || ob__consumer_counts_left(c) > 0;

  if (!left) {
    w->since_ms = -1;
    return own_hidden ? OB__CONSUMER_IDLE_WAIT : OB__CONSUMER_IDLE_DONE;
  }
  if (w->since_ms < 0) w->since_ms = receive_started_ms;
  return receive_started_ms >= ob__consumer_idle_deadline_ms(w, vt_s)
             ? OB__CONSUMER_IDLE_STALLED
             : OB__CONSUMER_IDLE_WAIT;
}
