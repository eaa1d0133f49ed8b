/* SPDX-License-Identifier: Apache-2.0 */
/* The health rules (core/util/health.h). */
#include "core/util/health.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/utc_time.h"

static int relay_failing(const ob__health_input_t* in, int64_t* for_ms) {
  const ob_stats_t* s = in->stats;
  const ob_counters_t* c = in->counters;
  int64_t t = in->relay_failing_ms;
  if (t <= 0) return 0;
  if (c != NULL && c->relay_enabled && c->relay_failing_since_ms > 0 &&
      in->now_ms - c->relay_failing_since_ms >= t) {
    *for_ms = in->now_ms - c->relay_failing_since_ms;
    return 1;
  }
  /* The recorded state: what a one-shot read sees of any process's relay.
  ** Nothing waiting means nothing at risk, however long it is offline. */
  if (s->relay_online >= 0 &&
      (s->relay_online == 0 || s->relay_error[0] != '\0') &&
      s->outbox_unpublished > s->outbox_parked &&
      s->outbox_oldest_unpublished_age_ms >= t) {
    *for_ms = s->outbox_oldest_unpublished_age_ms;
    return 1;
  }
  return 0;
}

void ob__health_eval(const ob__health_input_t* in, ob__health_t* out) {
  const ob_counters_t* c;
  memset(out, 0, sizeof *out);
  if (in == NULL || in->stats == NULL) return;
  c = in->counters;
  if (in->write_probe == 0 ||
      (c != NULL && c->last_write_error != 0 &&
       c->write_failing_since_ms > 0 &&
       in->now_ms - c->write_failing_since_ms >= in->write_error_ms))
    out->reasons |= OB__HEALTH_DB_NOT_WRITABLE;
  if (in->stats->space_level >= 1) out->reasons |= OB__HEALTH_DISK_RESERVE;
  if (relay_failing(in, &out->relay_failing_for_ms))
    out->reasons |= OB__HEALTH_RELAY_FAILING;
  if (in->stats->effects_unknown > in->effects_unknown_max)
    out->reasons |= OB__HEALTH_EFFECTS_UNKNOWN;
  if (in->period_ms > 0 && in->failed_max >= 0 &&
      in->failed_in_period > in->failed_max)
    out->reasons |= OB__HEALTH_FAILURES;
  if (in->period_ms > 0 && in->retried_max >= 0 &&
      in->retried_in_period > in->retried_max)
    out->reasons |= OB__HEALTH_RETRIES;
}

const char* ob__health_reason_name(unsigned bit) {
  switch (bit) {
    case OB__HEALTH_DB_NOT_WRITABLE: return "db_not_writable";
    case OB__HEALTH_DISK_RESERVE: return "disk_reserve";
    case OB__HEALTH_RELAY_FAILING: return "relay_failing";
    case OB__HEALTH_EFFECTS_UNKNOWN: return "effects_unknown";
    case OB__HEALTH_FAILURES: return "failures";
    case OB__HEALTH_RETRIES: return "retries";
    default: return "";
  }
}

char* ob__health_json(const ob__health_input_t* in, const ob__health_t* h) {
  const ob_stats_t* s = in->stats;
  const ob_counters_t* c = in->counters;
  char when[OB__UTC_MS_LEN];
  char reasons[128] = "";
  size_t rn = 0, cap = 1024;
  char* out;
  int n;
  for (unsigned bit = 1; bit <= OB__HEALTH_LAST; bit <<= 1) {
    if (!(h->reasons & bit)) continue;
    n = snprintf(reasons + rn, sizeof reasons - rn, "%s\"%s\"",
                 rn ? "," : "", ob__health_reason_name(bit));
    if (n > 0 && (size_t)n < sizeof reasons - rn) rn += (size_t)n;
  }
  (void)ob__utc_format_ms(in->now_ms, when);
  if ((out = malloc(cap)) == NULL) return NULL;
  n = snprintf(out, cap,
               "{\"status\":\"%s\",\"reasons\":[%s],\"checks\":{"
               "\"db_write_error\":\"%s\","
               "\"space_level\":%d,"
               "\"relay_online\":%d,"
               "\"relay_failing_seconds\":%" PRId64 ","
               "\"outbox_oldest_age_seconds\":%" PRId64 ","
               "\"effects_unknown\":%" PRId64 ","
               "\"failed_messages\":%" PRId64 ","
               "\"period_seconds\":%" PRId64 ","
               "\"failed_in_period\":%" PRId64 ","
               "\"retried_in_period\":%" PRId64 "},"
               "\"time\":\"%s\"}\n",
               h->reasons ? "unhealthy" : "ok", reasons,
               in->write_probe == 0 ? ob_err_name(in->write_probe_error)
               : c != NULL && c->last_write_error
                   ? ob_err_name(c->last_write_error)
                   : "",
               s ? s->space_level : 0, s ? s->relay_online : -1,
               h->relay_failing_for_ms / 1000,
               s ? s->outbox_oldest_unpublished_age_ms / 1000 : 0,
               s ? s->effects_unknown : 0, s ? s->failed : 0,
               in->period_ms / 1000, in->failed_in_period,
               in->retried_in_period, when);
  if (n < 0 || (size_t)n >= cap) {
    free(out);
    return NULL;
  }
  return out;
}
