/* SPDX-License-Identifier: Apache-2.0 */
/*
** `oncebox sqs send | receive | attributes` end to end: the real binary
** ($OB_BINARY_DIR/oncebox) configured only through the AWS environment
** variables, against fauxqs behind the SigV4-verifying TLS terminator
** (sqs_server.mjs), with --resolve sqs.test:127.0.0.1.
**
** Canary: the secret key and session token are canary strings; every byte
** the program writes (stdout and stderr of every run, successes and
** failures, --json or not, configuration errors from a malformed
** credentials file holding the secret) is checked not to contain them.
**
** Skips with a message when node or tests/interop/node_modules is missing.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "tests/integration/sqs/sqs_test_util.h"
#include "tests/support/testsupport.h"

#define CANARY_TOKEN "CANARYtoken/session+0123456789abcdefXYZ=="
#define CANARY_WRONG "CANARYwrong/secret+9876543210fedcbaXYZ"

static sq_server_t g_srv;
static const char* g_skip;
static char* g_home;      /* an empty HOME: no ~/.aws */
static char g_oncebox[4200];
static char* g_q;         /* standard queue */
static char* g_fifo;      /* FIFO queue */
static int g_runs;

typedef struct out_s {
  int rc;
  char* out;
  char* err;
} out_t;

static char* slurp(const char* path) {
  FILE* f = fopen(path, "rb");
  char* b;
  long n;
  if (f == NULL) return strdup("");
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  b = calloc(1, (size_t)n + 1);
  if (b != NULL && n > 0 && fread(b, 1, (size_t)n, f) != (size_t)n) b[0] = '\0';
  fclose(f);
  return b;
}

static void assert_no_secret(const char* what, const char* s) {
  static const char* const secrets[] = {SQ_SECRET, CANARY_TOKEN, CANARY_WRONG,
                                        "CANARY"};
  for (size_t i = 0; i < sizeof secrets / sizeof secrets[0]; i++)
    if (strstr(s, secrets[i]) != NULL) {
      fprintf(stderr, "a secret leaked into %s:\n%s\n", what, s);
      fail();
    }
}

/* Run `oncebox sqs ARGS` with the environment as it is; captures both
** streams and checks them for secrets. */
static out_t run(const char* args) {
  char cmd[16384], o[4300], e[4300];
  out_t r;
  int st;
  snprintf(o, sizeof o, "%s/run%d.out", g_srv.dir, g_runs);
  snprintf(e, sizeof e, "%s/run%d.err", g_srv.dir, g_runs);
  g_runs++;
  snprintf(cmd, sizeof cmd, "$OB_EMULATOR '%s' sqs %s --resolve " SQ_HOST ":127.0.0.1 "
           "</dev/null >'%s' 2>'%s'", g_oncebox, args, o, e);
  st = system(cmd);
  r.rc = (st != -1 && WIFEXITED(st)) ? WEXITSTATUS(st) : -1;
  r.out = slurp(o);
  r.err = slurp(e);
  assert_no_secret("stdout", r.out);
  assert_no_secret("stderr", r.err);
  return r;
}

/* Run `oncebox ARGS` (any command) the same way. */
static out_t run_top(const char* args) {
  char cmd[16384], o[4300], e[4300];
  out_t r;
  int st;
  snprintf(o, sizeof o, "%s/run%d.out", g_srv.dir, g_runs);
  snprintf(e, sizeof e, "%s/run%d.err", g_srv.dir, g_runs);
  g_runs++;
  snprintf(cmd, sizeof cmd, "$OB_EMULATOR '%s' %s </dev/null >'%s' 2>'%s'", g_oncebox, args,
           o, e);
  st = system(cmd);
  r.rc = (st != -1 && WIFEXITED(st)) ? WEXITSTATUS(st) : -1;
  r.out = slurp(o);
  r.err = slurp(e);
  assert_no_secret("stdout", r.out);
  assert_no_secret("stderr", r.err);
  return r;
}

static int count_str(const char* s, const char* needle) {
  int n = 0;
  for (const char* p = strstr(s, needle); p != NULL; p = strstr(p + 1, needle))
    n++;
  return n;
}

static void out_free(out_t* r) {
  free(r->out);
  free(r->err);
}

