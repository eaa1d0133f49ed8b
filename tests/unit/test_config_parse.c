/* SPDX-License-Identifier: Apache-2.0 */
/* The configuration file's parser (programs/oncebox/config_parse.c): every value
** type, sub-sections, and every refusal with its file:line message. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/include/oncebox.h"
#include "programs/oncebox/config_parse.h"

static const char* const levels[] = {"error", "warn", "info", "debug", NULL};

static const ob_cfg_key_t engine_keys[] = {
    {"batch_size", OB_CFG_INT, 1, 10000, 0, 0, NULL, 0, NULL, 1},
    {"max_body", OB_CFG_SIZE, 1, INT64_MAX, 0, 0, NULL, 0, NULL, 2},
    {"reserve", OB_CFG_SIZE, 0, INT64_MAX, 0, 0, "auto", -1, NULL, 3},
    {"retention", OB_CFG_DURATION, 1, INT64_MAX, 0, 0, NULL, 0, NULL, 4},
    {"level", OB_CFG_ENUM, 0, 0, 0, 0, NULL, 0, levels, 5},
    {"ordered", OB_CFG_BOOL, 0, 0, 0, 0, NULL, 0, NULL, 6},
    {"url", OB_CFG_STRING, 0, 0, 0, 0, NULL, 0, NULL, 7},
};
static const ob_cfg_key_t retry_keys[] = {
    {"max_retries", OB_CFG_INT, 0, 1000, 0, 0, NULL, 0, NULL, 10},
    {"jitter", OB_CFG_NUMBER, 0, 0, 0.0, 1.0, NULL, 0, NULL, 11},
};
static const ob_cfg_section_t sections[] = {
    {"engine", 0, engine_keys, sizeof engine_keys / sizeof engine_keys[0]},
    {"retry", 1, retry_keys, sizeof retry_keys / sizeof retry_keys[0]},
};
static const ob_cfg_schema_t schema = {sections, 2,
                                       "secrets go in the environment"};

/* What the callback saw, one line per value: "LINE [SEC.SUB] ID=VALUE". */
typedef struct seen_s {
  char text[4096];
  size_t n;
  int refuse_id;
} seen_t;

static int record(void* ctx, const ob_cfg_value_t* v, char* why,
                  size_t whylen) {
  seen_t* s = ctx;
  char val[512];
  if (v->key->id == s->refuse_id) {
    snprintf(why, whylen, "refused by the caller");
    return -1;
  }
  switch (v->key->type) {
    case OB_CFG_STRING:
      assert_int_equal(strlen(v->s), v->len);
      snprintf(val, sizeof val, "'%s'", v->s);
      break;
    case OB_CFG_NUMBER: snprintf(val, sizeof val, "%.3f", v->d); break;
    default: snprintf(val, sizeof val, "%lld", (long long)v->i); break;
  }
  s->n += (size_t)snprintf(s->text + s->n, sizeof s->text - s->n,
                           "%d [%s.%s] %d=%s\n", v->line, v->section->name,
                           v->sub, v->key->id, val);
  return 0;
}

static void ok(const char* text, const char* want) {
  seen_t s;
  char err[512] = "x";
  int rc;
  memset(&s, 0, sizeof s);
  rc = ob__cfg_parse("t.conf", text, strlen(text), &schema, record, &s, err,
                     sizeof err);
  if (rc != 0) fail_msg("refused: %s", err);
  assert_string_equal(err, "");
  if (strcmp(s.text, want) != 0)
    fail_msg("got:\n%s\nwant:\n%s", s.text, want);
}

static void bad_n(const char* text, size_t n, const char* want) {
  seen_t s;
  char err[512] = "";
  int rc;
  memset(&s, 0, sizeof s);
  rc = ob__cfg_parse("t.conf", text, n, &schema, record, &s, err, sizeof err);
  if (rc != OB_EINVAL) fail_msg("'%.*s' accepted (%d)", (int)n, text, rc);
  if (strcmp(err, want) != 0)
    fail_msg("'%.*s':\n got \"%s\"\nwant \"%s\"", (int)n, text, err, want);
}
#define BAD(text, want) bad_n(text, sizeof(text) - 1, want)

