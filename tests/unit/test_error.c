/* SPDX-License-Identifier: Apache-2.0 */
/* ob_strerror, ob_err_name, ob_version, ob_uuid_valid, policy defaults. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "core/util/net_error.h"
#include "core/util/retry.h"
#include "oncebox.h"

static void test_every_code_has_text_and_name(void** state) {
  (void)state;
#define CHECK(name, code, text)                                  \
  assert_int_equal(OB_##name, code);                             \
  assert_string_equal(ob_strerror(code), text);                  \
  assert_string_equal(ob_err_name(code), "OB_" #name);
  OB_ERRNO_MAP(CHECK)
#undef CHECK
}

static void test_success(void** state) {
  (void)state;
  assert_string_equal(ob_strerror(OB_OK), "success");
  assert_string_equal(ob_err_name(OB_OK), "OB_OK");
}

/* One past the most negative code in the map. */
#define COUNT(name, code, text) +1
enum { N_CODES = 0 OB_ERRNO_MAP(COUNT) };
#undef COUNT

static void test_unknown_codes(void** state) {
  static const int bad[] = {1, 2, -(N_CODES + 1), -63, OB__ERR_LAST, -65,
                            -1000, INT_MIN, INT_MAX};
  size_t i;
  (void)state;
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_string_equal(ob_strerror(bad[i]), "unknown error");
    assert_string_equal(ob_err_name(bad[i]), "OB_UNKNOWN");
  }
}

/* Texts and names are distinct (a log line names one code) and static (the
** same pointer each time: nothing is allocated). */
static void test_distinct_and_static(void** state) {
#define CODE(name, code, text) code,
  static const int codes[] = {OB_OK, OB_ERRNO_MAP(CODE)};
#undef CODE
  size_t n = sizeof codes / sizeof codes[0], a, b;
  (void)state;
  assert_int_equal(n, N_CODES + 1);
  /* Codes are dense: -1 .. -N_CODES, so a new one is appended, never
  ** renumbered (logs compare across a fleet). */
  for (a = 1; a < n; a++) assert_int_equal(codes[a], -(int)a);
  for (a = 0; a < n; a++) {
    assert_ptr_equal(ob_strerror(codes[a]), ob_strerror(codes[a]));
    assert_ptr_equal(ob_err_name(codes[a]), ob_err_name(codes[a]));
    assert_string_not_equal(ob_strerror(codes[a]), "unknown error");
    for (b = a + 1; b < n; b++) {
      assert_string_not_equal(ob_strerror(codes[a]), ob_strerror(codes[b]));
      assert_string_not_equal(ob_err_name(codes[a]), ob_err_name(codes[b]));
    }
  }
}

static void test_version(void** state) {
  char buf[32];
  (void)state;
  snprintf(buf, sizeof buf, "%d.%d.%d", OB_VERSION_MAJOR, OB_VERSION_MINOR,
           OB_VERSION_PATCH);
  assert_string_equal(ob_version(), OB_VERSION_STRING);
  assert_string_equal(ob_version(), buf);
}

static void test_uuid_valid(void** state) {
  (void)state;
  assert_int_equal(ob_uuid_valid("0190f3a4-7b2c-7def-8123-456789abcdef"), 1);
  assert_int_equal(ob_uuid_valid("0190F3A4-7B2C-7DEF-8123-456789ABCDEF"), 1);
  assert_int_equal(ob_uuid_valid("0190f3a4-7b2c-7def-8123-456789abcde"), 0);
  assert_int_equal(ob_uuid_valid("0190f3a47b2c7def8123456789abcdef"), 0);
  assert_int_equal(ob_uuid_valid(""), 0);
  assert_int_equal(ob_uuid_valid(NULL), 0);
}

static void test_policy_defaults(void** state) {
  ob_retry_policy_t p;
  (void)state;
  memset(&p, 0xA5, sizeof p);
  ob_retry_policy_init(&p);
  assert_int_equal(p.max_retries, 3);
  assert_int_equal(p.delay_ms, 1000);
  assert_true(p.multiplier == 2.0);
  assert_int_equal(p.max_delay_ms, 0);
  assert_true(p.jitter == 0.1);
  assert_int_equal(ob__retry_policy_check(&p), 0);
  ob_retry_policy_init(NULL); /* tolerated: must not crash */
}