static void expect(out_t* r, int rc, const char* in_out, const char* in_err) {
  if (r->rc != rc || (in_out && strstr(r->out, in_out) == NULL) ||
      (in_err && strstr(r->err, in_err) == NULL)) {
    fprintf(stderr, "rc %d (want %d)\nstdout:\n%s\nstderr:\n%s\nwant '%s' / '%s'\n",
            r->rc, rc, r->out, r->err, in_out ? in_out : "",
            in_err ? in_err : "");
    fail();
  }
}

static void set_env(void) {
  setenv("HOME", g_home, 1);
  setenv("AWS_ACCESS_KEY_ID", SQ_AKID, 1);
  setenv("AWS_SECRET_ACCESS_KEY", SQ_SECRET, 1);
  setenv("AWS_SESSION_TOKEN", CANARY_TOKEN, 1);
  setenv("AWS_REGION", SQ_REGION, 1);
  setenv("AWS_ENDPOINT_URL_SQS", g_srv.endpoint, 1);
  setenv("AWS_CA_BUNDLE", g_srv.ca_file, 1);
  unsetenv("AWS_PROFILE");
  unsetenv("AWS_DEFAULT_REGION");
  unsetenv("AWS_ENDPOINT_URL");
  unsetenv("AWS_SHARED_CREDENTIALS_FILE");
  unsetenv("AWS_CONFIG_FILE");
  unsetenv("AWS_MAX_ATTEMPTS");
  unsetenv("ONCEBOX_SQS_ALLOW_HTTP");
}

static int group_setup(void** state) {
  const char* bin = getenv("OB_BINARY_DIR");
  (void)state;
  g_skip = sq_skip_reason();
  if (g_skip != NULL) {
    printf("%s\n", g_skip);
    return 0;
  }
  snprintf(g_oncebox, sizeof g_oncebox, "%s/oncebox", bin ? bin : ".");
  if (sq_server_start(&g_srv, "sqs-cli", NULL) != 0) return -1;
  g_home = ts_mkdtemp("sqs-cli-home");
  g_q = sq_create_queue(&g_srv, "cli-std", NULL);
  g_fifo = sq_create_queue(&g_srv, "cli.fifo", "{\"FifoQueue\":\"true\"}");
  if (g_q == NULL || g_fifo == NULL) return -1;
  return 0;
}

static int group_teardown(void** state) {
  (void)state;
  if (g_skip != NULL) return 0;
  free(g_q);
  free(g_fifo);
  ts_rmdir(g_home);
  sq_server_stop(&g_srv);
  return 0;
}

static int setup(void** state) {
  (void)state;
  if (g_skip == NULL) set_env();
  return 0;
}

#define SKIP_IF_NEEDED \
  do {                 \
    (void)state;       \
    if (g_skip) {      \
      skip();          \
      return;          \
    }                  \
  } while (0)

/* ---- tests ------------------------------------------------------------------ */

static void test_help_and_usage(void** state) {
  char args[1024];
  out_t r;
  SKIP_IF_NEEDED;
  r = run("--help");
  expect(&r, 0, "usage: oncebox sqs send", NULL);
  assert_non_null(strstr(r.out, "oncebox sqs receive"));
  assert_non_null(strstr(r.out, "oncebox sqs attributes"));
  out_free(&r);
  r = run("send --help");
  expect(&r, 0, "--group-id", NULL);
  out_free(&r);
  r = run("");
  expect(&r, 2, NULL, "usage:");
  out_free(&r);
  r = run("frobnicate --queue-url x");
  expect(&r, 2, NULL, "unknown subcommand");
  out_free(&r);
  snprintf(args, sizeof args, "send --queue-url '%s'", g_q);
  r = run(args);
  expect(&r, 2, NULL, "--body is required");
  out_free(&r);
  r = run("receive");
  expect(&r, 2, NULL, "--queue-url is required");
  out_free(&r);
  snprintf(args, sizeof args, "receive --queue-url '%s' --max 11", g_q);
  r = run(args);
  expect(&r, 2, NULL, "--max wants an integer from 1 to 10");
  out_free(&r);
  snprintf(args, sizeof args, "attributes --queue-url '%s' --body x", g_q);
  r = run(args);
  expect(&r, 2, NULL, "unexpected argument '--body'");
  out_free(&r);
  snprintf(args, sizeof args, "send --queue-url '%s' --body x --attr novalue", g_q);
  r = run(args);
  expect(&r, 2, NULL, "--attr wants NAME=VALUE");
  out_free(&r);
  /* The top-level help lists the command. */
  {
    char cmd[4400];
    int st;
    snprintf(cmd, sizeof cmd, "$OB_EMULATOR '%s' --help | grep -q 'talk to Amazon SQS'",
             g_oncebox);
    st = system(cmd);
    assert_int_equal(st, 0);
  }
}

