/* SPDX-License-Identifier: Apache-2.0 */
/* The Prometheus exposition (core/util/prometheus.c): exact text for a
** small filled struct, the families that are absent by design, and label
** escaping. promtool's verdict on the real program's output is in
** tests/cli/test_prometheus.sh. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/prometheus.h"

static const char expected_small[] =
    "# HELP oncebox_queue_messages Messages in the queue by state (ready: may "
    "be handled now; delayed: not before a later time; in_hand: leased by a "
    "worker).\n"
    "# TYPE oncebox_queue_messages gauge\n"
    "oncebox_queue_messages{state=\"ready\"} 3\n"
    "oncebox_queue_messages{state=\"delayed\"} 2\n"
    "oncebox_queue_messages{state=\"in_hand\"} 1\n"
    "# HELP oncebox_failed_messages Messages in the failure store (oncebox "
    "failed show).\n"
    "# TYPE oncebox_failed_messages gauge\n"
    "oncebox_failed_messages 4\n"
    "# HELP oncebox_dedup_records Dedup records kept (one per handled message "
    "and consumer, until retention deletes it).\n"
    "# TYPE oncebox_dedup_records gauge\n"
    "oncebox_dedup_records 9000000000\n"
    "# HELP oncebox_outbox_pending Outbox events not yet published, parked "
    "ones included.\n"
    "# TYPE oncebox_outbox_pending gauge\n"
    "oncebox_outbox_pending 5\n"
    "# HELP oncebox_outbox_due Outbox events unpublished, not parked and due "
    "now.\n"
    "# TYPE oncebox_outbox_due gauge\n"
    "oncebox_outbox_due 4\n"
    "# HELP oncebox_outbox_parked Outbox events the relay gave up on after "
    "its attempt limit (oncebox outbox show).\n"
    "# TYPE oncebox_outbox_parked gauge\n"
    "oncebox_outbox_parked 1\n"
    "# HELP oncebox_outbox_oldest_age_seconds Age of the oldest unpublished "
    "outbox event; 0 when none.\n"
    "# TYPE oncebox_outbox_oldest_age_seconds gauge\n"
    "oncebox_outbox_oldest_age_seconds 61.005\n"
    "# HELP oncebox_outbox_published Published outbox events still kept "
    "(rows, not a count of publications: retention deletes them).\n"
    "# TYPE oncebox_outbox_published gauge\n"
    "oncebox_outbox_published 7\n"
    "# HELP oncebox_effects Fenced side effects (ob_tx_effect) by state; a "
    "parked effect counts in its state (pending or unknown).\n"
    "# TYPE oncebox_effects gauge\n"
    "oncebox_effects{state=\"pending\"} 0\n"
    "oncebox_effects{state=\"unknown\"} 2\n"
    "oncebox_effects{state=\"confirmed\"} 6\n"
    "oncebox_effects{state=\"failed\"} 1\n"
    "# HELP oncebox_effects_parked Effects parked for a person (oncebox "
    "effects show --state parked) by cause.\n"
    "# TYPE oncebox_effects_parked gauge\n"
    "oncebox_effects_parked{cause=\"key-expired\"} 1\n"
    "oncebox_effects_parked{cause=\"conflict\"} 0\n"
    "oncebox_effects_parked{cause=\"replayed-error\"} 0\n"
    "oncebox_effects_parked{cause=\"other\"} 1\n"
    "# HELP oncebox_fence_claims Fence claims: effect rows, one per claimed "
    "idempotency key.\n"
    "# TYPE oncebox_fence_claims gauge\n"
    "oncebox_fence_claims 9\n"
    "# HELP oncebox_fence_provider_successes Provider 2xx answers recorded on "
    "the kept effect rows, replays included.\n"
    "# TYPE oncebox_fence_provider_successes gauge\n"
    "oncebox_fence_provider_successes 8\n"
    "# HELP oncebox_fence_repeated_successes Provider 2xx answers beyond the "
    "first for one key (a repeated call answered again).\n"
    "# TYPE oncebox_fence_repeated_successes gauge\n"
    "oncebox_fence_repeated_successes 2\n"
    "# HELP oncebox_db_size_bytes Bytes of the database's pages in use (free "
    "pages and the WAL not counted).\n"
    "# TYPE oncebox_db_size_bytes gauge\n"
    "oncebox_db_size_bytes 65536\n"
    "# HELP oncebox_space_level What new messages meet: 0 accepted, 1 only "
    "critical types, 2 none, 3 none and handling paused.\n"
    "# TYPE oncebox_space_level gauge\n"
    "oncebox_space_level 0\n"
    "# HELP oncebox_build_info The oncebox version, as a label; always 1.\n"
    "# TYPE oncebox_build_info gauge\n"
    "oncebox_build_info{version=\"0.1.0\"} 1\n"
    "# HELP oncebox_stats_timestamp_seconds Unix time at which these figures "
    "were read.\n"
    "# TYPE oncebox_stats_timestamp_seconds gauge\n"
    "oncebox_stats_timestamp_seconds 2208988800.007\n";

static ob_stats_t small_stats(void) {
  ob_stats_t s;
  memset(&s, 0, sizeof s);
  s.queue_ready = 3;
  s.queue_delayed = 2;
  s.queue_in_hand = 1;
  s.failed = 4;
  s.processed = 9000000000LL; /* past 32 bits: an int64 format */
  s.outbox_unpublished = 5;
  s.outbox_due = 4;
  s.outbox_parked = 1;
  s.outbox_oldest_unpublished_age_ms = 61005;
  s.outbox_published = 7;
  s.relay_online = -1;       /* no relay ran: relay families absent */
  s.last_publish_at_ms = 0;  /* never: absent */
  s.effects_unknown = 2;
  s.effects_parked = 2;
  s.effects_key_expired = 1;
  s.effects_confirmed = 6;
  s.effects_failed = 1;
  s.fence_claims = 9;
  s.provider_2xx = 8;
  s.provider_replays = 2;
  s.db_bytes = 65536;        /* no cap: max and reserve absent */
  return s;
}

