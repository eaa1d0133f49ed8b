/* SPDX-License-Identifier: Apache-2.0 */
/* The failure store's filters and batches (ob_failed_filter_t) on a real
** database (an SQLite file; a PostgreSQL server as failed_filter_pg) of a
** few thousand failures of several types, classes, times and reasons: each
** filter alone and combined selects exactly the rows a C predicate over the
** same data picks; retry/remove touch only those; a batched remove commits
** ceil(N/batch) times, each commit visible on disk before the next batch,
** and stopping between batches keeps the rest. */
#include "tests/integration/engine_fixture.h"

#define ROWS 3000
#define MIN 60000LL

static const char* const TYPES[] = {"Pay", "Refund", "Void"};
static const char* const CLASSES[] = {"unrecoverable", "retries_exhausted",
                                      "no_handler", "effect_unknown"};

/* Row i (id i + 1): type i%3, class i%4, last failure FX_T0 + i minutes;
** every tenth reason holds LIKE's metacharacters. */
static const char* row_type(int i) { return TYPES[i % 3]; }
static const char* row_class(int i) { return CLASSES[i % 4]; }
static int64_t row_time(int i) { return FX_T0 + i * MIN; }
static void row_reason(int i, char* out, size_t n) {
  if (i % 10 == 0) snprintf(out, n, "gateway 50%%_down #%d", i);
  else snprintf(out, n, "declined #%d", i);
}

/* The rows, ids 1..ROWS in order, in one INSERT on a connection of the
** test's own (either backend: a fresh database numbers them from 1). */
static void fill(fixture_t* f) {
  size_t cap = 64 + (size_t)ROWS * 160, n;
  char* sql = malloc(cap);
  assert_non_null(sql);
  n = (size_t)snprintf(sql, cap,
                       "INSERT INTO failed_message(queue_name, message_id,"
                       " type, body, error_class, reason, attempts,"
                       " first_failed_at, last_failed_at, created_at) VALUES");
  for (int i = 0; i < ROWS; i++) {
    char reason[64];
    row_reason(i, reason, sizeof reason);
    n += (size_t)snprintf(sql + n, cap - n,
                          "%s('default', 'msg-%05d', '%s', %s, '%s', '%s', 3,"
                          " %lld, %lld, %lld)",
                          i ? ", " : " ", i, row_type(i),
                          ts_backend_is_pg() ? "'{}'" : "x'7b7d'",
                          row_class(i), reason, (long long)row_time(i),
                          (long long)row_time(i), (long long)row_time(i));
    assert_true(n < cap);
  }
  ts_backend_exec(f->db_path, sql);
  free(sql);
}

/* The same selection, computed in C. */
static int matches(const ob_failed_filter_t* fl, int i) {
  char reason[64];
  row_reason(i, reason, sizeof reason);
  if (fl->type && strcmp(fl->type, row_type(i)) != 0) return 0;
  if (fl->error_class && strcmp(fl->error_class, row_class(i)) != 0) return 0;
  if (fl->failed_after_ms > 0 && row_time(i) < fl->failed_after_ms) return 0;
  if (fl->failed_before_ms > 0 && row_time(i) >= fl->failed_before_ms) return 0;
  if (fl->reason_contains && !strstr(reason, fl->reason_contains)) return 0;
  return 1;
}

typedef struct seen_s {
  int64_t ids[ROWS];
  int n;
} seen_t;

static int collect(void* arg, const ob_failed_t* f) {
  seen_t* s = arg;
  if (s->n < ROWS) s->ids[s->n] = f->id;
  s->n++;
  return 0;
}

