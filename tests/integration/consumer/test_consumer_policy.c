/* SPDX-License-Identifier: Apache-2.0 */
/* The SQS consumer's pure decisions (failure-store ids, the 12 h visibility
** budget, retry visibility) and ob_consumer_enable's validation, with an
** injected environment: no server, no network. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/engine/engine_int.h"
#include "platform/consumer/consumer.h"
#include "tests/support/testsupport.h"

#define SECRET "CANARYsecret/consumer+0123456789abcdefXY"

static void test_failure_id(void** state) {
  char a[OB_UUID_BUFLEN], b[OB_UUID_BUFLEN];
  (void)state;
  /* A UUID MessageId is used as is, lower-cased. */
  assert_int_equal(
      ob__consumer_failure_id("0190B6D8-3AE7-7CA2-A653-000000000001", a), 0);
  assert_string_equal(a, "0190b6d8-3ae7-7ca2-a653-000000000001");
  /* Anything else: UUIDv5 in our namespace, as Python computes it:
  ** uuid.uuid5(uuid.UUID("6bcd7d03-f7c5-57f9-8ac2-72830ca14323"), s). */
  assert_int_equal(ob__consumer_failure_id("not-a-uuid-id", a), 0);
  assert_string_equal(a, "f56ec9c0-d83f-5f8b-b172-037be2b25e3c");
  assert_int_equal(ob__consumer_failure_id("", a), 0);
  assert_string_equal(a, "cb688448-cf9f-5550-9b98-03dcab98ca35");
  /* Deterministic, distinct, valid. */
  assert_int_equal(ob__consumer_failure_id("msg-1", a), 0);
  assert_int_equal(ob__consumer_failure_id("msg-1", b), 0);
  assert_string_equal(a, b);
  assert_int_equal(ob__consumer_failure_id("msg-2", b), 0);
  assert_string_not_equal(a, b);
  assert_true(ob_uuid_valid(a));
  assert_int_equal(a[14], '5');
  assert_non_null(strchr("89ab", a[19]));
  assert_int_equal(ob__consumer_failure_id(NULL, a), OB_EINVAL);
}

static void test_visibility_budget(void** state) {
  const int64_t t0 = 1796083200000LL;
  const int64_t h12 = 43200000LL;
  (void)state;
  /* Fresh: the full 12 h cap (the margin is taken from the time left). */
  assert_int_equal(ob__consumer_visibility_budget_s(t0, t0), 43200 - 60);
  assert_int_equal(ob__consumer_visibility_budget_s(t0, t0 - 5000), 43145);
  assert_int_equal(ob__consumer_visibility_budget_s(t0, t0 - 600000), 43200);
  /* 11 h in: 1 h - margin. */
  assert_int_equal(ob__consumer_visibility_budget_s(t0, t0 + 11 * 3600000LL),
                   3600 - 60);
  /* Floors: 100.9 s left is 100 s. */
  assert_int_equal(ob__consumer_visibility_budget_s(t0, t0 + h12 - 100900),
                   100 - 60);
  /* At and past the limit: nothing. */
  assert_true(ob__consumer_visibility_budget_s(t0, t0 + h12 - 60000) <= 0);
  assert_int_equal(ob__consumer_visibility_budget_s(t0, t0 + h12), -1);
  assert_int_equal(ob__consumer_visibility_budget_s(t0, t0 + 3 * h12), -1);
}

static void test_retry_visibility(void** state) {
  (void)state;
  /* Seconds, rounded up: never back before the delay. */
  assert_int_equal(ob__consumer_retry_visibility_s(0, 1000), 0);
  assert_int_equal(ob__consumer_retry_visibility_s(-5, 1000), 0);
  assert_int_equal(ob__consumer_retry_visibility_s(1, 1000), 1);
  assert_int_equal(ob__consumer_retry_visibility_s(1000, 1000), 1);
  assert_int_equal(ob__consumer_retry_visibility_s(1001, 1000), 2);
  assert_int_equal(ob__consumer_retry_visibility_s(1800, 1000), 2);
  /* Capped by the budget. */
  assert_int_equal(ob__consumer_retry_visibility_s(7200000, 1000), 1000);
  assert_int_equal(ob__consumer_retry_visibility_s(5000, 0), 0);
  assert_int_equal(ob__consumer_retry_visibility_s(5000, -1), -1);
}