/* Every detailed transport code maps to a public code that ob_strerror
** names, and the public map is what any public function can return. */
static void test_net_codes_map_to_public(void** state) {
#define NET(name, code, text) code,
  static const int net[] = {OB__HTTP_ERRNO_MAP(NET) OB__SQS_ERRNO_MAP(NET)};
#undef NET
  (void)state;
  for (size_t i = 0; i < sizeof net / sizeof net[0]; i++) {
    int p = ob__err_public(net[i]);
    assert_true(p < 0 && p >= -N_CODES);
    assert_string_not_equal(ob_strerror(p), "unknown error");
    /* The detailed name stays available for logs. */
    assert_string_not_equal(ob__net_err_name(net[i]), "OB_UNKNOWN");
    assert_string_not_equal(ob__net_strerror(net[i]), "unknown error");
  }
  for (int c = 0; c >= -N_CODES; c--) assert_int_equal(ob__err_public(c), c);
  assert_int_equal(ob__err_public(-99), OB_EINVAL);
  assert_int_equal(ob__err_public(OB__HTTP_E_TLS_EXPIRED), OB_ETLS);
  assert_int_equal(ob__err_public(OB__HTTP_E_EOF), OB_ENET);
  assert_int_equal(ob__err_public(OB__HTTP_E_DEADLINE), OB_ETIMEDOUT);
  assert_int_equal(ob__err_public(OB__HTTP_E_BAD_CHUNK), OB_EPROTO);
  assert_int_equal(ob__err_public(OB__SQS_E_AUTH), OB_EAUTH);
  assert_int_equal(ob__err_public(OB__SQS_E_THROTTLED), OB_EUNAVAIL);
  assert_int_equal(ob__err_public(OB__SQS_E_SERVICE), OB_EREMOTE);
  assert_int_equal(ob__err_public(OB__SQS_E_NO_QUEUE), OB_ENOTFOUND);
  assert_int_equal(ob__err_public(OB__SQS_E_NOT_JSON_API), OB_EPROTO);
}

/* One classification for every worker: the transient list is exactly the
** one the SQS client, the relay and the consumer each kept before, the
** configuration list the union of the relay's and the executor's. */
static void test_net_classification(void** state) {
  static const int transient[] = {
      OB__SQS_E_THROTTLED, OB__SQS_E_UNAVAILABLE, OB__HTTP_E_CONNECT_TIMEOUT,
      OB__HTTP_E_DEADLINE, OB__HTTP_E_CONNECT, OB__HTTP_E_DNS,
      OB__HTTP_E_RESET, OB__HTTP_E_EOF, OB__HTTP_E_STALE, OB__HTTP_E_IO,
      OB__HTTP_E_TLS_HANDSHAKE_EOF, OB_ENET, OB_ETIMEDOUT, OB_EUNAVAIL};
  static const int config[] = {
      OB__SQS_E_NO_QUEUE, OB__HTTP_E_TLS_HOSTNAME, OB__HTTP_E_TLS_EXPIRED,
      OB__HTTP_E_TLS_FUTURE, OB__HTTP_E_TLS_UNTRUSTED, OB__HTTP_E_TLS_CERT,
      OB__HTTP_E_TLS_PROTOCOL, OB__HTTP_E_TLS_NO_HOSTNAME, OB__HTTP_E_TLS_CA,
      OB__HTTP_E_URL, OB__HTTP_E_PLAIN_HTTP, OB_ETLS,
      OB__SQS_E_NOT_JSON_API};
  static const int peer[] = {OB__SQS_E_SERVICE, OB__SQS_E_CHECKSUM,
                             OB__SQS_E_BAD_RESPONSE, OB__HTTP_E_TLS,
                             OB__HTTP_E_BAD_RESPONSE, OB__HTTP_E_BODY_TOO_BIG,
                             OB_EPROTO, OB_EREMOTE};
  (void)state;
  assert_int_equal(ob__net_classify(0), OB__NET_OK);
  for (size_t i = 0; i < sizeof transient / sizeof transient[0]; i++)
    assert_int_equal(ob__net_classify(transient[i]), OB__NET_TRANSIENT);
  for (size_t i = 0; i < sizeof config / sizeof config[0]; i++)
    assert_int_equal(ob__net_classify(config[i]), OB__NET_CONFIG);
  for (size_t i = 0; i < sizeof peer / sizeof peer[0]; i++)
    assert_int_equal(ob__net_classify(peer[i]), OB__NET_PEER);
  assert_int_equal(ob__net_classify(OB__SQS_E_AUTH), OB__NET_AUTH);
  assert_int_equal(ob__net_classify(OB_EAUTH), OB__NET_AUTH);
  assert_int_equal(ob__net_classify(OB__HTTP_E_CANCELED), OB__NET_CANCELED);
  assert_int_equal(ob__net_classify(OB__HTTP_E_CLOSING), OB__NET_CANCELED);
  assert_int_equal(ob__net_classify(OB_ECANCELED), OB__NET_CANCELED);
  assert_int_equal(ob__net_classify(OB_ENOMEM), OB__NET_LOCAL);
  assert_string_equal(ob__net_class_name(OB__NET_CONFIG), "configuration");
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_every_code_has_text_and_name),
    cmocka_unit_test(test_success),
    cmocka_unit_test(test_unknown_codes),
    cmocka_unit_test(test_net_codes_map_to_public),
    cmocka_unit_test(test_net_classification),
    cmocka_unit_test(test_distinct_and_static),
    cmocka_unit_test(test_version),
    cmocka_unit_test(test_uuid_valid),
    cmocka_unit_test(test_policy_defaults),
  };
  return cmocka_run_group_tests_name("error", tests, NULL, NULL);
}