/* ob_failed_list_filter and ob_failed_count agree with matches(), row for
** row and in id order; returns how many. */
static int expect(fixture_t* f, const ob_failed_filter_t* fl) {
  static seen_t seen;
  int want = 0;
  seen.n = 0;
  assert_int_equal(ob_failed_list_filter(f->e, fl, collect, &seen) >= 0, 1);
  for (int i = 0; i < ROWS; i++) {
    if (!matches(fl, i)) continue;
    if (fl->limit > 0 && want == fl->limit) break;
    if (want >= seen.n || seen.ids[want] != i + 1)
      fail_msg("row %d (type %s class %s) missing at position %d", i + 1,
               row_type(i), row_class(i), want);
    want++;
  }
  assert_int_equal(seen.n, want);
  assert_int_equal(ob_failed_count(f->e, fl), want);
  return want;
}

static void test_each_filter_and_combined(void** state) {
  fixture_t* f = fx_new(1);
  ob_failed_filter_t fl;
  (void)state;
  fill(f);
  memset(&fl, 0, sizeof fl);
  assert_int_equal(expect(f, &fl), ROWS);
  assert_int_equal(ob_failed_count(f->e, NULL), ROWS);
  fl.type = "Refund";
  assert_int_equal(expect(f, &fl), ROWS / 3);
  fl.type = "refund";  /* byte for byte */
  assert_int_equal(expect(f, &fl), 0);
  memset(&fl, 0, sizeof fl);
  fl.error_class = "no_handler";
  assert_int_equal(expect(f, &fl), ROWS / 4);
  memset(&fl, 0, sizeof fl);
  fl.failed_after_ms = row_time(1000);  /* inclusive */
  assert_int_equal(expect(f, &fl), ROWS - 1000);
  memset(&fl, 0, sizeof fl);
  fl.failed_before_ms = row_time(1000);  /* exclusive */
  assert_int_equal(expect(f, &fl), 1000);
  memset(&fl, 0, sizeof fl);
  fl.reason_contains = "50%_";  /* LIKE's metacharacters are plain bytes */
  assert_int_equal(expect(f, &fl), ROWS / 10);
  fl.reason_contains = "%";
  assert_int_equal(expect(f, &fl), ROWS / 10);
  fl.reason_contains = "";  /* empty: no filter */
  assert_int_equal(expect(f, &fl), ROWS);
  memset(&fl, 0, sizeof fl);
  fl.limit = 7;
  assert_int_equal(expect(f, &fl), 7);
  /* All of them at once: i%3==1, i%4==2, 600 <= i < 2400, i%10==0, so
  ** i%60==10 (30 rows there), of which the first 20. */
  fl.type = "Refund";
  fl.error_class = "no_handler";
  fl.failed_after_ms = row_time(600);
  fl.failed_before_ms = row_time(2400);
  fl.reason_contains = "gateway";
  fl.limit = 0;
  assert_int_equal(expect(f, &fl), 30);
  fl.limit = 20;
  assert_int_equal(expect(f, &fl), 20);
  /* Bad values are refused, not read as "no filter". */
  fl.limit = -1;
  assert_int_equal(ob_failed_count(f->e, &fl), OB_EINVAL);
  fx_free(f);
}

static void test_retry_and_remove_touch_only_the_selection(void** state) {
  fixture_t* f = fx_new(1);
  ob_failed_filter_t fl;
  (void)state;
  fill(f);
  memset(&fl, 0, sizeof fl);
  fl.type = "Void";
  fl.failed_before_ms = row_time(1500);
  int n = expect(f, &fl);
  assert_int_equal(n, 500);
  assert_int_equal(ob_failed_retry_filter(f->e, &fl, 0, NULL, NULL), n);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM queue WHERE type = 'Void'"
                               " AND attempts = 0"), n);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM queue"), n);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM failed_message"), ROWS - n);
  assert_int_equal(ob_failed_count(f->e, &fl), 0);
  /* Nothing left to select: 0, not an error. */
  assert_int_equal(ob_failed_retry_filter(f->e, &fl, 0, NULL, NULL), 0);

  memset(&fl, 0, sizeof fl);
  fl.error_class = "unrecoverable";
  fl.reason_contains = "declined";
  fl.limit = 100;
  assert_int_equal(ob_failed_remove_filter(f->e, &fl, 0, NULL, NULL), 100);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM failed_message"),
                   ROWS - n - 100);
  /* The 100 lowest ids of the selection went, the rest of it stayed (the
  ** Voids before 1500 were retried above, so they were not candidates). */
  {
    int k = 0;
    for (int i = 0; i < ROWS; i++) {
      char sql[96];
      if (!matches(&fl, i) || (i % 3 == 2 && i < 1500)) continue;
      snprintf(sql, sizeof sql,
               "SELECT count(*) FROM failed_message WHERE id = %d", i + 1);
      assert_int_equal(fx_count(f, sql), k < 100 ? 0 : 1);
      k++;
    }
    assert_true(k > 100);
  }
  assert_int_equal(fx_count(f, "SELECT count(*) FROM queue"), n);
  fx_free(f);
}