static void test_values(void** state) {
  (void)state;
  ok("", "");
  ok("# only a comment\n\n   \t\n", "");
  ok("[engine]\nbatch_size = 50\n", "2 [engine.] 1=50\n");
  ok("[engine]\nbatch_size=7 # seven\n", "2 [engine.] 1=7\n");
  ok("  [engine]  # indented\n\tbatch_size =\t10000\n", "2 [engine.] 1=10000\n");
  ok("[engine]\nmax_body = 1M\nreserve = auto\n",
     "2 [engine.] 2=1048576\n3 [engine.] 3=-1\n");
  ok("[engine]\nmax_body = 64KiB\n", "2 [engine.] 2=65536\n");
  ok("[engine]\nmax_body = 2GB\n", "2 [engine.] 2=2147483648\n");
  ok("[engine]\nmax_body = 512\n", "2 [engine.] 2=512\n");
  ok("[engine]\nretention = 30d\n", "2 [engine.] 4=2592000000\n");
  ok("[engine]\nretention = 250ms\n", "2 [engine.] 4=250\n");
  ok("[engine]\nretention = 5m\n", "2 [engine.] 4=300000\n");
  ok("[engine]\nlevel = debug\n", "2 [engine.] 5=3\n");
  ok("[engine]\nordered = yes\n", "2 [engine.] 6=1\n");
  ok("[engine]\nordered = off\n", "2 [engine.] 6=0\n");
  ok("[engine]\nurl = https://sqs.eu-west-1.amazonaws.com/1/q\n",
     "2 [engine.] 7='https://sqs.eu-west-1.amazonaws.com/1/q'\n");
  ok("[engine]\nurl = \"a b # c \\\"q\\\" \\\\ \\t\"  # note\n",
     "2 [engine.] 7='a b # c \"q\" \\ \t'\n");
  ok("[engine]\nurl = \"\"\n", "2 [engine.] 7=''\n");
  ok("[engine]\nurl = \"caf\xC3\xA9\"\n", "2 [engine.] 7='caf\xC3\xA9'\n");
  ok("[retry]\njitter = 0.25\n[retry.orders]\nmax_retries = 0\n"
     "[retry.eu.orders-2]\nmax_retries = 5\n",
     "2 [retry.] 11=0.250\n4 [retry.orders] 10=0\n6 [retry.eu.orders-2] 10=5\n");
  /* CRLF line ends and a byte-order mark. */
  ok("\xEF\xBB\xBF[engine]\r\nbatch_size = 3\r\n", "2 [engine.] 1=3\n");
  /* No final newline. */
  ok("[engine]\nbatch_size = 4", "2 [engine.] 1=4\n");
  /* Comments may hold anything UTF-8. */
  ok("# \xE2\x82\xAC \"quotes\" [x] = y\n", "");
}

static void test_structure_errors(void** state) {
  (void)state;
  BAD("batch_size = 1\n",
      "t.conf:1: key 'batch_size' outside a section (put it under a "
      "[section] header)");
  BAD("[engine]\nbach = 1\n", "t.conf:2: unknown key 'bach' in [engine]");
  BAD("[engine]\n[nope]\n", "t.conf:2: unknown section [nope]");
  BAD("[engine.sub]\n",
      "t.conf:1: section [engine] has no sub-sections ([engine.sub])");
  BAD("[engine]\n[retry]\n[engine]\n",
      "t.conf:3: section [engine] appears twice (first at line 1)");
  BAD("[retry.a]\n[retry.a]\n",
      "t.conf:2: section [retry.a] appears twice (first at line 1)");
  BAD("[engine]\nbatch_size = 1\nbatch_size = 2\n",
      "t.conf:3: key 'batch_size' in [engine] set twice (first at line 2)");
  BAD("[engine\n",
      "t.conf:1: malformed section header (expected [name] or [name.sub], "
      "names of a-z, 0-9 and _)");
  BAD("[Engine]\n",
      "t.conf:1: malformed section header (expected [name] or [name.sub], "
      "names of a-z, 0-9 and _)");
  BAD("[retry.]\n", "t.conf:1: malformed section header: empty name after '.'");
  BAD("[engine] x\n", "t.conf:1: junk after the section header [engine]");
  BAD("[engine]\nbatch_size 1\n", "t.conf:2: expected '=' after 'batch_size'");
  BAD("[engine]\n= 1\n",
      "t.conf:2: expected 'key = value', a [section] or a # comment");
  BAD("[engine]\nbatch_size =\n", "t.conf:2: no value for batch_size in [engine]");
  BAD("[engine]\nbatch_size = # c\n",
      "t.conf:2: no value for batch_size in [engine]");
  BAD("[retry.x]\njitter = 1\njitter = 1\n",
      "t.conf:3: key 'jitter' in [retry.x] set twice (first at line 2)");
}