static void test_send_receive_delete(void** state) {
  char args[2048];
  out_t r;
  cJSON* j;
  cJSON* msgs;
  cJSON* m;
  SKIP_IF_NEEDED;
  snprintf(args, sizeof args,
           "send --queue-url '%s' --body 'first message' --attr traceId=t-1 "
           "--attr amount:Number=12.5",
           g_q);
  r = run(args);
  expect(&r, 0, "sent ", NULL);
  out_free(&r);
  snprintf(args, sizeof args, "send --queue-url '%s' --body second --json", g_q);
  r = run(args);
  expect(&r, 0, "\"MessageId\"", NULL);
  j = cJSON_Parse(r.out);
  assert_non_null(j);
  assert_true(cJSON_IsString(cJSON_GetObjectItem(j, "MD5OfMessageBody")));
  cJSON_Delete(j);
  out_free(&r);

  snprintf(args, sizeof args, "attributes --queue-url '%s' --json", g_q);
  r = run(args);
  expect(&r, 0, "\"QueueArn\"", NULL);
  j = cJSON_Parse(r.out);
  assert_non_null(j);
  assert_string_equal(
      cJSON_GetObjectItem(cJSON_GetObjectItem(j, "Attributes"),
                          "ApproximateNumberOfMessages")->valuestring,
      "2");
  cJSON_Delete(j);
  out_free(&r);
  snprintf(args, sizeof args, "attributes --queue-url '%s'", g_q);
  r = run(args);
  expect(&r, 0, "VisibilityTimeout", NULL);
  out_free(&r);

  snprintf(args, sizeof args,
           "receive --queue-url '%s' --max 10 --wait 1 --delete --json", g_q);
  r = run(args);
  expect(&r, 0, "\"Messages\"", NULL);
  j = cJSON_Parse(r.out);
  assert_non_null(j);
  msgs = cJSON_GetObjectItem(j, "Messages");
  assert_int_equal(cJSON_GetArraySize(msgs), 2);
  assert_int_equal(cJSON_GetObjectItem(j, "Deleted")->valueint, 2);
  m = NULL;
  cJSON_ArrayForEach(m, msgs) {
    if (strcmp(cJSON_GetObjectItem(m, "Body")->valuestring, "first message") == 0)
      break;
  }
  assert_non_null(m);
  {
    cJSON* ma = cJSON_GetObjectItem(m, "MessageAttributes");
    cJSON* amount = cJSON_GetObjectItem(ma, "amount");
    assert_string_equal(cJSON_GetObjectItem(amount, "DataType")->valuestring,
                        "Number");
    assert_string_equal(cJSON_GetObjectItem(amount, "StringValue")->valuestring,
                        "12.5");
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(ma, "traceId"), "StringValue")
            ->valuestring,
        "t-1");
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(m, "Attributes"),
                            "ApproximateReceiveCount")->valuestring,
        "1");
  }
  cJSON_Delete(j);
  out_free(&r);
  snprintf(args, sizeof args, "receive --queue-url '%s' --wait 0", g_q);
  r = run(args);
  expect(&r, 0, "no messages", NULL);
  out_free(&r);

  /* Text output and --delete without --json. */
  snprintf(args, sizeof args, "send --queue-url '%s' --body 'text mode'", g_q);
  r = run(args);
  expect(&r, 0, "sent ", NULL);
  out_free(&r);
  snprintf(args, sizeof args, "receive --queue-url '%s' --wait 1 --delete", g_q);
  r = run(args);
  expect(&r, 0, "body:      text mode", NULL);
  assert_non_null(strstr(r.out, "deleted 1"));
  out_free(&r);
}

