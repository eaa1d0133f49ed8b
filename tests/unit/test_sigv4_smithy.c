/* SPDX-License-Identifier: Apache-2.0 */
/*
** SigV4 interop: oncebox's signer against @smithy/signature-v4, the signer
** of the AWS SDK for JavaScript v3.
**
** tests/interop/sigv4_gen.mjs generates random requests (>= 200 SQS JSON-1.0
** requests: POST /, Content-Type application/x-amz-json-1.0, X-Amz-Target,
** unicode bodies, many regions and dates, with and without session tokens
** and x-amz-content-sha256; plus generic requests with random paths, queries
** and headers, header-signed and presigned), signs them with @smithy and
** prints them as JSON lines. This test re-signs each one and requires the
** Authorization header (or the presigned signature and SignedHeaders) to
** match byte for byte.
**
** Needs node and tests/interop/node_modules (cd tests/interop && npm ci);
** without them the tests are skipped with a message. Environment:
**   OB_NODE           node binary (default "node")
**   OB_INTEROP_SEED   generator seed (default 20261130), printed on failure
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cjson/cJSON.h>
#include <mbedtls/base64.h>

#include "core/sigv4/sigv4.h"
#include "oncebox.h"

#define MIN_SQS_REQUESTS 200
#define DEFAULT_SEED "20261130"

typedef struct gen_s {
  char** lines;
  size_t n;
  const char* skip_reason;   /* non-NULL: skip every test with this text */
  char skip_buf[9000];
  const char* seed;
} gen_t;

static gen_t g;

static int file_exists(const char* p) {
  struct stat st;
  return stat(p, &st) == 0;
}

static int group_setup(void** state) {
  const char* src = getenv("OB_SOURCE_DIR");
  const char* node = getenv("OB_NODE");
  char dir[4096], probe[4600], cmd[10000];
  FILE* f;
  char* line = NULL;
  size_t cap = 0;
  ssize_t len;
  int status;
  (void)state;
  memset(&g, 0, sizeof g);
  g.seed = getenv("OB_INTEROP_SEED") ? getenv("OB_INTEROP_SEED") : DEFAULT_SEED;
  if (node == NULL || *node == '\0') node = "node";
  if (src == NULL) src = ".";
  snprintf(dir, sizeof dir, "%s/tests/interop", src);
  if (strchr(dir, '\'') || strchr(node, '\'') || strchr(g.seed, '\'')) {
    g.skip_reason = "skipped: a quote in OB_SOURCE_DIR/OB_NODE/OB_INTEROP_SEED";
    return 0;
  }
  snprintf(probe, sizeof probe,
           "%s/node_modules/@smithy/signature-v4/package.json", dir);
  if (!file_exists(probe)) {
    snprintf(g.skip_buf, sizeof g.skip_buf,
             "skipped: %s/node_modules not found (run: cd %s && npm ci)", dir,
             dir);
    g.skip_reason = g.skip_buf;
    return 0;
  }
  snprintf(cmd, sizeof cmd, "'%s' --version >/dev/null 2>&1", node);
  if (system(cmd) != 0) {
    snprintf(g.skip_buf, sizeof g.skip_buf,
             "skipped: node not found ('%s'; set OB_NODE)", node);
    g.skip_reason = g.skip_buf;
    return 0;
  }
  snprintf(cmd, sizeof cmd, "cd '%s' && '%s' sigv4_gen.mjs --seed '%s'", dir,
           node, g.seed);
  f = popen(cmd, "r");
  if (f == NULL) return -1;
  while ((len = getline(&line, &cap, f)) > 0) {
    char** nl;
    if (line[len - 1] == '\n') line[--len] = '\0';
    if (len == 0) continue;
    nl = realloc(g.lines, (g.n + 1) * sizeof *nl);
    if (nl == NULL) break;
    g.lines = nl;
    g.lines[g.n] = strdup(line);
    if (g.lines[g.n] == NULL) break;
    g.n++;
  }
  free(line);
  status = pclose(f);
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "generator failed: %s (status %d)\n", cmd, status);
    return -1;
  }
  return 0;
}

static int group_teardown(void** state) {
  (void)state;
  for (size_t i = 0; i < g.n; i++) free(g.lines[i]);
  free(g.lines);
  memset(&g, 0, sizeof g);
  return 0;
}

static void skip_if_unavailable(void) {
  if (g.skip_reason != NULL) {
    print_message("%s\n", g.skip_reason);
    skip();
  }
}

