/* SPDX-License-Identifier: Apache-2.0 */
/* The engine's logs (engine_host.h, "logs"): records through the repeat
** limiter to opts.log_record and opts.log. A leaf of the engine: every part
** logs, so this file calls none of them back (it reads the steady clock of
** engine_clock.c only). */
#include <stdarg.h>
#include <stdio.h>

#include "core/engine/engine_int.h"
#include "core/util/errbuf.h"

int ob__log_on(const ob_engine_t* e, ob_log_level_t level) {
  return (e->opts.log != NULL || e->opts.log_record != NULL) &&
         level <= e->opts.log_level;
}

static void log_deliver(ob_engine_t* e, const ob_log_record_t* r) {
  if (e->opts.log_record != NULL) e->opts.log_record(e->opts.log_record_ctx, r);
  if (e->opts.log != NULL) e->opts.log(e->opts.log_ctx, r->level, r->msg);
}

/* A window of the limiter closed with records dropped: say how many. */
static void log_summary(void* arg, const ob__log_limit_slot_t* s) {
  ob_engine_t* e = arg;
  ob_log_record_t r = OB__LOG_RECORD(s->level, s->component, s->event);
  char buf[256];
  r.error = s->error;
  r.repeated = s->suppressed;
  ob__fmt(buf, sizeof buf, "%s: %s (%s) repeated %u more times", s->component,
          s->event, ob_err_name(s->error), s->suppressed);
  r.msg = buf;
  log_deliver(e, &r);
}

static void log_v(ob_engine_t* e, ob_log_record_t* r, const char* fmt,
                  va_list ap) __attribute__((format(printf, 3, 0)));

static void log_v(ob_engine_t* e, ob_log_record_t* r, const char* fmt,
                  va_list ap) {
  char buf[1024];
  if (!ob__log_on(e, r->level)) return;
  if (r->event == NULL) r->event = "log";
  if (!ob__log_limit_pass(&e->log_limit, r, ob__engine_steady_ms(e),
                          log_summary, e))
    return;
  vsnprintf(buf, sizeof buf, fmt, ap);
  r->msg = buf;
  log_deliver(e, r);
  r->msg = NULL;
}

void ob__logr(ob_engine_t* e, ob_log_record_t* r, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  log_v(e, r, fmt, ap);
  va_end(ap);
}

void ob__log_text(ob_engine_t* e, ob_log_level_t level, const char* component,
                  const char* fmt, ...) {
  ob_log_record_t r = OB__LOG_RECORD(level, component, "log");
  va_list ap;
  va_start(ap, fmt);
  log_v(e, &r, fmt, ap);
  va_end(ap);
}

void ob__log_flush(ob_engine_t* e) {
  ob__log_limit_flush(&e->log_limit, log_summary, e);
}

/* Kept for the callers outside core/ until they use ob__errbuf_set. */
void ob__fmt(char* buf, size_t n, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ob__errbuf_vset(buf, n, 0, fmt, ap);
  va_end(ap);
}