typedef struct batches_s {
  fixture_t* f;
  int calls;
  int done[16];
  int stop_after;  /* 0: never */
  int total;
} batches_t;

/* Called after each commit: what it reports is already on disk, as a
** separate connection reads it. */
static int on_batch(void* arg, int done, int total) {
  batches_t* b = arg;
  if (b->calls < 16) b->done[b->calls] = done;
  b->calls++;
  b->total = total;
  if (b->f != NULL)
    assert_int_equal(fx_count(b->f, "SELECT count(*) FROM failed_message"
                                    " WHERE type = 'Pay'"),
                     ROWS / 3 - done);
  return b->stop_after > 0 && b->calls >= b->stop_after;
}

static void test_batches(void** state) {
  fixture_t* f = fx_new(1);
  ob_failed_filter_t fl;
  batches_t b;
  (void)state;
  fill(f);
  memset(&fl, 0, sizeof fl);
  fl.type = "Pay";  /* 1000 rows: batches of 300 -> 300, 600, 900, 1000 */
  memset(&b, 0, sizeof b);
  b.f = f;
  assert_int_equal(ob_failed_remove_filter(f->e, &fl, 300, on_batch, &b),
                   ROWS / 3);
  assert_int_equal(b.calls, (ROWS / 3 + 299) / 300);
  assert_int_equal(b.done[0], 300);
  assert_int_equal(b.done[2], 900);
  assert_int_equal(b.done[3], 1000);
  assert_int_equal(b.total, 1000);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM failed_message"),
                   ROWS - ROWS / 3);
  fx_free(f);

  /* The default batch, 500, and a stop after the second batch: whole
  ** batches gone, every other row intact. */
  f = fx_new(1);
  fill(f);
  memset(&b, 0, sizeof b);
  b.f = f;
  memset(&fl, 0, sizeof fl);
  fl.type = "Pay";
  /* 1000 Pay rows: stop after the first batch of 500 leaves 500. */
  b.stop_after = 1;
  assert_int_equal(ob_failed_remove_filter(f->e, &fl, 0, on_batch, &b), 500);
  assert_int_equal(b.calls, 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM failed_message WHERE"
                               " type = 'Pay'"), 500);
  assert_int_equal(fx_count(f, "SELECT min(id) FROM failed_message WHERE"
                               " type = 'Pay'"), 1 + 3 * 500);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM failed_message"),
                   ROWS - 500);
  fx_free(f);

  /* Retry of everything in batches of 500: ceil(3000/500) commits. */
  f = fx_new(1);
  fill(f);
  memset(&b, 0, sizeof b);
  assert_int_equal(ob_failed_retry_filter(f->e, NULL, 500, on_batch, &b), ROWS);
  assert_int_equal(b.calls, ROWS / 500);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM queue"), ROWS);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM failed_message"), 0);
  fx_free(f);
}

int main(void) {
  static const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_each_filter_and_combined),
      cmocka_unit_test(test_retry_and_remove_touch_only_the_selection),
      cmocka_unit_test(test_batches),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
