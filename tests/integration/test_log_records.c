/* SPDX-License-Identifier: Apache-2.0 */
/*
** The engine's log records through the public API (ob_options_t.log_record,
** oncebox.h "Structured log records"): a handled message at debug with its
** duration on the fake clock, a duplicate, a scheduled retry and failures
** at warn with their codes; the level filter; and the text callback fed the
** same text beside the record callback.
*/
#include "tests/integration/engine_fixture.h"

#define MAX_RECS 64

typedef struct rec_s {
  ob_log_level_t level;
  char component[32], event[48], id[OB_UUID_BUFLEN], type[32], queue[32];
  char consumer[32], outcome[32], msg[256];
  int64_t duration_ms;
  int error;
  unsigned repeated;
} rec_t;

typedef struct sink_s {
  int n, ntext;
  rec_t r[MAX_RECS];
  char text[MAX_RECS][256];
} sink_t;

static void cp(char* dst, size_t n, const char* s) {
  snprintf(dst, n, "%s", s ? s : "(null)");
}

static void on_record(void* ctx, const ob_log_record_t* r) {
  sink_t* s = ctx;
  rec_t* o;
  if (s->n == MAX_RECS) return;
  o = &s->r[s->n++];
  o->level = r->level;
  cp(o->component, sizeof o->component, r->component);
  cp(o->event, sizeof o->event, r->event);
  cp(o->id, sizeof o->id, r->message_id);
  cp(o->type, sizeof o->type, r->type);
  cp(o->queue, sizeof o->queue, r->queue);
  cp(o->consumer, sizeof o->consumer, r->consumer);
  cp(o->outcome, sizeof o->outcome, r->outcome);
  cp(o->msg, sizeof o->msg, r->msg);
  o->duration_ms = r->duration_ms;
  o->error = r->error;
  o->repeated = r->repeated;
}

static void on_text(void* ctx, ob_log_level_t level, const char* msg) {
  sink_t* s = ctx;
  (void)level;
  if (s->ntext < MAX_RECS) cp(s->text[s->ntext++], 256, msg);
}

static const rec_t* find(const sink_t* s, const char* event, const char* id) {
  for (int i = 0; i < s->n; i++)
    if (strcmp(s->r[i].event, event) == 0 && strcmp(s->r[i].id, id) == 0)
      return &s->r[i];
  return NULL;
}

typedef struct h_s {
  fake_clock_t* clock;
} h_t;

/* Takes 25 ms of fake time; "retry" in the body asks for a retry. */
static int slow(ob_tx_t* tx, const ob_message_t* m, void* arg) {
  h_t* h = arg;
  fake_clock_advance(h->clock, 25);
  if (strstr(m->body, "retry") != NULL) return ob_tx_retry(tx, -1, "busy");
  return OB_DONE;
}

static fixture_t* open_with(sink_t* s, ob_log_level_t level, int text) {
  fixture_t* f = calloc(1, sizeof *f);
  f->dir = ts_mkdtemp("logrec");
  f->db_path = ts_backend_db(f->dir, "t.db");
  fake_clock_init(&f->clock, FX_T0, 42);
  ob_options_init(&f->opts);
  f->opts.db_path = f->db_path;
  f->opts.clock = &f->clock.clock;
  f->opts.batch_size = 8;
  f->opts.log_level = level;
  f->opts.log_record = on_record;
  f->opts.log_record_ctx = s;
  if (text) {
    f->opts.log = on_text;
    f->opts.log_ctx = s;
  }
  fx_open(f);
  return f;
}

static void test_message_records(void** state) {
  sink_t s;
  h_t h;
  char a[OB_UUID_BUFLEN], b[OB_UUID_BUFLEN], c[OB_UUID_BUFLEN];
  fixture_t* f;
  const rec_t* r;
  (void)state;
  memset(&s, 0, sizeof s);
  f = open_with(&s, OB_LOG_DEBUG, 1);
  h.clock = &f->clock;
  assert_int_equal(ob_register(f->e, "Stock", "reserve-v1", slow, &h), 0);
  fx_event(1, a);
  fx_event(2, b);
  fx_event(3, c);
  assert_int_equal(fx_enqueue(f, "Stock", a, "{}"), 0);
  assert_int_equal(fx_enqueue(f, "Stock", a, "{}"), 0);  /* redelivered */
  assert_int_equal(fx_enqueue(f, "Stock", b, "{\"retry\":1}"), 0);
  assert_int_equal(fx_enqueue(f, "Nothing", c, "{}"), 0);
  fx_drain(f);

  r = find(&s, "message_handled", a);
  assert_non_null(r);
  assert_int_equal(r->level, OB_LOG_DEBUG);
  assert_string_equal(r->component, "engine");
  assert_string_equal(r->type, "Stock");
  assert_string_equal(r->queue, "default");
  assert_string_equal(r->consumer, "reserve-v1");
  assert_string_equal(r->outcome, "done");
  assert_int_equal(r->duration_ms, 25);  /* the fake clock's 25 ms */
  assert_int_equal(r->error, 0);

  r = find(&s, "message_duplicate", a);
  assert_non_null(r);
  assert_int_equal(r->level, OB_LOG_DEBUG);
  assert_string_equal(r->outcome, "duplicate");
  assert_string_equal(r->consumer, "(null)");

  r = find(&s, "message_retry_scheduled", b);
  assert_non_null(r);
  assert_int_equal(r->level, OB_LOG_WARN);
  assert_string_equal(r->outcome, "retried");
  assert_string_equal(r->consumer, "reserve-v1");
  assert_int_equal(r->error, OB_EHANDLER);
  assert_int_equal(r->duration_ms, 25);

  r = find(&s, "message_failed", c);
  assert_non_null(r);
  assert_int_equal(r->level, OB_LOG_WARN);
  assert_string_equal(r->outcome, "no_handler");
  assert_int_equal(r->error, OB_ENOHANDLER);
  assert_string_equal(r->type, "Nothing");

  /* The text callback got every record's text, in order. */
  assert_int_equal(s.ntext, s.n);
  for (int i = 0; i < s.n; i++) assert_string_equal(s.text[i], s.r[i].msg);
  for (int i = 0; i < s.n; i++) assert_int_equal(s.r[i].repeated, 0);
  fx_free(f);
}

static void test_level_filters_records(void** state) {
  sink_t s;
  h_t h;
  char a[OB_UUID_BUFLEN], c[OB_UUID_BUFLEN];
  fixture_t* f;
  (void)state;
  memset(&s, 0, sizeof s);
  f = open_with(&s, OB_LOG_INFO, 0);
  h.clock = &f->clock;
  assert_int_equal(ob_register(f->e, "Stock", "reserve-v1", slow, &h), 0);
  assert_int_equal(fx_enqueue(f, "Stock", fx_event(1, a), "{}"), 0);
  assert_int_equal(fx_enqueue(f, "Nothing", fx_event(3, c), "{}"), 0);
  fx_drain(f);
  assert_null(find(&s, "message_handled", a));
  assert_non_null(find(&s, "message_failed", c));
  /* Without debug the handling time is not read: no duration. */
  assert_int_equal(find(&s, "message_failed", c)->duration_ms, -1);
  for (int i = 0; i < s.n; i++) assert_true(s.r[i].level <= OB_LOG_INFO);
  fx_free(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_message_records),
      cmocka_unit_test(test_level_filters_records),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
