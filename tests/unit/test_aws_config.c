/* SPDX-License-Identifier: Apache-2.0 */
/*
** AWS configuration loading (platform/aws/aws_config.c): precedence between
** environment, credentials file and config file; malformed files with their
** specific errors; endpoint parsing; and a canary secret that must never
** appear in any error message or diagnostic string.
**
** The environment is a table passed through the lookup function, and the
** files live in a temporary directory: nothing reads the real environment
** or ~/.aws.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "oncebox.h"
#include "platform/aws/aws_config.h"
#include "tests/support/testsupport.h"

#define CANARY "CaNaRy+SeCrEt/9f8e7d6c5b4a"
#define CANARY_TOKEN "CaNaRyToKeN+AbCdEf/123=="

/* ---- a fake environment --------------------------------------------------- */
typedef struct env_s {
  const char* k[32];
  const char* v[32];
  int n;
  char* dir;      /* HOME */
} env_t;

static const char* env_lookup(void* ctx, const char* name) {
  env_t* e = ctx;
  for (int i = 0; i < e->n; i++)
    if (strcmp(e->k[i], name) == 0) return e->v[i];
  return NULL;
}

static void env_set(env_t* e, const char* k, const char* v) {
  for (int i = 0; i < e->n; i++)
    if (strcmp(e->k[i], k) == 0) {
      e->v[i] = v;
      return;
    }
  e->k[e->n] = k;
  e->v[e->n] = v;
  e->n++;
}