static void test_value_errors(void** state) {
  (void)state;
  BAD("[engine]\nbatch_size = 0\n",
      "t.conf:2: batch_size in [engine] expects an integer 1..10000, not '0'");
  BAD("[engine]\nbatch_size = 10001\n",
      "t.conf:2: batch_size in [engine] expects an integer 1..10000, not "
      "'10001'");
  BAD("[engine]\nbatch_size = 99999999999999999999\n",
      "t.conf:2: batch_size in [engine] expects an integer 1..10000, not "
      "'99999999999999999999'");
  BAD("[engine]\nbatch_size = 1 2\n",
      "t.conf:2: junk after the value of batch_size in [engine] (quote a "
      "value that holds spaces, '#', '\"' or non-ASCII)");
  BAD("[engine]\nbatch_size = 1#c\n",
      "t.conf:2: junk after the value of batch_size in [engine] (quote a "
      "value that holds spaces, '#', '\"' or non-ASCII)");
  BAD("[engine]\nbatch_size = \"5\"\n",
      "t.conf:2: batch_size in [engine] expects an integer 1..10000, not a "
      "quoted string");
  BAD("[engine]\nretention = 30\n",
      "t.conf:2: retention in [engine] expects a duration "
      "1ms..9223372036854775807ms with a unit (ms, s, m, h, d), not '30'");
  BAD("[engine]\nretention = 3w\n",
      "t.conf:2: retention in [engine] expects a duration "
      "1ms..9223372036854775807ms with a unit (ms, s, m, h, d), not '3w'");
  BAD("[engine]\nretention = 9999999999999999d\n",
      "t.conf:2: retention in [engine] expects a duration "
      "1ms..9223372036854775807ms with a unit (ms, s, m, h, d), not "
      "'9999999999999999d'");
  BAD("[engine]\nreserve = 1T\n",
      "t.conf:2: reserve in [engine] expects a size such as 64M or 1048576 "
      "(K, M, G: KiB, MiB, GiB) or auto, not '1T'");
  BAD("[engine]\nmax_body = 0\n",
      "t.conf:2: max_body in [engine] expects a size of "
      "1..9223372036854775807 bytes, such as 64M (K, M, G: KiB, MiB, GiB), "
      "not '0'");
  BAD("[engine]\nlevel = loud\n",
      "t.conf:2: level in [engine] expects one of error, warn, info, debug, "
      "not 'loud'");
  BAD("[engine]\nordered = 1\n",
      "t.conf:2: ordered in [engine] expects true or false, not '1'");
  BAD("[retry]\njitter = 1.5\n",
      "t.conf:2: jitter in [retry] expects a number 0..1, not '1.5'");
  BAD("[retry]\njitter = .5\n",
      "t.conf:2: jitter in [retry] expects a number 0..1, not '.5'");
  BAD("[retry]\njitter = 1e0\n",
      "t.conf:2: jitter in [retry] expects a number 0..1, not '1e0'");
  BAD("[engine]\nurl = \"open\n",
      "t.conf:2: the value of url in [engine]: no closing '\"'");
  BAD("[engine]\nurl = \"a\\x\"\n",
      "t.conf:2: the value of url in [engine]: unknown escape '\\x' (\\\" "
      "\\\\ \\n \\t only)");
  BAD("[engine]\nurl = \"a\" b\n",
      "t.conf:2: junk after the value of url in [engine] (quote a value that "
      "holds spaces, '#', '\"' or non-ASCII)");
  BAD("[engine]\nurl = caf\xC3\xA9\n",
      "t.conf:2: junk after the value of url in [engine] (quote a value that "
      "holds spaces, '#', '\"' or non-ASCII)");
  /* A string value is never quoted back: it may be a secret. */
  BAD("[engine]\nurl = \"SECRET-CANARY\" x\n",
      "t.conf:2: junk after the value of url in [engine] (quote a value that "
      "holds spaces, '#', '\"' or non-ASCII)");
}

static void test_bytes(void** state) {
  char big[OB_CFG_MAX_LINE + 20];
  (void)state;
  bad_n("[engine]\nurl = a\0b\n", 18, "t.conf:2: a NUL byte at column 8");
  BAD("[engine]\n# \x01\n", "t.conf:2: control character 0x01 at column 3");
  BAD("[engine]\nurl = a\rb\n", "t.conf:2: control character 0x0d at column 8");
  BAD("# \xC3\n", "t.conf:1: invalid UTF-8 at column 3");
  BAD("# \xC0\x80\n", "t.conf:1: invalid UTF-8 at column 3");       /* overlong */
  BAD("# \xED\xA0\x80\n", "t.conf:1: invalid UTF-8 at column 3");   /* surrogate */
  BAD("# \xF4\x90\x80\x80\n", "t.conf:1: invalid UTF-8 at column 3");
  memset(big, '#', sizeof big);
  bad_n(big, OB_CFG_MAX_LINE + 1, "t.conf:1: line longer than 4096 bytes");
  big[OB_CFG_MAX_LINE] = '\n';
  ok("", "");
  {
    seen_t s;
    char err[128];
    memset(&s, 0, sizeof s);
    assert_int_equal(ob__cfg_parse("t.conf", big, OB_CFG_MAX_LINE + 1, &schema,
                                   record, &s, err, sizeof err),
                     0);
  }
}