/* At debug level `oncebox sqs` says which TLS the endpoint spoke (issue 42):
** 1.3 where the build's mbedTLS has it, else 1.2; never a secret. */
static void test_tls_version_logged(void** state) {
  char args[2048];
  out_t r;
  SKIP_IF_NEEDED;
  snprintf(args, sizeof args,
           "--log-level debug sqs attributes --queue-url '%s' --resolve "
           SQ_HOST ":127.0.0.1", g_q);
  r = run_top(args);
  expect(&r, 0, "VisibilityTimeout", "sqs: connected over TLSv1.");
  assert_true(strstr(r.err, "TLSv1.3, TLS1-3-") != NULL ||
              strstr(r.err, "TLSv1.2, TLS-ECDHE-") != NULL);
  out_free(&r);
  /* Not at the default level. */
  snprintf(args, sizeof args, "sqs attributes --queue-url '%s' --resolve "
           SQ_HOST ":127.0.0.1", g_q);
  r = run_top(args);
  expect(&r, 0, "VisibilityTimeout", NULL);
  assert_null(strstr(r.err, "connected over"));
  out_free(&r);
}

static void test_fifo(void** state) {
  char args[2048];
  out_t r;
  SKIP_IF_NEEDED;
  snprintf(args, sizeof args,
           "send --queue-url '%s' --body 'fifo body' --group-id g1 "
           "--dedup-id d1 --json",
           g_fifo);
  r = run(args);
  expect(&r, 0, "\"SequenceNumber\"", NULL);
  out_free(&r);
  snprintf(args, sizeof args, "receive --queue-url '%s' --wait 1 --delete",
           g_fifo);
  r = run(args);
  expect(&r, 0, "group:     g1", NULL);
  assert_non_null(strstr(r.out, "dedup id:  d1"));
  out_free(&r);
  /* Without a group id: the SQS error code and message, exit 1. */
  snprintf(args, sizeof args, "send --queue-url '%s' --body x --dedup-id d2",
           g_fifo);
  r = run(args);
  expect(&r, 1, NULL, "MissingParameter");
  assert_non_null(strstr(r.err, "MessageGroupId"));
  out_free(&r);
}

static void test_errors(void** state) {
  char args[2048];
  char url[1024];
  out_t r;
  cJSON* j;
  int bad0;
  SKIP_IF_NEEDED;
  snprintf(url, sizeof url, "%.*s/does-not-exist",
           (int)(strrchr(g_q, '/') - g_q), g_q);
  snprintf(args, sizeof args, "send --queue-url '%s' --body x", url);
  r = run(args);
  expect(&r, 1, NULL, "QueueDoesNotExist: The specified queue does not exist.");
  assert_non_null(strstr(r.err, "AWS.SimpleQueueService.NonExistentQueue"));
  out_free(&r);
  snprintf(args, sizeof args, "attributes --queue-url '%s' --json", url);
  r = run(args);
  expect(&r, 1, "\"error\"", NULL);
  j = cJSON_Parse(r.out);
  assert_non_null(j);
  assert_string_equal(
      cJSON_GetObjectItem(cJSON_GetObjectItem(j, "error"), "code")->valuestring,
      "QueueDoesNotExist");
  cJSON_Delete(j);
  out_free(&r);

  /* Wrong secret: 403 SignatureDoesNotMatch, one request, no retry. */
  bad0 = sq_count(&g_srv, "REQ AmazonSQS.GetQueueAttributes 403 bad");
  setenv("AWS_SECRET_ACCESS_KEY", CANARY_WRONG, 1);
  snprintf(args, sizeof args, "attributes --queue-url '%s'", g_q);
  r = run(args);
  expect(&r, 1, NULL, "SignatureDoesNotMatch");
  assert_null(strstr(r.err, "attempts"));
  out_free(&r);
  assert_int_equal(sq_count(&g_srv, "REQ AmazonSQS.GetQueueAttributes 403 bad"),
                   bad0 + 1);
  setenv("AWS_SECRET_ACCESS_KEY", SQ_SECRET, 1);

  /* 503 twice: retried, succeeds; three times: gives up, exit 1. */
  sq_fault(&g_srv, "{\"count\":2,\"status\":503}");
  snprintf(args, sizeof args, "attributes --queue-url '%s'", g_q);
  r = run(args);
  expect(&r, 0, "QueueArn", NULL);
  out_free(&r);
  sq_fault(&g_srv, "{\"count\":3,\"status\":503}");
  r = run(args);
  expect(&r, 1, NULL, "ServiceUnavailable");
  assert_non_null(strstr(r.err, "gave up after 3 attempts"));
  out_free(&r);
  sq_fault(&g_srv, "{\"count\":3,\"status\":400,\"code\":\"ThrottlingException\"}");
  setenv("AWS_MAX_ATTEMPTS", "1", 1);   /* the AWS knob: no retry at all */
  r = run(args);
  expect(&r, 1, NULL, "ThrottlingException");
  out_free(&r);
  unsetenv("AWS_MAX_ATTEMPTS");
  sq_clear(&g_srv);

  /* Plain HTTP to a TLS port is refused unless asked for... and asking for
  ** it (http://) against a TLS server fails as a transport error. */
  setenv("AWS_ENDPOINT_URL_SQS", "ftp://sqs.test", 1);
  r = run(args);
  expect(&r, 1, NULL, "AWS_ENDPOINT_URL_SQS is not a valid endpoint");
  out_free(&r);
  setenv("AWS_ENDPOINT_URL_SQS", g_srv.endpoint, 1);
}