static void write_file(const char* dir, const char* rel, const char* text) {
  char path[4096];
  FILE* f;
  snprintf(path, sizeof path, "%s/.aws", dir);
  mkdir(path, 0700);
  snprintf(path, sizeof path, "%s/%s", dir, rel);
  f = fopen(path, "wb");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static int setup(void** state) {
  env_t* e = calloc(1, sizeof *e);
  if (e == NULL) return -1;
  e->dir = ts_mkdtemp("aws-config");
  env_set(e, "HOME", e->dir);
  *state = e;
  return 0;
}

static int teardown(void** state) {
  env_t* e = *state;
  ts_rmdir(e->dir);
  free(e);
  return 0;
}

/* Every string a caller could print: none may hold a secret. */
static void assert_no_canary(const char* s) {
  if (s == NULL) return;
  if (strstr(s, CANARY) != NULL || strstr(s, CANARY_TOKEN) != NULL ||
      strstr(s, "CaNaRy") != NULL) {
    fprintf(stderr, "secret leaked into: %s\n", s);
    fail();
  }
}

static int load(env_t* e, ob__aws_config_t* cfg, const ob__aws_overrides_t* ov,
                char* err, size_t errlen) {
  int rc = ob__aws_config_load(cfg, env_lookup, e, ov, err, errlen);
  assert_no_canary(err);
  if (rc == 0) {
    assert_no_canary(cfg->credentials_source);
    assert_no_canary(cfg->region_source);
    assert_no_canary(cfg->endpoint.url);
  }
  return rc;
}

/* Load must fail with rc and an error containing each needle. */
static void expect_error(env_t* e, int want_rc, const char* needle1,
                         const char* needle2) {
  ob__aws_config_t cfg;
  char err[1024];
  int rc = load(e, &cfg, NULL, err, sizeof err);
  if (rc != want_rc || (needle1 && strstr(err, needle1) == NULL) ||
      (needle2 && strstr(err, needle2) == NULL)) {
    fprintf(stderr, "rc %d (want %d), error: %s\n  want: '%s' '%s'\n", rc,
            want_rc, err, needle1 ? needle1 : "", needle2 ? needle2 : "");
    fail();
  }
  /* Failure leaves nothing allocated and a zeroed struct. */
  assert_null(cfg.access_key_id);
  assert_null(cfg.secret_access_key);
  assert_null(cfg.region);
}

/* ---- precedence ------------------------------------------------------------- */

static void test_env_only(void** state) {
  env_t* e = *state;
  ob__aws_config_t cfg;
  char err[512];
  env_set(e, "AWS_ACCESS_KEY_ID", "AKIDENV");
  env_set(e, "AWS_SECRET_ACCESS_KEY", CANARY);
  env_set(e, "AWS_SESSION_TOKEN", CANARY_TOKEN);
  env_set(e, "AWS_REGION", "eu-west-1");
  assert_int_equal(load(e, &cfg, NULL, err, sizeof err), 0);
  assert_string_equal(cfg.access_key_id, "AKIDENV");
  assert_string_equal(cfg.secret_access_key, CANARY);
  assert_string_equal(cfg.session_token, CANARY_TOKEN);
  assert_string_equal(cfg.region, "eu-west-1");
  assert_string_equal(cfg.profile, "default");
  assert_string_equal(cfg.endpoint.url, "https://sqs.eu-west-1.amazonaws.com/");
  assert_string_equal(cfg.endpoint.host_header, "sqs.eu-west-1.amazonaws.com");
  assert_int_equal(cfg.endpoint.port, 443);
  assert_int_equal(cfg.endpoint_explicit, 0);
  assert_int_equal(cfg.allow_plain_http, 0);
  assert_null(cfg.ca_file);
  assert_int_equal(cfg.max_attempts, 0);
  assert_non_null(strstr(cfg.credentials_source, "environment"));
  assert_string_equal(cfg.region_source, "AWS_REGION");
  ob__aws_config_free(&cfg);
  assert_null(cfg.secret_access_key);
  ob__aws_config_free(&cfg);   /* twice is fine */
}

static void test_env_beats_profile(void** state) {
  env_t* e = *state;
  ob__aws_config_t cfg;
  char err[512];
  write_file(e->dir, ".aws/credentials",
             "[default]\naws_access_key_id = AKIDFILE\n"
             "aws_secret_access_key = filesecret\n"
             "[prod]\naws_access_key_id = AKIDPROD\n"
             "aws_secret_access_key = prodsecret\n");
  write_file(e->dir, ".aws/config",
             "[default]\nregion = us-east-2\n[profile prod]\n"
             "region = ap-south-1\n");
  env_set(e, "AWS_ACCESS_KEY_ID", "AKIDENV");
  env_set(e, "AWS_SECRET_ACCESS_KEY", "envsecret");
  env_set(e, "AWS_PROFILE", "prod");
  assert_int_equal(load(e, &cfg, NULL, err, sizeof err), 0);
  /* Keys from the environment, region from the selected profile. */
  assert_string_equal(cfg.access_key_id, "AKIDENV");
  assert_string_equal(cfg.secret_access_key, "envsecret");
  assert_null(cfg.session_token);
  assert_string_equal(cfg.profile, "prod");
  assert_string_equal(cfg.region, "ap-south-1");
  assert_non_null(strstr(cfg.region_source, "config"));
  ob__aws_config_free(&cfg);

  /* Without the environment keys, the profile's keys. */
  env_set(e, "AWS_ACCESS_KEY_ID", "");   /* empty counts as unset */
  env_set(e, "AWS_SECRET_ACCESS_KEY", "");
  assert_int_equal(load(e, &cfg, NULL, err, sizeof err), 0);
  assert_string_equal(cfg.access_key_id, "AKIDPROD");
  assert_string_equal(cfg.secret_access_key, "prodsecret");
  assert_non_null(strstr(cfg.credentials_source, "[prod]"));
  ob__aws_config_free(&cfg);

  /* The default profile. */
  env_set(e, "AWS_PROFILE", "");
  assert_int_equal(load(e, &cfg, NULL, err, sizeof err), 0);
  assert_string_equal(cfg.access_key_id, "AKIDFILE");
  assert_string_equal(cfg.region, "us-east-2");
  ob__aws_config_free(&cfg);
}

static void test_region_precedence(void** state) {
  env_t* e = *state;
  ob__aws_config_t cfg;
  ob__aws_overrides_t ov;
  char err[512];
  write_file(e->dir, ".aws/credentials",
             "[default]\naws_access_key_id=A\naws_secret_access_key=S\n");
  write_file(e->dir, ".aws/config", "[default]\nregion=from-config\n");
  assert_int_equal(load(e, &cfg, NULL, err, sizeof err), 0);
  assert_string_equal(cfg.region, "from-config");
  ob__aws_config_free(&cfg);
  env_set(e, "AWS_DEFAULT_REGION", "from-default");
  assert_int_equal(load(e, &cfg, NULL, err, sizeof err), 0);
  assert_string_equal(cfg.region, "from-default");
  assert_string_equal(cfg.region_source, "AWS_DEFAULT_REGION");
  ob__aws_config_free(&cfg);
  env_set(e, "AWS_REGION", "from-region");
  assert_int_equal(load(e, &cfg, NULL, err, sizeof err), 0);
  assert_string_equal(cfg.region, "from-region");
  ob__aws_config_free(&cfg);
  memset(&ov, 0, sizeof ov);
  ov.region = "from-override";
  assert_int_equal(load(e, &cfg, &ov, err, sizeof err), 0);
  assert_string_equal(cfg.region, "from-override");
  assert_string_equal(cfg.region_source, "override");
  ob__aws_config_free(&cfg);
}

static void test_config_file_only(void** state) {
  env_t* e = *state;
  ob__aws_config_t cfg;
  char err[512];
  /* Keys in the config file (the CLI accepts them there too), sub-properties,
  ** comments, CRLF line ends, spaces around '='. */
  write_file(e->dir, ".aws/config",
             "# a comment\r\n"
             "; another\r\n"
             "[profile  dev ]\r\n"
             "region   =   eu-central-1  \r\n"
             "s3 =\r\n"
             "    max_concurrent_requests = 20\r\n"
             "    addressing_style = path\r\n"
             "aws_access_key_id = AKIDDEV\r\n"
             "aws_secret_access_key = devsecret\r\n"
             "aws_session_token = devtoken\r\n"
             "max_attempts = 5\r\n"
             "ca_bundle = /etc/custom-ca.pem\r\n"
             "\r\n"
             "[sso-session x]\r\nsso_region = us-east-1\r\n");
  env_set(e, "AWS_PROFILE", "dev");
  assert_int_equal(load(e, &cfg, NULL, err, sizeof err), 0);
  assert_string_equal(cfg.access_key_id, "AKIDDEV");
  assert_string_equal(cfg.secret_access_key, "devsecret");
  assert_string_equal(cfg.session_token, "devtoken");
  assert_string_equal(cfg.region, "eu-central-1");
  assert_int_equal(cfg.max_attempts, 5);
  assert_string_equal(cfg.ca_file, "/etc/custom-ca.pem");
  assert_non_null(strstr(cfg.credentials_source, "[profile dev]"));
  ob__aws_config_free(&cfg);

  /* The credentials file wins over keys in the config file. */
  write_file(e->dir, ".aws/credentials",
             "[dev]\naws_access_key_id = AKIDCRED\n"
             "aws_secret_access_key = credsecret\n");
  assert_int_equal(load(e, &cfg, NULL, err, sizeof err), 0);
  assert_string_equal(cfg.access_key_id, "AKIDCRED");
  assert_string_equal(cfg.secret_access_key, "credsecret");
  /* The token from the config file is not mixed into other keys... it is
  ** the same profile, so the CLI would take it; we take it too. */
  assert_string_equal(cfg.session_token, "devtoken");
  ob__aws_config_free(&cfg);
}

static void test_file_overrides(void** state) {
  env_t* e = *state;
  ob__aws_config_t cfg;
  char err[512];
  char cred[4096], conf[4096];
  snprintf(cred, sizeof cred, "%s/elsewhere-creds", e->dir);
  snprintf(conf, sizeof conf, "%s/elsewhere-conf", e->dir);
  write_file(e->dir, "elsewhere-creds",
             "[default]\naws_access_key_id = AKIDELSE\n"
             "aws_secret_access_key = elsesecret\n");
  write_file(e->dir, "elsewhere-conf", "[default]\nregion = sa-east-1\n");
  /* These in HOME must be ignored. */
  write_file(e->dir, ".aws/credentials",
             "[default]\naws_access_key_id = AKIDHOME\n"
             "aws_secret_access_key = homesecret\n");
  env_set(e, "AWS_SHARED_CREDENTIALS_FILE", cred);
  env_set(e, "AWS_CONFIG_FILE", conf);
  assert_int_equal(load(e, &cfg, NULL, err, sizeof err), 0);
  assert_string_equal(cfg.access_key_id, "AKIDELSE");
  assert_string_equal(cfg.region, "sa-east-1");
  ob__aws_config_free(&cfg);
}

static void test_config_needs_profile_prefix(void** state) {
  env_t* e = *state;
  /* In the config file a named profile is [profile x]; [x] is not it. */
  write_file(e->dir, ".aws/config",
             "[x]\nregion = eu-west-1\naws_access_key_id = A\n"
             "aws_secret_access_key = " CANARY "\n");
  env_set(e, "AWS_PROFILE", "x");
  expect_error(e, OB_EINVAL, "profile 'x' not found", "[profile x]");
}

static void test_endpoint(void** state) {
  env_t* e = *state;
  ob__aws_config_t cfg;
  ob__aws_overrides_t ov;
  char err[512];
  env_set(e, "AWS_ACCESS_KEY_ID", "A");
  env_set(e, "AWS_SECRET_ACCESS_KEY", CANARY);
  env_set(e, "AWS_REGION", "us-east-1");
  env_set(e, "AWS_ENDPOINT_URL", "https://generic.example:8443");
  assert_int_equal(load(e, &cfg, NULL, err, sizeof err), 0);
  assert_string_equal(cfg.endpoint.url, "https://generic.example:8443/");
  assert_string_equal(cfg.endpoint.host_header, "generic.example:8443");
  assert_int_equal(cfg.endpoint_explicit, 1);
  assert_int_equal(cfg.allow_plain_http, 0);
  ob__aws_config_free(&cfg);
  /* The SQS-specific variable wins; http:// allows plain HTTP. */
  env_set(e, "AWS_ENDPOINT_URL_SQS", "HTTP://LocalHost:4566/");
  assert_int_equal(load(e, &cfg, NULL, err, sizeof err), 0);
  assert_string_equal(cfg.endpoint.url, "http://localhost:4566/");
  assert_int_equal(cfg.endpoint.tls, 0);
  assert_int_equal(cfg.allow_plain_http, 1);
  ob__aws_config_free(&cfg);
  /* An override beats both. */
  memset(&ov, 0, sizeof ov);
  ov.endpoint = "https://sqs.test:4433";
  ov.ca_file = "/tmp/ca.pem";
  env_set(e, "AWS_CA_BUNDLE", "/env/ca.pem");
  assert_int_equal(load(e, &cfg, &ov, err, sizeof err), 0);
  assert_string_equal(cfg.endpoint.host_header, "sqs.test:4433");
  assert_int_equal(cfg.allow_plain_http, 0);
  assert_string_equal(cfg.ca_file, "/tmp/ca.pem");
  ob__aws_config_free(&cfg);
  assert_int_equal(load(e, &cfg, NULL, err, sizeof err), 0);
  assert_string_equal(cfg.ca_file, "/env/ca.pem");
  ob__aws_config_free(&cfg);
  /* A path, a query, user info: refused, naming the variable. */
  env_set(e, "AWS_ENDPOINT_URL_SQS", "https://sqs.test/queue");
  expect_error(e, OB_EINVAL, "AWS_ENDPOINT_URL_SQS", "not a valid endpoint");
  env_set(e, "AWS_ENDPOINT_URL_SQS", "https://user:" CANARY "@sqs.test/");
  expect_error(e, OB_EINVAL, "AWS_ENDPOINT_URL_SQS", NULL);
  env_set(e, "AWS_ENDPOINT_URL_SQS", "ftp://sqs.test");
  expect_error(e, OB_EINVAL, "AWS_ENDPOINT_URL_SQS", NULL);
}

static void test_endpoint_parse(void** state) {
  ob__aws_endpoint_t ep;
  (void)state;
  assert_int_equal(ob__aws_endpoint_parse("https://sqs.eu-west-1.amazonaws.com", &ep), 0);
  assert_int_equal(ep.tls, 1);
  assert_int_equal(ep.port, 443);
  assert_string_equal(ep.host_header, "sqs.eu-west-1.amazonaws.com");
  assert_int_equal(ob__aws_endpoint_parse("http://127.0.0.1:9324/", &ep), 0);
  assert_string_equal(ep.host_header, "127.0.0.1:9324");
  assert_int_equal(ob__aws_endpoint_parse("https://[::1]:8443", &ep), 0);
  assert_string_equal(ep.host, "::1");
  assert_string_equal(ep.host_header, "[::1]:8443");
  assert_string_equal(ep.url, "https://[::1]:8443/");
  assert_int_equal(ob__aws_endpoint_parse("https://sqs.test:443", &ep), 0);
  assert_string_equal(ep.host_header, "sqs.test");
  static const char* const bad[] = {
      "", "sqs.test", "https://", "https://:80", "https://a:0", "https://a:65536",
      "https://a:x", "https://a/b", "https://a/?x", "https://a b", "https://a@b",
      "https://[::1", "https://a?x", "https://a#f", "https://a:80:90"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    if (ob__aws_endpoint_parse(bad[i], &ep) != OB_EINVAL) {
      fprintf(stderr, "accepted: '%s'\n", bad[i]);
      fail();
    }
    assert_int_equal(ep.host[0], '\0');
  }
  assert_int_equal(ob__aws_endpoint_parse(NULL, &ep), OB_EINVAL);
}

/* ---- errors ----------------------------------------------------------------- */

static void test_env_errors(void** state) {
  env_t* e = *state;
  env_set(e, "AWS_REGION", "eu-west-1");
  env_set(e, "AWS_ACCESS_KEY_ID", "AKID");
  expect_error(e, OB_EINVAL, "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not", NULL);
  env_set(e, "AWS_ACCESS_KEY_ID", "");
  env_set(e, "AWS_SECRET_ACCESS_KEY", CANARY);
  expect_error(e, OB_EINVAL, "AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not", NULL);
  env_set(e, "AWS_ACCESS_KEY_ID", "AKID");
  env_set(e, "AWS_SECRET_ACCESS_KEY", CANARY " with space");
  expect_error(e, OB_EINVAL, "AWS_SECRET_ACCESS_KEY contains spaces", NULL);
  env_set(e, "AWS_SECRET_ACCESS_KEY", CANARY);
  env_set(e, "AWS_SESSION_TOKEN", CANARY_TOKEN "\n");
  expect_error(e, OB_EINVAL, "AWS_SESSION_TOKEN contains", NULL);
  env_set(e, "AWS_SESSION_TOKEN", "");
  env_set(e, "AWS_ACCESS_KEY_ID", "AK/ID");
  expect_error(e, OB_EINVAL, "AWS_ACCESS_KEY_ID contains", NULL);
  env_set(e, "AWS_ACCESS_KEY_ID", "AKID");
  env_set(e, "AWS_REGION", "eu west");
  expect_error(e, OB_EINVAL, "AWS_REGION is not a valid region", NULL);
  env_set(e, "AWS_REGION", "");
  expect_error(e, OB_EINVAL, "no AWS region", "AWS_REGION");
  env_set(e, "AWS_REGION", "eu-west-1");
  env_set(e, "AWS_MAX_ATTEMPTS", "0");
  expect_error(e, OB_EINVAL, "AWS_MAX_ATTEMPTS must be an integer from 1 to 20", NULL);
  env_set(e, "AWS_MAX_ATTEMPTS", "3x");
  expect_error(e, OB_EINVAL, "AWS_MAX_ATTEMPTS", NULL);
}

static void test_no_credentials(void** state) {
  env_t* e = *state;
  env_set(e, "AWS_REGION", "eu-west-1");
  expect_error(e, OB_EINVAL, "no AWS credentials", "AWS_ACCESS_KEY_ID");
  env_set(e, "AWS_PROFILE", "missing");
  expect_error(e, OB_EINVAL, "profile 'missing' not found", NULL);
}

typedef struct bad_file_s {
  const char* file;        /* ".aws/credentials" or ".aws/config" */
  const char* text;
  const char* needle;      /* expected in the error */
  int rc;
} bad_file_t;

static void test_malformed_files(void** state) {
  env_t* e = *state;
  static const bad_file_t cases[] = {
      {".aws/credentials", "[default\naws_access_key_id = A\n",
       "credentials:1: section header without a closing ']'", OB_EINVAL},
      {".aws/credentials", "[default]\naws_access_key_id = A\n" CANARY "\n",
       "credentials:3: expected 'key = value' or '[section]'", OB_EINVAL},
      {".aws/credentials", "aws_secret_access_key = " CANARY "\n[default]\n",
       "credentials:1: setting before the first [section]", OB_EINVAL},
      {".aws/credentials",
       "[default]\naws_access_key_id = A\n[default]\n"
       "aws_secret_access_key = " CANARY "\n",
       "credentials:3: section repeats the one on line 1", OB_EINVAL},
      {".aws/credentials",
       "[default]\naws_secret_access_key = " CANARY "\n"
       "AWS_SECRET_ACCESS_KEY = " CANARY "x\n",
       "credentials:3: key repeats the one on line 2", OB_EINVAL},
      {".aws/credentials",
       "[default]\naws_access_key_id = A\n  aws_secret_access_key = " CANARY "\n",
       "credentials:3: unexpected indented line", OB_EINVAL},
      {".aws/credentials", "[default]\n= " CANARY "\n",
       "credentials:2: missing key name before '='", OB_EINVAL},
      {".aws/credentials", "[ ]\n", "credentials:1: empty section name",
       OB_EINVAL},
      {".aws/credentials",
       "[default]\naws_access_key_id = A\naws_secret_access_key = " CANARY
       " trailing\n",
       "credentials:3: aws_secret_access_key is empty or contains spaces",
       OB_EINVAL},
      {".aws/credentials",
       "[default]\naws_access_key_id = A\naws_secret_access_key =\n",
       "credentials:3: aws_secret_access_key is empty", OB_EINVAL},
      {".aws/credentials",
       "\n\n[default]\naws_access_key_id = A B\naws_secret_access_key = " CANARY
       "\n",
       "credentials:4: aws_access_key_id is empty or contains", OB_EINVAL},
      {".aws/credentials", "[default]\naws_secret_access_key = " CANARY "\n",
       "credentials:2: profile 'default' has aws_secret_access_key but no "
       "aws_access_key_id",
       OB_EINVAL},
      {".aws/credentials",
       "[default]\naws_access_key_id = A\naws_secret_access_key = " CANARY "\n"
       "aws_session_token = " CANARY_TOKEN " x\n",
       "credentials:4: aws_session_token contains", OB_EINVAL},
      {".aws/config",
       "[default]\nrole_arn = arn:aws:iam::1:role/x\nsource_profile = b\n",
       "config:2: profile 'default' uses role_arn, which oncebox does not "
       "support",
       OB_EINVAL},
      {".aws/config", "[default]\ncredential_process = /bin/echo " CANARY "\n",
       "config:2: profile 'default' uses credential_process", OB_EINVAL},
      {".aws/config",
       "[default]\nregion = eu-west-1 # ireland\naws_access_key_id = A\n"
       "aws_secret_access_key = " CANARY "\n",
       "config:2: region is not valid", OB_EINVAL},
      {".aws/config",
       "[default]\nregion = eu-west-1\nmax_attempts = 99\naws_access_key_id = A\n"
       "aws_secret_access_key = " CANARY "\n",
       "config:3: max_attempts must be an integer from 1 to 20", OB_EINVAL},
      {".aws/config",
       "[default]\nregion = eu-west-1\nendpoint_url = https://x/" CANARY "\n"
       "aws_access_key_id = A\naws_secret_access_key = " CANARY "\n",
       "config:3: endpoint_url is not a valid endpoint", OB_EINVAL},
      {".aws/config", "[default]\naws_access_key_id = A\n",
       "config:2: profile 'default' has aws_access_key_id but no "
       "aws_secret_access_key",
       OB_EINVAL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/.aws/credentials", e->dir);
    remove(path);
    snprintf(path, sizeof path, "%s/.aws/config", e->dir);
    remove(path);
    write_file(e->dir, cases[i].file, cases[i].text);
    if (strcmp(cases[i].file, ".aws/config") != 0)
      write_file(e->dir, ".aws/config", "[default]\nregion = eu-west-1\n");
    expect_error(e, cases[i].rc, cases[i].needle, e->dir);
  }
}

static void test_unreadable_and_huge(void** state) {
  env_t* e = *state;
  char path[4096];
  FILE* f;
  env_set(e, "AWS_REGION", "eu-west-1");
  /* A directory where the file should be: a specific I/O error (root can
  ** read mode-000 files, so permissions cannot be used here). */
  snprintf(path, sizeof path, "%s/.aws", e->dir);
  mkdir(path, 0700);
  snprintf(path, sizeof path, "%s/.aws/credentials", e->dir);
  mkdir(path, 0700);
  expect_error(e, OB_EIO, "credentials: not a regular file", NULL);
  rmdir(path);
  f = fopen(path, "wb");
  assert_non_null(f);
  fputs("[default]\n", f);
  for (int i = 0; i < 70000; i++) fputs("# padding padding\n", f);
  fclose(f);
  expect_error(e, OB_ETOOBIG, "credentials: larger than", NULL);
  f = fopen(path, "wb");
  assert_non_null(f);
  fwrite("[default]\n\0\n", 1, 12, f);
  fclose(f);
  expect_error(e, OB_EINVAL, "NUL byte", NULL);
}

/* ---- systemd credentials ($CREDENTIALS_DIRECTORY) ------------------------ */

static void write_cred(const char* dir, const char* name, const char* text) {
  char path[4096];
  FILE* f;
  snprintf(path, sizeof path, "%s/creds", dir);
  mkdir(path, 0700);
  snprintf(path, sizeof path, "%s/creds/%s", dir, name);
  f = fopen(path, "wb");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static void test_credentials_directory(void** state) {
  env_t* e = *state;
  ob__aws_config_t cfg;
  char err[1024];
  char dir[4096];     /* env_set keeps the pointer: one buffer per value */
  char awsdir[4096];
  char gone[4096];
  char big[9000];
  snprintf(dir, sizeof dir, "%s/creds", e->dir);
  write_file(e->dir, ".aws/credentials",
             "[default]\naws_access_key_id = AKIDFILE\n"
             "aws_secret_access_key = filesecret\n");
  write_cred(e->dir, "aws_access_key_id", "AKIDCRED\n");
  write_cred(e->dir, "aws_secret_access_key", CANARY "\r\n");
  write_cred(e->dir, "aws_session_token", CANARY_TOKEN);
  env_set(e, "AWS_REGION", "eu-west-1");
  env_set(e, "CREDENTIALS_DIRECTORY", dir);
  /* The credentials directory beats ~/.aws; the newline is stripped. */
  assert_int_equal(load(e, &cfg, NULL, err, sizeof err), 0);
  assert_string_equal(cfg.access_key_id, "AKIDCRED");
  assert_string_equal(cfg.secret_access_key, CANARY);
  assert_string_equal(cfg.session_token, CANARY_TOKEN);
  assert_non_null(strstr(cfg.credentials_source, "systemd credentials"));
  ob__aws_config_free(&cfg);

  /* Explicit environment variables beat it. */
  env_set(e, "AWS_ACCESS_KEY_ID", "AKIDENV");
  env_set(e, "AWS_SECRET_ACCESS_KEY", "envsecret");
  assert_int_equal(load(e, &cfg, NULL, err, sizeof err), 0);
  assert_string_equal(cfg.access_key_id, "AKIDENV");
  assert_null(cfg.session_token);
  ob__aws_config_free(&cfg);
  env_set(e, "AWS_ACCESS_KEY_ID", "");
  env_set(e, "AWS_SECRET_ACCESS_KEY", "");

  /* No key files there: the ~/.aws files, as before. */
  snprintf(awsdir, sizeof awsdir, "%s/.aws", e->dir);
  env_set(e, "CREDENTIALS_DIRECTORY", awsdir);
  assert_int_equal(load(e, &cfg, NULL, err, sizeof err), 0);
  assert_string_equal(cfg.access_key_id, "AKIDFILE");
  ob__aws_config_free(&cfg);
  env_set(e, "CREDENTIALS_DIRECTORY", dir);

  /* The same validation as the variables, and no value in any message. */
  write_cred(e->dir, "aws_secret_access_key", CANARY " with spaces\n");
  expect_error(e, OB_EINVAL, "aws_secret_access_key", "spaces");
  write_cred(e->dir, "aws_secret_access_key", "\n");
  expect_error(e, OB_EINVAL, "aws_secret_access_key", "empty");
  write_cred(e->dir, "aws_secret_access_key", CANARY);
  write_cred(e->dir, "aws_session_token", CANARY_TOKEN "\nsecond line\n");
  expect_error(e, OB_EINVAL, "aws_session_token", NULL);
  write_cred(e->dir, "aws_session_token", CANARY_TOKEN);
  /* Size-bounded. */
  memset(big, 'A', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  write_cred(e->dir, "aws_session_token", big);
  expect_error(e, OB_ETOOBIG, "aws_session_token", "larger than");
  write_cred(e->dir, "aws_session_token", CANARY_TOKEN);
  /* One key without the other. */
  snprintf(gone, sizeof gone, "%s/creds/aws_access_key_id", e->dir);
  assert_int_equal(unlink(gone), 0);
  expect_error(e, OB_EINVAL, "aws_access_key_id", "CREDENTIALS_DIRECTORY");
}

static void test_null_args(void** state) {
  ob__aws_config_t cfg;
  (void)state;
  assert_int_equal(ob__aws_config_load(NULL, NULL, NULL, NULL, NULL, 0),
                   OB_EINVAL);
  ob__aws_config_free(NULL);
  memset(&cfg, 0, sizeof cfg);
  ob__aws_config_free(&cfg);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_env_only, setup, teardown),
      cmocka_unit_test_setup_teardown(test_env_beats_profile, setup, teardown),
      cmocka_unit_test_setup_teardown(test_region_precedence, setup, teardown),
      cmocka_unit_test_setup_teardown(test_config_file_only, setup, teardown),
      cmocka_unit_test_setup_teardown(test_file_overrides, setup, teardown),
      cmocka_unit_test_setup_teardown(test_config_needs_profile_prefix, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_endpoint, setup, teardown),
      cmocka_unit_test(test_endpoint_parse),
      cmocka_unit_test_setup_teardown(test_env_errors, setup, teardown),
      cmocka_unit_test_setup_teardown(test_no_credentials, setup, teardown),
      cmocka_unit_test_setup_teardown(test_malformed_files, setup, teardown),
      cmocka_unit_test_setup_teardown(test_unreadable_and_huge, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_credentials_directory, setup,
                                      teardown),
      cmocka_unit_test(test_null_args),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