/* The queue's VisibilityTimeout attribute, as GetQueueAttributes writes it. */
static void test_queue_visibility(void** state) {
  (void)state;
  assert_int_equal(ob__consumer_queue_visibility_s("30"), 30);
  assert_int_equal(ob__consumer_queue_visibility_s("3"), 3);
  assert_int_equal(ob__consumer_queue_visibility_s("43200"), 43200);
  /* A queue's 0 would leave nothing hidden while we hold it: 1. */
  assert_int_equal(ob__consumer_queue_visibility_s("0"), 1);
  assert_int_equal(ob__consumer_queue_visibility_s("43201"), -1);
  assert_int_equal(ob__consumer_queue_visibility_s("99999999999999999999"),
                   -1);
  assert_int_equal(ob__consumer_queue_visibility_s("-1"), -1);
  assert_int_equal(ob__consumer_queue_visibility_s(" 30"), -1);
  assert_int_equal(ob__consumer_queue_visibility_s("30s"), -1);
  assert_int_equal(ob__consumer_queue_visibility_s(""), -1);
  assert_int_equal(ob__consumer_queue_visibility_s(NULL), -1);
}

/* ---- ob_consumer_enable -------------------------------------------------- */

typedef struct env_s {
  const char* names[16];
  const char* values[16];
  size_t n;
} env_t;

static const char* env_get(void* ctx, const char* name) {
  env_t* e = ctx;
  for (size_t i = 0; i < e->n; i++)
    if (strcmp(e->names[i], name) == 0) return e->values[i];
  return NULL;
}

static void env_set(env_t* e, const char* name, const char* value) {
  for (size_t i = 0; i < e->n; i++)
    if (strcmp(e->names[i], name) == 0) {
      e->values[i] = value;
      return;
    }
  e->names[e->n] = name;
  e->values[e->n++] = value;
}

typedef struct fx_s {
  char* dir;
  char* db;
  char* home;
  ob_engine_t* e;
  env_t env;
} fx_t;

static int setup(void** state) {
  fx_t* f = calloc(1, sizeof *f);
  ob_options_t o;
  char err[256];
  f->dir = ts_mkdtemp("consumer-policy");
  f->db = ts_path(f->dir, "t.db");
  f->home = ts_path(f->dir, "home");  /* does not exist: no ~/.aws */
  ob_options_init(&o);
  o.db_path = f->db;
  assert_int_equal(ob_open(&f->e, &o, err, sizeof err), 0);
  env_set(&f->env, "HOME", f->home);
  env_set(&f->env, "AWS_ACCESS_KEY_ID", "AKIDCONSUMERTEST");
  env_set(&f->env, "AWS_SECRET_ACCESS_KEY", SECRET);
  env_set(&f->env, "AWS_REGION", "eu-west-1");
  *state = f;
  return 0;
}

static int teardown(void** state) {
  fx_t* f = *state;
  ob_close(f->e);
  free(f->db);
  free(f->home);
  ts_rmdir(f->dir);
  free(f);
  return 0;
}

static int enable(fx_t* f, const ob_consumer_options_t* o, char* err,
                  size_t n) {
  int rc = ob__consumer_enable_env(f->e, o, env_get, &f->env, err, n);
  assert_null(strstr(err, "CANARY"));
  return rc;
}