static void test_config_errors(void** state) {
  char args[2048];
  char path[4400];
  FILE* f;
  out_t r;
  SKIP_IF_NEEDED;
  snprintf(args, sizeof args, "attributes --queue-url '%s'", g_q);
  unsetenv("AWS_ACCESS_KEY_ID");
  unsetenv("AWS_SECRET_ACCESS_KEY");
  unsetenv("AWS_SESSION_TOKEN");
  r = run(args);
  expect(&r, 1, NULL, "no AWS credentials");
  out_free(&r);

  /* A malformed credentials file holding the secret: file and line, never
  ** the value. */
  snprintf(path, sizeof path, "%s/.aws", g_home);
  mkdir(path, 0700);
  snprintf(path, sizeof path, "%s/.aws/credentials", g_home);
  f = fopen(path, "w");
  assert_non_null(f);
  fprintf(f, "[default]\naws_access_key_id = %s\naws_secret_access_key %s\n",
          SQ_AKID, SQ_SECRET);
  fclose(f);
  r = run(args);
  expect(&r, 1, NULL, "credentials:3: expected 'key = value'");
  out_free(&r);

  /* A good profile file works (and the secret still never shows). */
  f = fopen(path, "w");
  assert_non_null(f);
  fprintf(f, "[ops]\naws_access_key_id = %s\naws_secret_access_key = %s\n"
             "aws_session_token = %s\n",
          SQ_AKID, SQ_SECRET, CANARY_TOKEN);
  fclose(f);
  snprintf(args, sizeof args, "attributes --queue-url '%s' --profile ops", g_q);
  r = run(args);
  expect(&r, 0, "QueueArn", NULL);
  out_free(&r);
  snprintf(args, sizeof args, "attributes --queue-url '%s' --profile nope", g_q);
  r = run(args);
  expect(&r, 1, NULL, "profile 'nope' not found");
  out_free(&r);
  remove(path);
  set_env();
}

/* ---- plain HTTP (docs/security.md, "Plain HTTP") ---------------------------
** fauxqs answers plain HTTP itself on 127.0.0.1 (behind the TLS terminator
** the other tests use). An http:// endpoint from AWS_ENDPOINT_URL_SQS,
** AWS_ENDPOINT_URL or endpoint_url in ~/.aws/config is refused with exit 2
** and a message naming it, unless --sqs-allow-http or
** ONCEBOX_SQS_ALLOW_HTTP=1, which log one warning. */

/* "SOURCE is http://127.0.0.1:PORT: plain HTTP sends ..." in r's stderr. */
static void expect_plain_refused(out_t* r, const char* source) {
  char want[4600];
  snprintf(want, sizeof want, "%s is http://127.0.0.1:%d: plain HTTP sends the "
           "signed requests and the session token in clear; use https://, or "
           "set ONCEBOX_SQS_ALLOW_HTTP=1", source, g_srv.fauxqs_port);
  expect(r, 2, NULL, want);
}

static void write_aws_config(const char* endpoint) {
  char path[4400];
  FILE* f;
  snprintf(path, sizeof path, "%s/.aws", g_home);
  mkdir(path, 0700);
  snprintf(path, sizeof path, "%s/.aws/config", g_home);
  f = fopen(path, "w");
  assert_non_null(f);
  fprintf(f, "[default]\nendpoint_url = %s\n", endpoint);
  fclose(f);
}

static void remove_aws_config(void) {
  char path[4400];
  snprintf(path, sizeof path, "%s/.aws/config", g_home);
  remove(path);
}