static void test_secrets(void** state) {
  (void)state;
  BAD("[engine]\nauthorization = \"Bearer CANARY\"\n",
      "t.conf:2: 'authorization' in [engine] looks like a secret: the config "
      "file may not hold secrets; secrets go in the environment");
  BAD("[retry.q]\naws_secret_access_key = CANARY\n",
      "t.conf:2: 'aws_secret_access_key' in [retry.q] looks like a secret: "
      "the config file may not hold secrets; secrets go in the environment");
  assert_int_equal(ob__cfg_looks_secret("api_token", 9), 1);
  assert_int_equal(ob__cfg_looks_secret("Password", 8), 1);
  assert_int_equal(ob__cfg_looks_secret("key_retention", 13), 0);
  assert_int_equal(ob__cfg_looks_secret("batch_size", 10), 0);
}

static void test_callback_and_buffers(void** state) {
  seen_t s;
  char err[512], tiny[6];
  const char* text = "[engine]\nbatch_size = 2\nordered = true\n";
  (void)state;
  memset(&s, 0, sizeof s);
  s.refuse_id = 6;
  assert_int_equal(ob__cfg_parse("/etc/oncebox/oncebox.conf", text,
                                 strlen(text), &schema, record, &s, err,
                                 sizeof err),
                   OB_EINVAL);
  assert_string_equal(err, "/etc/oncebox/oncebox.conf:3: ordered in [engine]: "
                           "refused by the caller");
  /* The verdict does not depend on the error buffer. */
  memset(&s, 0, sizeof s);
  assert_int_equal(ob__cfg_parse("t", "[x]", 3, &schema, NULL, NULL, NULL, 0),
                   OB_EINVAL);
  assert_int_equal(ob__cfg_parse("t", "[x]", 3, &schema, NULL, NULL, tiny,
                                 sizeof tiny),
                   OB_EINVAL);
  assert_string_equal(tiny, "t:1: ");
  /* No callback: a validation pass. */
  assert_int_equal(ob__cfg_parse("t", text, strlen(text), &schema, NULL, NULL,
                                 err, sizeof err),
                   0);
}

static void test_parse_value(void** state) {
  ob_cfg_value_t v;
  char why[256];
  (void)state;
  /* A flag's duration in its own unit (seconds), and a unit given. */
  assert_int_equal(ob__cfg_parse_value(&engine_keys[3], "30", 2, 1000, &v, why,
                                       sizeof why), 0);
  assert_int_equal(v.i, 30000);
  assert_int_equal(ob__cfg_parse_value(&engine_keys[3], "2m", 2, 1000, &v, why,
                                       sizeof why), 0);
  assert_int_equal(v.i, 120000);
  assert_int_equal(ob__cfg_parse_value(&engine_keys[3], "30", 2, 0, &v, why,
                                       sizeof why), OB_EINVAL);
  assert_int_equal(ob__cfg_parse_value(&engine_keys[6], "a b", 3, 0, &v, why,
                                       sizeof why), 0);
  assert_int_equal(v.len, 3);
}

static void test_many_sections(void** state) {
  char text[OB_CFG_MAX_SECTIONS * 16 + 64];
  size_t n = 0;
  seen_t s;
  char err[256];
  int rc;
  (void)state;
  for (int i = 0; i <= OB_CFG_MAX_SECTIONS; i++)
    n += (size_t)snprintf(text + n, sizeof text - n, "[retry.q%d]\n", i);
  memset(&s, 0, sizeof s);
  rc = ob__cfg_parse("t", text, n, &schema, record, &s, err, sizeof err);
  assert_int_equal(rc, OB_EINVAL);
  assert_string_equal(err, "t:257: more than 256 sections");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_values),
      cmocka_unit_test(test_structure_errors),
      cmocka_unit_test(test_value_errors),
      cmocka_unit_test(test_bytes),
      cmocka_unit_test(test_secrets),
      cmocka_unit_test(test_callback_and_buffers),
      cmocka_unit_test(test_parse_value),
      cmocka_unit_test(test_many_sections),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