static void test_enable_validation(void** state) {
  fx_t* f = *state;
  ob_consumer_options_t o;
  char err[512];

  ob_consumer_options_init(&o);
  assert_int_equal(o.wait_seconds, 20);
  assert_int_equal(o.prefetch, 1);
  assert_int_equal(o.visibility_timeout_s, 0);  /* the queue's */
  assert_int_equal(o.probe.base_ms, 1000);
  assert_int_equal(o.probe.cap_ms, 300000);
  assert_null(o.queue_url);

  assert_int_equal(enable(f, &o, err, sizeof err), OB_EINVAL);
  assert_non_null(strstr(err, "queue_url is required"));
  o.queue_url = "sqs.eu-west-1.amazonaws.com/123/q";
  assert_int_equal(enable(f, &o, err, sizeof err), OB_EINVAL);
  assert_non_null(strstr(err, "http(s)://"));
  o.queue_url = "https://sqs.eu-west-1.amazonaws.com/123/has space";
  assert_int_equal(enable(f, &o, err, sizeof err), OB_EINVAL);
  o.queue_url = "https://sqs.eu-west-1.amazonaws.com/123456789012/payments";

#define BAD(field, value, text)                               \
  do {                                                        \
    ob_consumer_options_t b = o;                              \
    b.field = value;                                          \
    assert_int_equal(enable(f, &b, err, sizeof err), OB_EINVAL); \
    assert_non_null(strstr(err, text));                       \
  } while (0)
  BAD(wait_seconds, 21, "wait_seconds");
  BAD(wait_seconds, -1, "wait_seconds");
  BAD(prefetch, 0, "prefetch");
  BAD(prefetch, 11, "prefetch");
  BAD(visibility_timeout_s, -1, "visibility_timeout_s");
  BAD(visibility_timeout_s, 43201, "visibility_timeout_s");
  BAD(probe.base_ms, 0, "probe.base_ms");
  BAD(probe.cap_ms, 10, "probe.cap_ms");
#undef BAD

  /* AWS configuration problems: OB_EINVAL, named, never the secret. */
  env_set(&f->env, "AWS_REGION", NULL);
  assert_int_equal(enable(f, &o, err, sizeof err), OB_EINVAL);
  assert_true(strlen(err) > 0);
  env_set(&f->env, "AWS_REGION", "eu-west-1");
  env_set(&f->env, "AWS_SECRET_ACCESS_KEY", "has space " SECRET);
  assert_int_equal(enable(f, &o, err, sizeof err), OB_EINVAL);
  assert_non_null(strstr(err, "AWS_SECRET_ACCESS_KEY"));
  env_set(&f->env, "AWS_SECRET_ACCESS_KEY", SECRET);
  env_set(&f->env, "AWS_CA_BUNDLE", "/nonexistent/ca.pem");
  assert_int_equal(enable(f, &o, err, sizeof err), OB_EINVAL);
  assert_true(strlen(err) > 0);
  env_set(&f->env, "AWS_CA_BUNDLE", NULL);
  env_set(&f->env, "AWS_ENDPOINT_URL_SQS", "ftp://sqs.test");
  assert_int_equal(enable(f, &o, err, sizeof err), OB_EINVAL);
  env_set(&f->env, "AWS_ENDPOINT_URL_SQS", NULL);
  assert_int_equal(f->e->ncomponents, 0);

  /* Good: registered once; a second one is refused. */
  assert_int_equal(enable(f, &o, err, sizeof err), 0);
  assert_int_equal(f->e->ncomponents, 1);
  assert_string_equal(f->e->components[0].name, OB__CONSUMER_NAME);
  assert_int_equal(enable(f, &o, err, sizeof err), OB_EEXIST);
  assert_non_null(strstr(err, "already enabled"));
  assert_int_equal(ob_consumer_enable(NULL, &o, err, sizeof err), OB_EINVAL);
}

/* Enabled but never attached: ob_close destroys it without starting it.
** ob_consumer_status before: nothing known yet. */
static void test_enable_then_close(void** state) {
  fx_t* f = *state;
  ob_consumer_options_t o;
  ob_consumer_status_t st;
  char err[512];
  assert_int_equal(ob_consumer_status(f->e, &st), OB_ENOTFOUND);
  assert_int_equal(st.online, -1);
  assert_int_equal(ob_consumer_status(NULL, &st), OB_EINVAL);
  assert_int_equal(ob_consumer_status(f->e, NULL), OB_EINVAL);
  ob_consumer_options_init(&o);
  o.queue_url = "https://sqs.eu-west-1.amazonaws.com/123456789012/q";
  assert_int_equal(enable(f, &o, err, sizeof err), 0);
  assert_int_equal(ob_consumer_status(f->e, &st), 0);
  assert_int_equal(st.online, -1);
  assert_int_equal(st.visibility_timeout_s, 0);
  assert_int_equal(st.visibility_source, OB_CONSUMER_VT_UNKNOWN);
  assert_int_equal(st.counts, -1);
  assert_int_equal(st.not_visible, -1);
  assert_int_equal(st.stalled, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_failure_id),
      cmocka_unit_test(test_visibility_budget),
      cmocka_unit_test(test_retry_visibility),
      cmocka_unit_test(test_queue_visibility),
      cmocka_unit_test_setup_teardown(test_enable_validation, setup, teardown),
      cmocka_unit_test_setup_teardown(test_enable_then_close, setup, teardown),
  };
  return cmocka_run_group_tests_name("consumer_policy", tests, NULL, NULL);
}