static void test_plain_http_refused(void** state) {
  char args[2048], src[4400];
  const char* const subs[] = {"attributes", "send", "receive"};
  out_t r;
  int reqs0;
  SKIP_IF_NEEDED;
  reqs0 = sq_count(&g_srv, "REQ ");
  /* 1. AWS_ENDPOINT_URL_SQS, for each subcommand. */
  setenv("AWS_ENDPOINT_URL_SQS", g_srv.plain_endpoint, 1);
  for (size_t i = 0; i < 3; i++) {
    snprintf(args, sizeof args, "%s --queue-url '%s'%s", subs[i], g_q,
             i == 1 ? " --body never-sent" : "");
    r = run(args);
    expect_plain_refused(&r, "AWS_ENDPOINT_URL_SQS");
    assert_non_null(strstr(r.err, "oncebox sqs "));
    assert_null(strstr(r.err, "plain HTTP allowed"));
    out_free(&r);
  }
  /* Only "1" opts in. */
  setenv("ONCEBOX_SQS_ALLOW_HTTP", "true", 1);
  snprintf(args, sizeof args, "attributes --queue-url '%s'", g_q);
  r = run(args);
  expect_plain_refused(&r, "AWS_ENDPOINT_URL_SQS");
  assert_non_null(strstr(r.err, "only the value 1 opts in"));
  out_free(&r);
  unsetenv("ONCEBOX_SQS_ALLOW_HTTP");
  /* 2. AWS_ENDPOINT_URL */
  unsetenv("AWS_ENDPOINT_URL_SQS");
  setenv("AWS_ENDPOINT_URL", g_srv.plain_endpoint, 1);
  r = run(args);
  expect_plain_refused(&r, "AWS_ENDPOINT_URL");
  out_free(&r);
  /* 3. endpoint_url in ~/.aws/config */
  unsetenv("AWS_ENDPOINT_URL");
  write_aws_config(g_srv.plain_endpoint);
  r = run(args);
  snprintf(src, sizeof src, "%s/.aws/config:2: endpoint_url", g_home);
  expect_plain_refused(&r, src);
  out_free(&r);
  remove_aws_config();
  /* And --endpoint-url. */
  snprintf(args, sizeof args, "attributes --queue-url '%s' --endpoint-url %s",
           g_q, g_srv.plain_endpoint);
  r = run(args);
  expect_plain_refused(&r, "the endpoint given");
  out_free(&r);
  /* Nothing was sent anywhere (fauxqs holds nothing new either: below). */
  assert_int_equal(sq_count(&g_srv, "REQ "), reqs0);
  set_env();
  snprintf(args, sizeof args, "attributes --queue-url '%s' --json", g_q);
  r = run(args);
  expect(&r, 0, "\"ApproximateNumberOfMessages\":\"0\"", NULL);
  out_free(&r);
}

static void test_plain_http_opt_in(void** state) {
  char args[2048];
  out_t r;
  int sends0;
  SKIP_IF_NEEDED;
  sends0 = sq_count(&g_srv, "REQ AmazonSQS.SendMessage");
  /* ONCEBOX_SQS_ALLOW_HTTP=1: used, one warning naming the source. */
  setenv("AWS_ENDPOINT_URL_SQS", g_srv.plain_endpoint, 1);
  setenv("ONCEBOX_SQS_ALLOW_HTTP", "1", 1);
  snprintf(args, sizeof args, "send --queue-url '%s' --body 'plain one'", g_q);
  r = run(args);
  expect(&r, 0, "sent ", "warn sqs: AWS_ENDPOINT_URL_SQS is http://127.0.0.1:");
  assert_int_equal(count_str(r.err, "plain HTTP allowed by "
                                    "ONCEBOX_SQS_ALLOW_HTTP=1"), 1);
  out_free(&r);
  unsetenv("ONCEBOX_SQS_ALLOW_HTTP");
  /* --sqs-allow-http, with endpoint_url from ~/.aws/config. */
  unsetenv("AWS_ENDPOINT_URL_SQS");
  write_aws_config(g_srv.plain_endpoint);
  snprintf(args, sizeof args,
           "receive --queue-url '%s' --wait 1 --delete --sqs-allow-http", g_q);
  r = run(args);
  expect(&r, 0, "body:      plain one", "/.aws/config:2: endpoint_url is http://");
  assert_non_null(strstr(r.out, "deleted 1"));
  assert_int_equal(count_str(r.err, "plain HTTP allowed"), 1);
  out_free(&r);
  remove_aws_config();
  /* AWS_ENDPOINT_URL with the flag. */
  setenv("AWS_ENDPOINT_URL", g_srv.plain_endpoint, 1);
  snprintf(args, sizeof args, "attributes --queue-url '%s' --sqs-allow-http",
           g_q);
  r = run(args);
  expect(&r, 0, "QueueArn", "AWS_ENDPOINT_URL is http://127.0.0.1:");
  out_free(&r);
  /* The plain calls never reached the TLS terminator. */
  assert_int_equal(sq_count(&g_srv, "REQ AmazonSQS.SendMessage"), sends0);
  /* https with the opt-in: unchanged, no warning. */
  set_env();
  setenv("ONCEBOX_SQS_ALLOW_HTTP", "1", 1);
  snprintf(args, sizeof args, "attributes --queue-url '%s' --sqs-allow-http",
           g_q);
  r = run(args);
  expect(&r, 0, "QueueArn", NULL);
  assert_null(strstr(r.err, "plain HTTP"));
  out_free(&r);
  unsetenv("ONCEBOX_SQS_ALLOW_HTTP");
}

