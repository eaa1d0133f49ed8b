/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the `clocks` test (test_clocks.c and clocks/): a wall clock
** that can jump and a monotonic one that never does, as a terminal without
** NTP sees them (its RTC reset or set forward, its uptime steady), and a
** log that keeps the warnings. */
#ifndef OB_TEST_CLOCKS_H
#define OB_TEST_CLOCKS_H

#include "tests/integration/engine_fixture.h"

#define DAY (24LL * 3600 * 1000)

/* The suite runs on both backends (clocks_pg). A case that runs a dead
** holder's lease out by moving the fake clock (on PostgreSQL leases are on
** the server's clock, docs/postgresql.md), or that drives the CLI on a
** SQLite file, says so and skips there. */
#define CLOCKS_SQLITE_ONLY(why)                                           \
  do {                                                                    \
    if (ts_backend_is_pg()) {                                             \
      print_message("skipped on postgresql: %s\n", why);                  \
      skip();                                                             \
    }                                                                     \
  } while (0)

typedef struct jump_clock_s {
  ob_clock_t clock;
  int64_t wall;
  int64_t mono;
  uint64_t state;
} jump_clock_t;

static inline int64_t jc_wall(void* ctx) {
  return ((jump_clock_t*)ctx)->wall;
}

static inline int64_t jc_mono(void* ctx) {
  return ((jump_clock_t*)ctx)->mono;
}

static inline void jc_random(void* ctx, void* buf, size_t n) {
  jump_clock_t* c = ctx;
  unsigned char* p = buf;
  for (size_t i = 0; i < n; i++) {
    c->state = c->state * 6364136223846793005ULL + 1442695040888963407ULL;
    p[i] = (unsigned char)(c->state >> 56);
  }
}

static inline void jc_init(jump_clock_t* c) {
  memset(c, 0, sizeof *c);
  c->clock.ctx = c;
  c->clock.now_ms = jc_wall;
  c->clock.random = jc_random;
  c->clock.monotonic_ms = jc_mono;
  c->wall = FX_T0;
  c->mono = 5000;
  c->state = 7;
}

/* Time passing: both clocks move. */
static inline void jc_pass(jump_clock_t* c, int64_t ms) {
  c->wall += ms;
  c->mono += ms;
}

/* The clock's warnings an engine logged (the last one kept whole): records
** of component "clock" (ob_options_t.log_record), so that a message's
** scheduled retry, a warning too, is not counted as a jump. */
typedef struct warn_log_s {
  int n;
  char last[512];
} warn_log_t;

static inline void warn_log_cb(void* ctx, const ob_log_record_t* r) {
  warn_log_t* w = ctx;
  if (r->level > OB_LOG_WARN || strcmp(r->component, "clock") != 0) return;
  w->n++;
  snprintf(w->last, sizeof w->last, "%s", r->msg);
}

/* Deadlines and jumps (clocks/deadlines.c, fake clocks). */
void test_retries_after_backward_jump_in_run(void** state);
void test_relay_leases_after_backward_restart(void** state);
void test_effect_deadlines_after_backward_jump(void** state);
void test_scheduled_message_not_pulled_in(void** state);
void test_forward_jump_keeps_relay_leases(void** state);
void test_forward_jump_keeps_effect_leases(void** state);

/* The same through real processes under libfaketime
** (clocks/deadlines_faketime.c); the child half runs in this executable. */
void test_faketime_retries_jump_back_in_run(void** state);
int clocks_retry_child(const char* dir);

/* new_work.c: rows never attempted before a backward jump (issue 33). */
void test_new_queue_rows_after_backward_jump(void** state);
void test_new_queue_rows_after_flat_rtc_restart(void** state);
void test_new_outbox_rows_after_backward_restart(void** state);
void test_engine_clock_follows_forward(void** state);
void test_every_time_column_is_classified(void** state);
void test_faketime_new_rows_handled(void** state);

#endif
