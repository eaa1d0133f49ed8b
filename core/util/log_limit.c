/* SPDX-License-Identifier: Apache-2.0 */
/* The repeat limiter of log records: the rules are in log_limit.h. */
#include "core/util/log_limit.h"

#include <limits.h>
#include <string.h>

void ob__log_limit_init(ob__log_limit_t* l, int64_t window_ms) {
  memset(l, 0, sizeof *l);
  l->window_ms = window_ms > 0 ? window_ms : OB_LOG_REPEAT_WINDOW_MS;
}

int ob__log_limit_applies(const ob_log_record_t* r) {
  return r->error != 0 && r->level <= OB_LOG_INFO && r->message_id == NULL;
}

static void close_slot(ob__log_limit_slot_t* s, ob__log_limit_summary_fn fn,
                       void* arg) {
  /* Copy first: the summary may log, and so re-enter the limiter. */
  ob__log_limit_slot_t was = *s;
  memset(s, 0, sizeof *s);
  if (was.suppressed > 0 && fn != NULL) fn(arg, &was);
}

static int same_name(const char* a, const char* b) {
  return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

int ob__log_limit_pass(ob__log_limit_t* l, const ob_log_record_t* r,
                       int64_t now, ob__log_limit_summary_fn summary,
                       void* arg) {
  const char* component = r->component;
  const char* event = r->event;
  int error = r->error;
  ob_log_level_t level = r->level;
  int limited = ob__log_limit_applies(r);
  ob__log_limit_slot_t* hit = NULL;
  ob__log_limit_slot_t* free_slot = NULL;
  ob__log_limit_slot_t* oldest = NULL;

  for (int i = 0; i < OB__LOG_LIMIT_SLOTS; i++) {
    ob__log_limit_slot_t* s = &l->slot[i];
    if (!s->used) continue;
    /* A clock that went back (a fake one in a test) ends the window too:
    ** a window never lasts longer than window_ms of seen time. */
    if (now - s->start >= l->window_ms || now < s->start ||
        (!limited && error == 0 && level <= OB_LOG_INFO &&
         same_name(s->component, component)))
      close_slot(s, summary, arg);
  }
  if (!limited) return 1;
  for (int i = 0; i < OB__LOG_LIMIT_SLOTS; i++) {
    ob__log_limit_slot_t* s = &l->slot[i];
    if (!s->used) {
      if (free_slot == NULL) free_slot = s;
      continue;
    }
    if (s->error == error && same_name(s->component, component) &&
        same_name(s->event, event)) {
      hit = s;
      break;
    }
    if (oldest == NULL || s->start < oldest->start) oldest = s;
  }
  if (hit != NULL) {
    if (hit->suppressed < UINT_MAX) hit->suppressed++;
    return 0;
  }
  if (free_slot == NULL) {
    close_slot(oldest, summary, arg);
    free_slot = oldest;
  }
  free_slot->used = 1;
  free_slot->component = component;
  free_slot->event = event;
  free_slot->error = error;
  free_slot->level = level;
  free_slot->start = now;
  free_slot->suppressed = 0;
  return 1;
}

void ob__log_limit_flush(ob__log_limit_t* l, ob__log_limit_summary_fn summary,
                         void* arg) {
  for (int i = 0; i < OB__LOG_LIMIT_SLOTS; i++)
    if (l->slot[i].used) close_slot(&l->slot[i], summary, arg);
}
