/* SPDX-License-Identifier: Apache-2.0 */
/* Prometheus text exposition 0.0.4 from ob_stats_t and the modules'
** statistics (core/util/prometheus.h; the table in docs/operations.md).
** A one-shot read of the database knows how many rows are in each state
** now (gauges), not how many events a process saw: those counters belong
** to a running process and are rendered only when it gives them. */
#include "core/util/prometheus.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  char* p;
  size_t len, cap;
  int oom;
} buf_t;

/* printf-checked: every caller's format is a literal (clang's
** -Wformat-nonliteral accepts the vsnprintf below only with this). */
static void put(buf_t* b, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void put(buf_t* b, const char* fmt, ...) {
  va_list ap;
  int n;
  if (b->oom) return;
  for (;;) {
    size_t room = b->cap - b->len;
    va_start(ap, fmt);
    n = vsnprintf(b->p + b->len, room, fmt, ap);
    va_end(ap);
    if (n < 0) {
      b->oom = 1;
      return;
    }
    if ((size_t)n < room) {
      b->len += (size_t)n;
      return;
    }
    size_t cap = b->cap * 2 + (size_t)n + 1;
    char* q = realloc(b->p, cap);
    if (q == NULL) {
      b->oom = 1;
      return;
    }
    b->p = q;
    b->cap = cap;
  }
}

/* One family's HELP and TYPE lines. */
static void family_t(buf_t* b, const char* name, const char* type,
                     const char* help) {
  put(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void family(buf_t* b, const char* name, const char* help) {
  family_t(b, name, "gauge", help);
}

static void sample(buf_t* b, const char* name, int64_t v) {
  put(b, "%s %" PRId64 "\n", name, v);
}

static void sample_l(buf_t* b, const char* name, const char* label,
                     const char* value, int64_t v) {
  put(b, "%s{%s=\"%s\"} %" PRId64 "\n", name, label, value, v);
}

/* ms as seconds with millisecond precision, in integers: no rounding
** through a double, and right for any int64. */
static void sample_ms(buf_t* b, const char* name, int64_t ms) {
  const char* sign = ms < 0 ? "-" : "";
  uint64_t a = ms < 0 ? (uint64_t)0 - (uint64_t)ms : (uint64_t)ms;
  put(b, "%s %s%" PRIu64 ".%03u\n", name, sign, a / 1000,
      (unsigned)(a % 1000));
}

static void gauge(buf_t* b, const char* name, const char* help, int64_t v) {
  family(b, name, help);
  sample(b, name, v);
}

size_t ob__prom_escape_label(const char* in, char* out, size_t n) {
  size_t o = 0;
  if (n == 0) return (size_t)-1;
  for (; in != NULL && *in; in++) {
    const char* esc = *in == '\\' ? "\\\\" : *in == '"' ? "\\\""
                      : *in == '\n' ? "\\n" : NULL;
    size_t need = esc ? 2 : 1;
    if (o + need >= n) break;
    if (esc) {
      out[o++] = esc[0];
      out[o++] = esc[1];
    } else {
      out[o++] = *in;
    }
  }
  out[o] = '\0';
  return o;
}

/* The process counters of a running engine: they reset with the process,
** which process_start_time_seconds tells the scraper (rate() handles the
** reset). Outcomes and inputs are fixed label sets. */
static void counters(buf_t* b, const ob_counters_t* c, int64_t now_ms) {
  static const char* const inputs[OB_INPUT_COUNT] = {"queue", "sqs"};
  static const int outcomes[] = {OB_OUTCOME_DONE, OB_OUTCOME_RETRIED,
                                 OB_OUTCOME_FAILED, OB_OUTCOME_WAITING};
  family(b, "process_start_time_seconds",
         "Start time of the process since the Unix epoch in seconds.");
  sample_ms(b, "process_start_time_seconds", c->started_at_ms);
  family_t(b, "oncebox_handled_total", "counter",
           "Messages whose handling transaction committed, by input (queue: "
           "the local queue; sqs: the SQS consumer) and outcome (done, "
           "retried, failed, waiting for an effect); duplicates are in "
           "oncebox_duplicates_total.");
  for (int i = 0; i < OB_INPUT_COUNT; i++)
    for (size_t k = 0; k < sizeof outcomes / sizeof outcomes[0]; k++)
      put(b, "oncebox_handled_total{input=\"%s\",outcome=\"%s\"} %" PRId64
          "\n", inputs[i], ob_outcome_name(outcomes[k]),
          c->handled[i][outcomes[k]]);
  family_t(b, "oncebox_duplicates_total", "counter",
           "Messages acknowledged without running a handler: every consumer "
           "of their type had already handled them (the dedup guard).");
  for (int i = 0; i < OB_INPUT_COUNT; i++)
    sample_l(b, "oncebox_duplicates_total", "input", inputs[i],
             c->handled[i][OB_OUTCOME_DUPLICATE]);
  family_t(b, "oncebox_batches_total", "counter",
           "Handling transactions committed.");
  sample(b, "oncebox_batches_total", c->batches);
  family_t(b, "oncebox_write_errors_total", "counter",
           "Handling transactions that could not begin or commit (nothing of "
           "them applied).");
  sample(b, "oncebox_write_errors_total", c->write_errors);
  if (c->last_handled_at_ms > 0) {
    family(b, "oncebox_last_handled_timestamp_seconds",
           "Unix time of the last committed handling outcome; absent before "
           "the first.");
    sample_ms(b, "oncebox_last_handled_timestamp_seconds",
              c->last_handled_at_ms);
  }
  if (!c->relay_enabled) return;
  family_t(b, "oncebox_relay_requests_total", "counter",
           "Requests of the relay to SQS by outcome (ok: every entry "
           "accepted; partial: some refused; failed: the request failed).");
  sample_l(b, "oncebox_relay_requests_total", "outcome", "ok",
           c->relay_requests_ok);
  sample_l(b, "oncebox_relay_requests_total", "outcome", "partial",
           c->relay_requests_partial);
  sample_l(b, "oncebox_relay_requests_total", "outcome", "failed",
           c->relay_requests_failed);
  family_t(b, "oncebox_relay_events_published_total", "counter",
           "Outbox events SQS accepted from this process.");
  sample(b, "oncebox_relay_events_published_total", c->relay_events_published);
  family_t(b, "oncebox_relay_events_parked_total", "counter",
           "Outbox events this process's relay gave up on (parked).");
  sample(b, "oncebox_relay_events_parked_total", c->relay_events_parked);
  family(b, "oncebox_relay_failing_seconds",
         "How long the relay's requests have been failing; 0 while they go "
         "through.");
  sample_ms(b, "oncebox_relay_failing_seconds",
            c->relay_failing_since_ms > 0 && now_ms > c->relay_failing_since_ms
                ? now_ms - c->relay_failing_since_ms
                : 0);
}

char* ob__prom_render(const ob__prom_input_t* in, size_t* len) {
  buf_t b = {NULL, 0, 0, 0};
  const ob_stats_t* s;
  char ver[128];
  int64_t parked_other;

  if (in == NULL || in->stats == NULL) return NULL;
  s = in->stats;
  b.cap = 4096;
  if ((b.p = malloc(b.cap)) == NULL) return NULL;
  b.p[0] = '\0';

  family(&b, "oncebox_queue_messages",
         "Messages in the queue by state (ready: may be handled now; "
         "delayed: not before a later time; in_hand: leased by a worker).");
  sample_l(&b, "oncebox_queue_messages", "state", "ready", s->queue_ready);
  sample_l(&b, "oncebox_queue_messages", "state", "delayed", s->queue_delayed);
  sample_l(&b, "oncebox_queue_messages", "state", "in_hand", s->queue_in_hand);
  gauge(&b, "oncebox_failed_messages",
        "Messages in the failure store (oncebox failed show).",
        s->failed);
  gauge(&b, "oncebox_dedup_records",
        "Dedup records kept (one per handled message and consumer, until "
        "retention deletes it).", s->processed);
  gauge(&b, "oncebox_outbox_pending",
        "Outbox events not yet published, parked ones included.",
        s->outbox_unpublished);
  gauge(&b, "oncebox_outbox_due",
        "Outbox events unpublished, not parked and due now.", s->outbox_due);
  gauge(&b, "oncebox_outbox_parked",
        "Outbox events the relay gave up on after its attempt limit "
        "(oncebox outbox show).", s->outbox_parked);
  family(&b, "oncebox_outbox_oldest_age_seconds",
         "Age of the oldest unpublished outbox event; 0 when none.");
  sample_ms(&b, "oncebox_outbox_oldest_age_seconds",
            s->outbox_oldest_unpublished_age_ms);
  /* PostgreSQL's own failure mode of a SKIP LOCKED queue: absent on
  ** SQLite, which has neither. */
  if (s->db_postgresql) {
    family(&b, "oncebox_db_oldest_transaction_age_seconds",
           "Age of the oldest transaction another session holds open on "
           "the database: while it is open no dead row can be vacuumed.");
    sample_ms(&b, "oncebox_db_oldest_transaction_age_seconds",
              s->db_oldest_xact_age_ms);
    gauge(&b, "oncebox_db_dead_tuples",
          "Dead rows in oncebox's tables (partitions included) that "
          "autovacuum has not yet cleaned.", s->db_dead_tuples);
  }
  gauge(&b, "oncebox_outbox_published",
        "Published outbox events still kept (rows, not a count of "
        "publications: retention deletes them).", s->outbox_published);
  /* Absent, not 0, when no relay ever ran: a terminal without a relay has
  ** nothing to be offline. */
  if (s->relay_online >= 0)
    gauge(&b, "oncebox_relay_online",
          "1 when the relay last recorded its peer as reachable, 0 when "
          "offline; absent when no relay has run on this database.",
          s->relay_online == 1);
  if (s->relay_online >= 0)
    gauge(&b, "oncebox_relay_error",
          "1 when the relay's last record carries an error (online: a "
          "configuration fault, it is not publishing; offline: the "
          "transport failure); oncebox stats says it in words.",
          s->relay_error[0] != '\0');
  if (s->last_publish_at_ms > 0) {
    family(&b, "oncebox_last_publish_timestamp_seconds",
           "Unix time of the relay's last successful publication; absent "
           "when never.");
    sample_ms(&b, "oncebox_last_publish_timestamp_seconds",
              s->last_publish_at_ms);
  }
  family(&b, "oncebox_effects",
         "Fenced side effects (ob_tx_effect) by state; a parked effect "
         "counts in its state (pending or unknown).");
  sample_l(&b, "oncebox_effects", "state", "pending", s->effects_pending);
  sample_l(&b, "oncebox_effects", "state", "unknown", s->effects_unknown);
  sample_l(&b, "oncebox_effects", "state", "confirmed", s->effects_confirmed);
  sample_l(&b, "oncebox_effects", "state", "failed", s->effects_failed);
  /* The causes partition the parked effects (other: parked for none of
  ** the three), so sum() over cause is the parked count. */
  parked_other = s->effects_parked - s->effects_key_expired -
                 s->effects_conflict - s->effects_replayed_error;
  if (parked_other < 0) parked_other = 0;
  family(&b, "oncebox_effects_parked",
         "Effects parked for a person (oncebox effects show --state "
         "parked) by cause.");
  sample_l(&b, "oncebox_effects_parked", "cause", "key-expired",
           s->effects_key_expired);
  sample_l(&b, "oncebox_effects_parked", "cause", "conflict",
           s->effects_conflict);
  sample_l(&b, "oncebox_effects_parked", "cause", "replayed-error",
           s->effects_replayed_error);
  sample_l(&b, "oncebox_effects_parked", "cause", "other", parked_other);
  gauge(&b, "oncebox_fence_claims",
        "Fence claims: effect rows, one per claimed idempotency key.",
        s->fence_claims);
  gauge(&b, "oncebox_fence_provider_successes",
        "Provider 2xx answers recorded on the kept effect rows, replays "
        "included.", s->provider_2xx);
  gauge(&b, "oncebox_fence_repeated_successes",
        "Provider 2xx answers beyond the first for one key (a repeated call "
        "answered again).", s->provider_replays);
  /* The modules' figures (ob_add_stats), each under oncebox_ + its name. */
  for (size_t i = 0; i < in->nfigures; i++) {
    char name[96];
    snprintf(name, sizeof name, "oncebox_%s", in->figures[i].name);
    gauge(&b, name, in->figures[i].help, in->figures[i].value);
  }
  gauge(&b, "oncebox_db_size_bytes",
        "Bytes of the database's pages in use (free pages and the WAL not "
        "counted).", s->db_bytes);
  /* Absent without a cap, as Vector's vector_buffer_max_size_bytes: a 0
  ** would make size/max an infinite ratio. */
  if (s->db_max_bytes > 0) {
    gauge(&b, "oncebox_db_max_size_bytes",
          "The database's size cap in force (--max-db-bytes); absent "
          "without a cap.", s->db_max_bytes);
    gauge(&b, "oncebox_db_reserve_bytes",
          "The part of the cap kept for critical types and for what gives "
          "space back.", s->db_reserve_bytes);
    family(&b, "oncebox_db_max_size_info",
           "Where the cap came from, as a label (configured, or filesystem: "
           "derived from its size); always 1.");
    sample_l(&b, "oncebox_db_max_size_info", "source",
             s->db_cap_source == OB_CAP_FILESYSTEM ? "filesystem"
                                                   : "configured", 1);
  }
  gauge(&b, "oncebox_space_level",
        "What new messages meet: 0 accepted, 1 only critical types, 2 none, "
        "3 none and handling paused.", s->space_level);
  (void)ob__prom_escape_label(in->version ? in->version : "", ver, sizeof ver);
  family(&b, "oncebox_build_info", "The oncebox version, as a label; always 1.");
  sample_l(&b, "oncebox_build_info", "version", ver, 1);
  family(&b, "oncebox_stats_timestamp_seconds",
         "Unix time at which these figures were read.");
  sample_ms(&b, "oncebox_stats_timestamp_seconds", in->now_ms);
  if (in->counters != NULL) counters(&b, in->counters, in->now_ms);

  if (b.oom) {
    free(b.p);
    return NULL;
  }
  if (len) *len = b.len;
  return b.p;
}