/* The consumer of `oncebox run`: refused without the opt-in (exit 2, before
** anything is received), and with --sqs-allow-http it handles a CloudEvent
** through plain-HTTP fauxqs. */
static void test_plain_http_run_consumer(void** state) {
  char args[8192], db[4400];
  char* q;
  out_t r;
  SKIP_IF_NEEDED;
  q = sq_create_queue(&g_srv, "cli-plain-consume", NULL);
  assert_non_null(q);
  snprintf(db, sizeof db, "%s/consume.db", g_srv.dir);
  snprintf(args, sizeof args,
           "send --queue-url '%s' --body '{\"specversion\":\"1.0\",\"id\":"
           "\"0190b6d8-3ae7-7ca2-a653-000000000777\",\"source\":"
           "\"urn:oncebox:test\",\"type\":\"PaymentCaptured\",\"data\":"
           "{\"paymentId\":\"5c4080b1-b5d2-4e91-8de8-000000000777\","
           "\"merchantId\":\"3727331a-b533-4c6e-a0f8-48532237307b\","
           "\"amountInMinorUnits\":100,\"currency\":\"EUR\"}}'", q);
  r = run(args);   /* over https */
  expect(&r, 0, "sent ", NULL);
  out_free(&r);
  setenv("AWS_ENDPOINT_URL_SQS", g_srv.plain_endpoint, 1);
  snprintf(args, sizeof args, "--db '%s' run --until-idle --consume-queue-url "
           "'%s'", db, q);
  r = run_top(args);
  expect(&r, 2, NULL, "cannot consume the SQS queue: AWS_ENDPOINT_URL_SQS is "
                      "http://127.0.0.1:");
  assert_non_null(strstr(r.err, "plain HTTP sends the signed requests"));
  out_free(&r);
  /* The outbox's relay too. */
  snprintf(args, sizeof args, "--db '%s' run --until-idle --outbox-queue-url "
           "'%s'", db, q);
  r = run_top(args);
  expect(&r, 2, NULL, "cannot publish the outbox: AWS_ENDPOINT_URL_SQS is "
                      "http://127.0.0.1:");
  out_free(&r);
  snprintf(args, sizeof args, "--db '%s' run --until-idle --consume-queue-url "
           "'%s' --sqs-allow-http", db, q);
  r = run_top(args);
  expect(&r, 0, NULL, "1 handled (1 done, 0 retried, 0 failed, 0 waiting), 0 duplicates; 1 payouts");
  assert_int_equal(count_str(r.err, "warn sqs consumer: AWS_ENDPOINT_URL_SQS "
                                    "is http://127.0.0.1:"), 1);
  assert_int_equal(count_str(r.err, "plain HTTP allowed"), 1);
  out_free(&r);
  set_env();
  free(q);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_help_and_usage, setup),
      cmocka_unit_test_setup(test_send_receive_delete, setup),
      cmocka_unit_test_setup(test_tls_version_logged, setup),
      cmocka_unit_test_setup(test_fifo, setup),
      cmocka_unit_test_setup(test_errors, setup),
      cmocka_unit_test_setup(test_config_errors, setup),
      cmocka_unit_test_setup(test_plain_http_refused, setup),
      cmocka_unit_test_setup(test_plain_http_opt_in, setup),
      cmocka_unit_test_setup(test_plain_http_run_consumer, setup),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