/* The whole text of a small case, byte for byte: no payout or charge
** table, no relay, no publication, no cap. */
static void test_small_exact(void** state) {
  ob_stats_t s = small_stats();
  ob__prom_input_t in = {&s, NULL, 0, "0.1.0", 2208988800007LL, NULL};
  size_t len = 0;
  char* t;
  (void)state;
  t = ob__prom_render(&in, &len);
  assert_non_null(t);
  assert_string_equal(t, expected_small);
  assert_int_equal(len, strlen(expected_small));
  free(t);
}

/* The families that depend on what the database has: the relay's, the last
** publication, the cap, the modules'. */
static void test_optional_families(void** state) {
  ob_stats_t s = small_stats();
  ob_figure_t fig[3] = {{"payouts", "Payouts.", 12, 0},
                        {"charges", "Charges.", 5, 0},
                        {"unfenced_successes", "Must be 0.", 1, 1}};
  ob__prom_input_t in = {&s, fig, 3, "0.1.0", 1000, NULL};
  char* t;
  (void)state;
  s.relay_online = 1;
  snprintf(s.relay_error, sizeof s.relay_error, "HTTP 403");
  s.last_publish_at_ms = 1700000000123LL;
  s.db_max_bytes = 1048576;
  s.db_reserve_bytes = 131072;
  s.db_cap_source = OB_CAP_FILESYSTEM;
  s.space_level = 1;
  t = ob__prom_render(&in, NULL);
  assert_non_null(t);
  assert_non_null(strstr(t, "\noncebox_relay_online 1\n"));
  assert_non_null(strstr(t, "\noncebox_relay_error 1\n"));
  assert_non_null(strstr(t, "\noncebox_last_publish_timestamp_seconds "
                            "1700000000.123\n"));
  assert_non_null(strstr(t, "\noncebox_db_max_size_bytes 1048576\n"));
  assert_non_null(strstr(t, "\noncebox_db_reserve_bytes 131072\n"));
  assert_non_null(strstr(t, "\noncebox_db_max_size_info{source=\"filesystem\"} "
                            "1\n"));
  assert_non_null(strstr(t, "\noncebox_space_level 1\n"));
  assert_non_null(strstr(t, "\noncebox_payouts 12\n"));
  assert_non_null(strstr(t, "\noncebox_charges 5\n"));
  assert_non_null(strstr(t, "\noncebox_unfenced_successes 1\n"));
  assert_non_null(strstr(t, "# HELP oncebox_charges Charges.\n"
                            "# TYPE oncebox_charges gauge\n"));
  assert_non_null(strstr(t, "\noncebox_stats_timestamp_seconds 1.000\n"));
  /* The error's words are never a label (free text, unbounded values). */
  assert_null(strstr(t, "403"));
  free(t);
  /* Offline, no error recorded. */
  s.relay_online = 0;
  s.relay_error[0] = '\0';
  t = ob__prom_render(&in, NULL);
  assert_non_null(strstr(t, "\noncebox_relay_online 0\n"));
  assert_non_null(strstr(t, "\noncebox_relay_error 0\n"));
  free(t);
}