static const char* jstr(const cJSON* o, const char* k) {
  const cJSON* v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Re-sign one generated request; returns 1 if it agrees with @smithy. */
static int check_line(const char* text, const char* want_kind, int* matched,
                      ob__sigv4_cache_t* cache) {
  cJSON* j = cJSON_Parse(text);
  const cJSON *hs, *h, *exp;
  ob__sigv4_header_t* headers = NULL;
  ob__sigv4_request_t req;
  ob__sigv4_params_t p;
  ob__aws_creds_t creds;
  ob__sigv4_out_t out;
  unsigned char* body = NULL;
  size_t nh = 0, body_len = 0;
  const char* b64;
  const char* mode;
  int ok = 0, rc;
  assert_non_null(j);
  *matched = 0;
  if (strcmp(jstr(j, "kind"), want_kind) != 0) {
    cJSON_Delete(j);
    return 1;
  }
  *matched = 1;
  mode = jstr(j, "mode");
  assert_non_null(mode);

  hs = cJSON_GetObjectItemCaseSensitive(j, "headers");
  assert_true(cJSON_IsArray(hs));
  headers = calloc((size_t)cJSON_GetArraySize(hs) + 1, sizeof *headers);
  assert_non_null(headers);
  cJSON_ArrayForEach(h, hs) {
    assert_int_equal(cJSON_GetArraySize(h), 2);
    headers[nh].name = cJSON_GetArrayItem(h, 0)->valuestring;
    headers[nh].value = cJSON_GetArrayItem(h, 1)->valuestring;
    nh++;
  }
  b64 = jstr(j, "body_b64");
  assert_non_null(b64);
  {
    size_t cap = strlen(b64) / 4 * 3 + 4;
    body = malloc(cap);
    assert_non_null(body);
    assert_int_equal(mbedtls_base64_decode(body, cap, &body_len,
                                           (const unsigned char*)b64,
                                           strlen(b64)),
                     0);
  }

  memset(&req, 0, sizeof req);
  req.method = jstr(j, "method");
  req.path = jstr(j, "path");
  req.query = jstr(j, "query");
  req.headers = headers;
  req.nheaders = nh;
  req.body = body;
  req.body_len = body_len;

  ob__sigv4_params_init(&p);
  p.region = jstr(j, "region");
  p.service = jstr(j, "service");
  p.time_s = (int64_t)cJSON_GetObjectItemCaseSensitive(j, "time_s")->valuedouble;
  p.normalize = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "normalize"));
  p.sign_body = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "sign_body"));
  p.expires_s =
      (int64_t)cJSON_GetObjectItemCaseSensitive(j, "expires")->valuedouble;

  creds.access_key_id = jstr(j, "akid");
  creds.secret_access_key = jstr(j, "secret");
  creds.session_token = jstr(j, "token"); /* NULL for JSON null */

  exp = cJSON_GetObjectItemCaseSensitive(j, "expect");
  assert_true(cJSON_IsObject(exp));
  if (strcmp(mode, "header") == 0) {
    rc = ob__sigv4_sign(&req, &creds, &p, cache, &out);
    ok = rc == 0 && strcmp(out.authorization, jstr(exp, "authorization")) == 0;
    if (!ok)
      print_error("id %d (%s/header) rc=%d\n  smithy: %s\n  oncebox: %s\n"
                  "  canonical request:\n%s\n  input: %s\n",
                  cJSON_GetObjectItemCaseSensitive(j, "id")->valueint,
                  want_kind, rc, jstr(exp, "authorization"),
                  rc == 0 ? out.authorization : "(error)",
                  rc == 0 ? out.canonical_request : "", text);
  } else {
    rc = ob__sigv4_presign(&req, &creds, &p, cache, &out);
    ok = rc == 0 && strcmp(out.signature, jstr(exp, "signature")) == 0 &&
         strcmp(out.signed_headers, jstr(exp, "signed_headers")) == 0;
    if (ok) {
      /* X-Amz-Credential as @smithy set it (decoded) = key id / scope. */
      char cred[512];
      snprintf(cred, sizeof cred, "%s/%s/%s/%s/aws4_request",
               creds.access_key_id, out.date, p.region, p.service);
      ok = strcmp(cred, jstr(exp, "credential")) == 0;
    }
    if (!ok)
      print_error("id %d (%s/presign) rc=%d\n  smithy: %s %s\n  oncebox: %s "
                  "%s\n  canonical request:\n%s\n  input: %s\n",
                  cJSON_GetObjectItemCaseSensitive(j, "id")->valueint,
                  want_kind, rc, jstr(exp, "signature"),
                  jstr(exp, "signed_headers"), rc == 0 ? out.signature : "",
                  rc == 0 ? out.signed_headers : "",
                  rc == 0 ? out.canonical_request : "", text);
  }
  ob__sigv4_out_free(&out);
  free(body);
  free(headers);
  cJSON_Delete(j);
  return ok;
}

static void run_kind(const char* kind, size_t min_count) {
  size_t seen = 0, bad = 0;
  ob__sigv4_cache_t cache;
  skip_if_unavailable();
  ob__sigv4_cache_init(&cache);
  for (size_t i = 0; i < g.n; i++) {
    int matched;
    int ok = check_line(g.lines[i], kind, &matched, &cache);
    seen += (size_t)matched;
    if (matched && !ok) bad++;
    if (bad >= 5) break;
  }
  ob__sigv4_cache_clear(&cache);
  print_message("%s: %zu requests re-signed, %zu disagree with "
                "@smithy/signature-v4 (seed %s)\n",
                kind, seen, bad, g.seed);
  assert_int_equal(bad, 0);
  assert_true(seen >= min_count);
}

static void test_sqs_requests_agree(void** state) {
  (void)state;
  run_kind("sqs", MIN_SQS_REQUESTS);
}

static void test_generic_requests_agree(void** state) {
  (void)state;
  run_kind("generic", 20);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sqs_requests_agree),
      cmocka_unit_test(test_generic_requests_agree),
  };
  return cmocka_run_group_tests_name("sigv4_smithy", tests, group_setup,
                                     group_teardown);
}