/* A label value with a quote, a backslash and a line feed, through the
** escaper and through the rendered build_info line. */
static void test_label_escaping(void** state) {
  ob_stats_t s = small_stats();
  ob__prom_input_t in = {&s, NULL, 0, "1.0 \"rc\\1\"\nx", 0, NULL};
  char out[64], tiny[4];
  char* t;
  (void)state;
  assert_int_equal(ob__prom_escape_label("a\"b\\c\nd", out, sizeof out), 10);
  assert_string_equal(out, "a\\\"b\\\\c\\nd");
  assert_int_equal(ob__prom_escape_label("plain-1.2", out, sizeof out), 9);
  assert_string_equal(out, "plain-1.2");
  /* Truncated, never in the middle of an escape. */
  assert_int_equal(ob__prom_escape_label("ab\"", tiny, sizeof tiny), 2);
  assert_string_equal(tiny, "ab");
  assert_int_equal(ob__prom_escape_label("x", tiny, 0), (size_t)-1);
  t = ob__prom_render(&in, NULL);
  assert_non_null(t);
  assert_non_null(strstr(t, "\noncebox_build_info{version=\"1.0 \\\"rc\\\\1\\\""
                            "\\nx\"} 1\n"));
  free(t);
}

/* A running process's counters: TYPE counter, every input and outcome, the
** relay's families only once a relay is enabled, failing time from now. */
static void test_counters(void** state) {
  ob_stats_t s;
  ob_counters_t c;
  ob__prom_input_t in = {&s, NULL, 0, "0.1.0", 10000, &c};
  char* t;
  (void)state;
  memset(&s, 0, sizeof s);
  memset(&c, 0, sizeof c);
  s.relay_online = -1;
  c.started_at_ms = 1500;
  c.handled[OB_INPUT_QUEUE][OB_OUTCOME_DONE] = 7;
  c.handled[OB_INPUT_SQS][OB_OUTCOME_FAILED] = 2;
  c.handled[OB_INPUT_SQS][OB_OUTCOME_DUPLICATE] = 47;
  t = ob__prom_render(&in, NULL);
  assert_non_null(t);
  assert_non_null(strstr(t, "process_start_time_seconds 1.500\n"));
  assert_non_null(strstr(t, "# TYPE oncebox_handled_total counter\n"));
  assert_non_null(strstr(t, "oncebox_handled_total{input=\"queue\","
                            "outcome=\"done\"} 7\n"));
  assert_non_null(strstr(t, "oncebox_handled_total{input=\"sqs\","
                            "outcome=\"failed\"} 2\n"));
  assert_non_null(strstr(t, "oncebox_duplicates_total{input=\"sqs\"} 47\n"));
  /* A duplicate is not a handled outcome: one event, one family. */
  assert_null(strstr(t, "outcome=\"duplicate\""));
  assert_null(strstr(t, "oncebox_last_handled_timestamp_seconds"));
  assert_null(strstr(t, "oncebox_relay_requests_total"));
  free(t);
  c.relay_enabled = 1;
  c.relay_requests_failed = 3;
  c.relay_failing_since_ms = 4000;
  c.last_handled_at_ms = 9000;
  t = ob__prom_render(&in, NULL);
  assert_non_null(t);
  assert_non_null(strstr(t, "oncebox_relay_requests_total{outcome=\"failed\"} 3\n"));
  assert_non_null(strstr(t, "oncebox_relay_failing_seconds 6.000\n"));
  assert_non_null(strstr(t, "oncebox_last_handled_timestamp_seconds 9.000\n"));
  free(t);
}

static void test_null_input(void** state) {
  ob__prom_input_t in = {NULL, NULL, 0, "x", 0, NULL};
  (void)state;
  assert_null(ob__prom_render(NULL, NULL));
  assert_null(ob__prom_render(&in, NULL));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_small_exact),
      cmocka_unit_test(test_optional_families),
      cmocka_unit_test(test_label_escaping),
      cmocka_unit_test(test_counters),
      cmocka_unit_test(test_null_input),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
