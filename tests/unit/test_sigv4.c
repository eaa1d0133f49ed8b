/* SPDX-License-Identifier: Apache-2.0 */
/*
** SigV4 signer: the 38 cases of the AWS SigV4 test suite (aws-c-auth copy in
** $OB_SHARED_DIR/testdata/sigv4, never copied into this repository), both
** the Authorization-header and the presigned-query variants, compared byte
** for byte: canonical request, string to sign, signature and the signed
** request. Plus hand-written tests of the edges the suite does not reach.
**
** The folder is found through $OB_SHARED_DIR (set by ob_add_test); if it is
** missing the vector tests are skipped with a message, not failed.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "core/sigv4/sigv4.h"
#include "oncebox.h"
#include "tests/support/testsupport.h"

#define SUITE_CASES 38
#define MAX_HEADERS 32

/* ---------------------------------------------------------------------------
** Reading one case folder.
*/
static char* slurp(const char* dir, const char* file, size_t* len_out) {
  char path[4096];
  FILE* f;
  char* buf = NULL;
  long n;
  snprintf(path, sizeof path, "%s/%s", dir, file);
  f = fopen(path, "rb");
  if (f == NULL) return NULL;
  if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 ||
      fseek(f, 0, SEEK_SET) != 0)
    goto done;
  buf = malloc((size_t)n + 1);
  if (buf == NULL) goto done;
  if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
    goto done;
  }
  buf[n] = '\0';
  if (len_out) *len_out = (size_t)n;
done:
  fclose(f);
  return buf;
}

typedef struct vcase_s {
  char name[256];
  char dir[4096];
} vcase_t;

/* request.txt: "METHOD SP target SP HTTP/1.1", "Name:value" lines, lines
** starting with whitespace continue the previous header, a blank line, the
** body. The raw header lines are kept to rebuild the signed request. */
typedef struct vreq_s {
  char* text;
  size_t text_len;
  char* method;
  char* path;
  char* query;                      /* NULL if the target has no '?' */
  char* raw_headers;                /* header block as in the file, '\n' ended */
  ob__sigv4_header_t h[MAX_HEADERS];
  char* hname[MAX_HEADERS];
  char* hvalue[MAX_HEADERS];
  size_t nh;
  const char* body;
  size_t body_len;
} vreq_t;

static void vreq_free(vreq_t* r) {
  free(r->text);
  free(r->method);
  free(r->path);
  free(r->query);
  free(r->raw_headers);
  for (size_t i = 0; i < r->nh; i++) {
    free(r->hname[i]);
    free(r->hvalue[i]);
  }
  memset(r, 0, sizeof *r);
}

static char* dupn(const char* s, size_t n) {
  char* p = malloc(n + 1);
  assert_non_null(p);
  memcpy(p, s, n);
  p[n] = '\0';
  return p;
}

static void vreq_parse(vreq_t* r, const char* dir) {
  const char *p, *end, *line_end, *sp1, *sp2, *q;
  memset(r, 0, sizeof *r);
  r->text = slurp(dir, "request.txt", &r->text_len);
  assert_non_null(r->text);
  p = r->text;
  end = r->text + r->text_len;

  line_end = memchr(p, '\n', (size_t)(end - p));
  assert_non_null(line_end);
  sp1 = memchr(p, ' ', (size_t)(line_end - p));
  assert_non_null(sp1);
  sp2 = line_end;
  while (sp2 > sp1 && *sp2 != ' ') sp2--;
  assert_true(sp2 > sp1);  /* " HTTP/1.1" */
  r->method = dupn(p, (size_t)(sp1 - p));
  q = memchr(sp1 + 1, '?', (size_t)(sp2 - sp1 - 1));
  if (q) {
    r->path = dupn(sp1 + 1, (size_t)(q - sp1 - 1));
    r->query = dupn(q + 1, (size_t)(sp2 - q - 1));
  } else {
    r->path = dupn(sp1 + 1, (size_t)(sp2 - sp1 - 1));
  }
  p = line_end + 1;

  {
    const char* hstart = p;
    while (p < end && *p != '\n') {
      const char* colon;
      line_end = memchr(p, '\n', (size_t)(end - p));
      if (line_end == NULL) line_end = end;
      if (*p == ' ' || *p == '\t') {
        /* Folded line: keep the fold, the signer must turn it into one
        ** space ("value1 value2 value3"). */
        char* v;
        size_t old;
        assert_true(r->nh > 0);
        old = strlen(r->hvalue[r->nh - 1]);
        v = realloc(r->hvalue[r->nh - 1], old + 1 + (size_t)(line_end - p) + 1);
        assert_non_null(v);
        v[old] = '\n';
        memcpy(v + old + 1, p, (size_t)(line_end - p));
        v[old + 1 + (size_t)(line_end - p)] = '\0';
        r->hvalue[r->nh - 1] = v;
      } else {
        assert_true(r->nh < MAX_HEADERS);
        colon = memchr(p, ':', (size_t)(line_end - p));
        assert_non_null(colon);
        r->hname[r->nh] = dupn(p, (size_t)(colon - p));
        r->hvalue[r->nh] = dupn(colon + 1, (size_t)(line_end - colon - 1));
        r->nh++;
      }
      p = line_end < end ? line_end + 1 : end;
    }
    r->raw_headers = dupn(hstart, (size_t)(p - hstart));
  }
  for (size_t i = 0; i < r->nh; i++) {
    r->h[i].name = r->hname[i];
    r->h[i].value = r->hvalue[i];
  }
  if (p < end && *p == '\n') p++;  /* the blank line */
  r->body = p;
  r->body_len = (size_t)(end - p);
}

typedef struct vctx_s {
  cJSON* json;
  ob__aws_creds_t creds;
  ob__sigv4_params_t params;
} vctx_t;

static int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
  int64_t era, yoe, doy, doe;
  y -= m <= 2;
  era = (y >= 0 ? y : y - 399) / 400;
  yoe = y - era * 400;
  doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

static const char* jstr(const cJSON* o, const char* k) {
  const cJSON* v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int jbool(const cJSON* o, const char* k, int dflt) {
  const cJSON* v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsBool(v) ? cJSON_IsTrue(v) : dflt;
}

static void vctx_parse(vctx_t* c, const char* dir) {
  char* text = slurp(dir, "context.json", NULL);
  const cJSON* cred;
  const cJSON* exp;
  const char* ts;
  int y, mo, d, h, mi, s;
  assert_non_null(text);
  memset(c, 0, sizeof *c);
  c->json = cJSON_Parse(text);
  free(text);
  assert_non_null(c->json);
  cred = cJSON_GetObjectItemCaseSensitive(c->json, "credentials");
  assert_true(cJSON_IsObject(cred));
  c->creds.access_key_id = jstr(cred, "access_key_id");
  c->creds.secret_access_key = jstr(cred, "secret_access_key");
  c->creds.session_token = jstr(cred, "token");
  assert_non_null(c->creds.access_key_id);
  assert_non_null(c->creds.secret_access_key);

  ob__sigv4_params_init(&c->params);
  c->params.region = jstr(c->json, "region");
  c->params.service = jstr(c->json, "service");
  assert_non_null(c->params.region);
  assert_non_null(c->params.service);
  c->params.normalize = jbool(c->json, "normalize", 1);
  c->params.sign_body = jbool(c->json, "sign_body", 0);
  c->params.omit_session_token = jbool(c->json, "omit_session_token", 0);
  exp = cJSON_GetObjectItemCaseSensitive(c->json, "expiration_in_seconds");
  if (cJSON_IsNumber(exp)) c->params.expires_s = (int64_t)exp->valuedouble;
  ts = jstr(c->json, "timestamp");
  assert_non_null(ts);
  assert_int_equal(sscanf(ts, "%d-%d-%dT%d:%d:%dZ", &y, &mo, &d, &h, &mi, &s),
                   6);
  c->params.time_s =
      days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s;
}

static void vctx_free(vctx_t* c) {
  cJSON_Delete(c->json);
  memset(c, 0, sizeof *c);
}

static void expect_file(const char* dir, const char* file, const char* got) {
  size_t n;
  char* want = slurp(dir, file, &n);
  if (want == NULL) fail_msg("%s/%s: cannot read", dir, file);
  if (strcmp(want, got) != 0)
    print_error("mismatch in %s/%s\n--- want\n%s\n--- got\n%s\n", dir, file,
                want, got);
  assert_string_equal(got, want);
  free(want);
}

static void sb_cat(char** buf, size_t* len, const char* s, size_t n) {
  char* p = realloc(*buf, *len + n + 1);
  assert_non_null(p);
  memcpy(p + *len, s, n);
  *len += n;
  p[*len] = '\0';
  *buf = p;
}

static void sb_cats(char** buf, size_t* len, const char* s) {
  sb_cat(buf, len, s, strlen(s));
}

/* ---------------------------------------------------------------------------
** Vector tests.
*/
static const char* g_vector_dir;  /* NULL: not found */
static char g_vector_path[4096];

static void skip_if_no_vectors(void) {
  if (g_vector_dir == NULL) {
    print_message("skipped: SigV4 test suite not found (expected at "
                  "$OB_SHARED_DIR/testdata/sigv4; OB_SHARED_DIR=%s)\n",
                  getenv("OB_SHARED_DIR") ? getenv("OB_SHARED_DIR")
                                          : "(unset)");
    skip();
  }
}

static void request_of(const vreq_t* r, ob__sigv4_request_t* req) {
  memset(req, 0, sizeof *req);
  req->method = r->method;
  req->path = r->path;
  req->query = r->query;
  req->headers = r->h;
  req->nheaders = r->nh;
  req->body = r->body;
  req->body_len = r->body_len;
}

static void test_vector_header(void** state) {
  const vcase_t* vc = *state;
  vreq_t r;
  vctx_t c;
  ob__sigv4_request_t req;
  ob__sigv4_out_t out;
  char* signed_req = NULL;
  size_t len = 0;
  skip_if_no_vectors();
  vreq_parse(&r, vc->dir);
  vctx_parse(&c, vc->dir);
  request_of(&r, &req);
  assert_int_equal(ob__sigv4_sign(&req, &c.creds, &c.params, NULL, &out), 0);
  expect_file(vc->dir, "header-canonical-request.txt", out.canonical_request);
  expect_file(vc->dir, "header-string-to-sign.txt", out.string_to_sign);
  expect_file(vc->dir, "header-signature.txt", out.signature);
  assert_null(out.presigned_query);

  /* The signed request: the original request line and headers, then
  ** X-Amz-Security-Token, X-Amz-Date, x-amz-content-sha256, Authorization
  ** (the suite's order), a blank line, the body. */
  sb_cats(&signed_req, &len, r.method);
  sb_cats(&signed_req, &len, " ");
  sb_cats(&signed_req, &len, r.path);
  if (r.query) {
    sb_cats(&signed_req, &len, "?");
    sb_cats(&signed_req, &len, r.query);
  }
  sb_cats(&signed_req, &len, " HTTP/1.1\n");
  sb_cats(&signed_req, &len, r.raw_headers);
  if (c.creds.session_token) {
    sb_cats(&signed_req, &len, "X-Amz-Security-Token:");
    sb_cats(&signed_req, &len, c.creds.session_token);
    sb_cats(&signed_req, &len, "\n");
  }
  sb_cats(&signed_req, &len, "X-Amz-Date:");
  sb_cats(&signed_req, &len, out.amz_date);
  sb_cats(&signed_req, &len, "\n");
  if (c.params.sign_body) {
    sb_cats(&signed_req, &len, "x-amz-content-sha256:");
    sb_cats(&signed_req, &len, out.payload_hash);
    sb_cats(&signed_req, &len, "\n");
  }
  sb_cats(&signed_req, &len, "Authorization:");
  sb_cats(&signed_req, &len, out.authorization);
  sb_cats(&signed_req, &len, "\n\n");
  sb_cat(&signed_req, &len, r.body, r.body_len);
  expect_file(vc->dir, "header-signed-request.txt", signed_req);

  /* The same through a cache, twice: identical bytes, one derivation. */
  {
    ob__sigv4_cache_t cache;
    ob__sigv4_out_t o2;
    ob__sigv4_cache_init(&cache);
    for (int i = 0; i < 2; i++) {
      assert_int_equal(ob__sigv4_sign(&req, &c.creds, &c.params, &cache, &o2),
                       0);
      assert_string_equal(o2.authorization, out.authorization);
      ob__sigv4_out_free(&o2);
    }
    assert_int_equal(cache.misses, 1);
    assert_int_equal(cache.hits, 1);
    ob__sigv4_cache_clear(&cache);
  }

  free(signed_req);
  ob__sigv4_out_free(&out);
  vctx_free(&c);
  vreq_free(&r);
}

static void test_vector_query(void** state) {
  const vcase_t* vc = *state;
  vreq_t r;
  vctx_t c;
  ob__sigv4_request_t req;
  ob__sigv4_out_t out;
  char* signed_req = NULL;
  size_t len = 0;
  skip_if_no_vectors();
  vreq_parse(&r, vc->dir);
  vctx_parse(&c, vc->dir);
  request_of(&r, &req);
  assert_int_equal(ob__sigv4_presign(&req, &c.creds, &c.params, NULL, &out),
                   0);
  expect_file(vc->dir, "query-canonical-request.txt", out.canonical_request);
  expect_file(vc->dir, "query-string-to-sign.txt", out.string_to_sign);
  expect_file(vc->dir, "query-signature.txt", out.signature);
  assert_null(out.authorization);

  sb_cats(&signed_req, &len, r.method);
  sb_cats(&signed_req, &len, " ");
  sb_cats(&signed_req, &len, r.path);
  sb_cats(&signed_req, &len, "?");
  if (r.query) {
    sb_cats(&signed_req, &len, r.query);
    sb_cats(&signed_req, &len, "&");
  }
  sb_cats(&signed_req, &len, out.presigned_query);
  sb_cats(&signed_req, &len, " HTTP/1.1\n");
  sb_cats(&signed_req, &len, r.raw_headers);
  sb_cats(&signed_req, &len, "\n");
  sb_cat(&signed_req, &len, r.body, r.body_len);
  expect_file(vc->dir, "query-signed-request.txt", signed_req);

  free(signed_req);
  ob__sigv4_out_free(&out);
  vctx_free(&c);
  vreq_free(&r);
}

static int g_ncases;

static void test_suite_complete(void** state) {
  (void)state;
  skip_if_no_vectors();
  assert_int_equal(g_ncases, SUITE_CASES);
}

/* ---------------------------------------------------------------------------
** Hand-written tests.
*/
static const ob__aws_creds_t k_creds = {
    "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", NULL};

static void params_default(ob__sigv4_params_t* p) {
  ob__sigv4_params_init(p);
  p->region = "us-east-1";
  p->service = "service";
  p->time_s = 1440938160; /* 20150830T123600Z */
}

static void test_amz_date(void** state) {
  char d[17];
  (void)state;
  assert_int_equal(ob__sigv4_amz_date(0, d), 0);
  assert_string_equal(d, "19700101T000000Z");
  assert_int_equal(ob__sigv4_amz_date(1440938160, d), 0);
  assert_string_equal(d, "20150830T123600Z");
  assert_int_equal(ob__sigv4_amz_date(951782400, d), 0);
  assert_string_equal(d, "20000229T000000Z");
  assert_int_equal(ob__sigv4_amz_date(4107542399, d), 0);
  assert_string_equal(d, "21000228T235959Z");
  assert_int_equal(ob__sigv4_amz_date(4107542400, d), 0);
  assert_string_equal(d, "21000301T000000Z"); /* 2100 is not leap */
  assert_int_equal(ob__sigv4_amz_date(INT64_C(253402300799), d), 0);
  assert_string_equal(d, "99991231T235959Z");
  assert_int_equal(ob__sigv4_amz_date(-1, d), OB_EINVAL);
  assert_int_equal(ob__sigv4_amz_date(INT64_C(253402300800), d), OB_EINVAL);
}

static int sign_one(const ob__sigv4_header_t* h, size_t nh, const char* path,
                    const char* query, const ob__sigv4_params_t* p,
                    ob__sigv4_out_t* out) {
  ob__sigv4_request_t req;
  memset(&req, 0, sizeof req);
  req.method = "GET";
  req.path = path;
  req.query = query;
  req.headers = h;
  req.nheaders = nh;
  return ob__sigv4_sign(&req, &k_creds, p, NULL, out);
}

static void test_refuses_bad_input(void** state) {
  ob__sigv4_params_t p;
  ob__sigv4_out_t out;
  ob__sigv4_header_t host = {"Host", "example.amazonaws.com"};
  ob__sigv4_header_t h2[2] = {{"Host", "example.amazonaws.com"}, {0, 0}};
  (void)state;
  params_default(&p);

  /* No Host. */
  h2[1].name = "X-Foo";
  h2[1].value = "bar";
  assert_int_equal(sign_one(&h2[1], 1, "/", NULL, &p, &out), OB_EINVAL);
  assert_null(out.canonical_request);
  assert_string_equal(out.signature, "");

  /* Headers the signer owns. */
  {
    static const char* const owned[] = {"X-Amz-Date", "authorization",
                                        "X-AMZ-SECURITY-TOKEN"};
    for (size_t i = 0; i < 3; i++) {
      h2[1].name = owned[i];
      h2[1].value = "x";
      assert_int_equal(sign_one(h2, 2, "/", NULL, &p, &out), OB_EINVAL);
    }
  }
  /* Header injection through a bare CR/LF; bad names. */
  h2[1].name = "X-Foo";
  h2[1].value = "a\r\nEvil: 1";
  assert_int_equal(sign_one(h2, 2, "/", NULL, &p, &out), OB_EINVAL);
  h2[1].value = "a\nEvil: 1";
  assert_int_equal(sign_one(h2, 2, "/", NULL, &p, &out), OB_EINVAL);
  h2[1].value = "a\x01";
  assert_int_equal(sign_one(h2, 2, "/", NULL, &p, &out), OB_EINVAL);
  h2[1].name = "X Foo";
  h2[1].value = "a";
  assert_int_equal(sign_one(h2, 2, "/", NULL, &p, &out), OB_EINVAL);
  h2[1].name = "";
  assert_int_equal(sign_one(h2, 2, "/", NULL, &p, &out), OB_EINVAL);

  /* Scope parts, time, path. */
  p.region = "us east";
  assert_int_equal(sign_one(&host, 1, "/", NULL, &p, &out), OB_EINVAL);
  p.region = "";
  assert_int_equal(sign_one(&host, 1, "/", NULL, &p, &out), OB_EINVAL);
  params_default(&p);
  p.service = "s/q";
  assert_int_equal(sign_one(&host, 1, "/", NULL, &p, &out), OB_EINVAL);
  params_default(&p);
  p.time_s = -5;
  assert_int_equal(sign_one(&host, 1, "/", NULL, &p, &out), OB_EINVAL);
  params_default(&p);
  assert_int_equal(sign_one(&host, 1, "relative", NULL, &p, &out), OB_EINVAL);
  assert_int_equal(sign_one(&host, 1, "/a\r\nX: y", NULL, &p, &out),
                   OB_EINVAL);
  assert_int_equal(sign_one(&host, 1, "/", "a=b\n", &p, &out), OB_EINVAL);
  assert_int_equal(sign_one(&host, 1, "/\x7f", NULL, &p, &out), OB_EINVAL);

  /* Credentials. */
  {
    ob__sigv4_request_t req;
    ob__aws_creds_t c = k_creds;
    memset(&req, 0, sizeof req);
    req.method = "GET";
    req.headers = &host;
    req.nheaders = 1;
    c.access_key_id = "AKID/X";
    assert_int_equal(ob__sigv4_sign(&req, &c, &p, NULL, &out), OB_EINVAL);
    c = k_creds;
    c.secret_access_key = "";
    assert_int_equal(ob__sigv4_sign(&req, &c, &p, NULL, &out), OB_EINVAL);
    c = k_creds;
    c.session_token = "tok\nen";
    assert_int_equal(ob__sigv4_sign(&req, &c, &p, NULL, &out), OB_EINVAL);
    req.method = "GE T";
    assert_int_equal(ob__sigv4_sign(&req, &k_creds, &p, NULL, &out),
                     OB_EINVAL);
    req.method = "GET";
    req.body_len = 3; /* body NULL */
    assert_int_equal(ob__sigv4_sign(&req, &k_creds, &p, NULL, &out),
                     OB_EINVAL);
    req.body_len = 0;
    /* Presign: expiry bounds, and X-Amz-* parameters owned by the signer. */
    p.expires_s = 0;
    assert_int_equal(ob__sigv4_presign(&req, &k_creds, &p, NULL, &out),
                     OB_EINVAL);
    p.expires_s = 604801;
    assert_int_equal(ob__sigv4_presign(&req, &k_creds, &p, NULL, &out),
                     OB_EINVAL);
    p.expires_s = 604800;
    assert_int_equal(ob__sigv4_presign(&req, &k_creds, &p, NULL, &out), 0);
    ob__sigv4_out_free(&out);
    req.query = "a=1&x-amz-date=20150830T123600Z";
    assert_int_equal(ob__sigv4_presign(&req, &k_creds, &p, NULL, &out),
                     OB_EINVAL);
  }
  assert_int_equal(ob__sigv4_sign(NULL, &k_creds, &p, NULL, &out), OB_EINVAL);
  ob__sigv4_out_free(NULL);
}

static void test_canonical_headers(void** state) {
  ob__sigv4_params_t p;
  ob__sigv4_out_t out;
  const ob__sigv4_header_t h[] = {
      {"Host", "example.amazonaws.com"},
      {"User-Agent", "oncebox/0.1"},          /* never signed */
      {"Connection", "keep-alive"},
      {"Proxy-Authorization", "Basic x"},
      {"Sec-Fetch-Mode", "cors"},
      {"X-Amzn-Trace-Id", "Root=1"},
      {"Transfer-Encoding", "chunked"},
      {"X-Multi", "\t a \t\t b  \r\n   c \t"}, /* tabs, fold, trim */
      {"x-dup", "2"},
      {"X-DUP", " 1 "},
      {"Content-Type", "application/x-amz-json-1.0"},
  };
  (void)state;
  params_default(&p);
  assert_int_equal(sign_one(h, sizeof h / sizeof h[0], "/", NULL, &p, &out),
                   0);
  assert_string_equal(out.signed_headers,
                      "content-type;host;x-amz-date;x-dup;x-multi");
  assert_string_equal(out.canonical_request,
                      "GET\n/\n\n"
                      "content-type:application/x-amz-json-1.0\n"
                      "host:example.amazonaws.com\n"
                      "x-amz-date:20150830T123600Z\n"
                      "x-dup:2,1\n"
                      "x-multi:a b c\n"
                      "\n"
                      "content-type;host;x-amz-date;x-dup;x-multi\n"
                      "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b"
                      "7852b855");
  assert_non_null(strstr(out.authorization,
                         "SignedHeaders=content-type;host;x-amz-date;x-dup;"
                         "x-multi, Signature="));
  /* The secret never appears in anything we hand out. */
  assert_null(strstr(out.authorization, k_creds.secret_access_key));
  assert_null(strstr(out.canonical_request, k_creds.secret_access_key));
  assert_null(strstr(out.string_to_sign, k_creds.secret_access_key));
  ob__sigv4_out_free(&out);
  ob__sigv4_out_free(&out); /* twice is harmless */
}

static void test_sign_body_and_unsigned_payload(void** state) {
  ob__sigv4_params_t p;
  ob__sigv4_out_t out;
  ob__sigv4_request_t req;
  ob__sigv4_header_t h[2] = {{"Host", "sqs.eu-west-1.amazonaws.com"},
                             {"X-Amz-Content-SHA256", " UNSIGNED-PAYLOAD "}};
  (void)state;
  params_default(&p);
  memset(&req, 0, sizeof req);
  req.method = "POST";
  req.headers = h;
  req.nheaders = 1;
  req.body = "{}";
  req.body_len = 2;
  p.sign_body = 1;
  assert_int_equal(ob__sigv4_sign(&req, &k_creds, &p, NULL, &out), 0);
  /* sha256("{}") */
  assert_string_equal(out.payload_hash,
                      "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060"
                      "f61caaff8a");
  assert_string_equal(out.signed_headers, "host;x-amz-content-sha256;x-amz-date");
  assert_non_null(strstr(out.canonical_request,
                         "\nx-amz-content-sha256:44136fa355b3678a1146ad16f7e8"
                         "649e94fb4fc21fe77e8310c060f61caaff8a\n"));
  ob__sigv4_out_free(&out);

  /* A caller's x-amz-content-sha256 is the payload hash, signed as given. */
  req.nheaders = 2;
  assert_int_equal(ob__sigv4_sign(&req, &k_creds, &p, NULL, &out), 0);
  assert_string_equal(out.payload_hash, "UNSIGNED-PAYLOAD");
  assert_string_equal(out.signed_headers, "host;x-amz-content-sha256;x-amz-date");
  {
    const char* tail = "\nUNSIGNED-PAYLOAD";
    size_t n = strlen(out.canonical_request);
    assert_string_equal(out.canonical_request + n - strlen(tail), tail);
  }
  ob__sigv4_out_free(&out);
}

static void test_canonical_query_and_path(void** state) {
  ob__sigv4_params_t p;
  ob__sigv4_out_t out;
  const ob__sigv4_header_t host = {"Host", "example.amazonaws.com"};
  (void)state;
  params_default(&p);
  /* Invalid escapes stay literal; '+' is not a space; a key without '='
  ** gets an empty value; repeated keys sort by value; empty pairs vanish;
  ** X-Amz-Signature is never signed. */
  assert_int_equal(sign_one(&host, 1, "/", "b=%41%2f&a=%zz&k=b&k=a&&c&p=a+b"
                            "&X-Amz-Signature=ff&t=%&e=", &p, &out), 0);
  assert_non_null(strstr(out.canonical_request,
                         "\na=%25zz&b=A%2F&c=&e=&k=a&k=b&p=a%2Bb&t=%25\n"));
  ob__sigv4_out_free(&out);

  /* Path: double encoding of an already encoded path, normalisation. */
  assert_int_equal(sign_one(&host, 1, "/a%20b/./c/../d//e/", NULL, &p, &out),
                   0);
  assert_non_null(strstr(out.canonical_request, "GET\n/a%2520b/d/e/\n"));
  ob__sigv4_out_free(&out);
  assert_int_equal(sign_one(&host, 1, "/..", NULL, &p, &out), 0);
  assert_non_null(strstr(out.canonical_request, "GET\n/\n"));
  ob__sigv4_out_free(&out);
  assert_int_equal(sign_one(&host, 1, "", NULL, &p, &out), 0);
  assert_non_null(strstr(out.canonical_request, "GET\n/\n"));
  ob__sigv4_out_free(&out);
  p.normalize = 0;
  assert_int_equal(sign_one(&host, 1, "/a b/./c//", NULL, &p, &out), 0);
  assert_non_null(strstr(out.canonical_request, "GET\n/a%20b/./c//\n"));
  ob__sigv4_out_free(&out);
}

static void test_session_token_modes(void** state) {
  ob__sigv4_params_t p;
  ob__sigv4_out_t out;
  ob__sigv4_request_t req;
  ob__aws_creds_t c = k_creds;
  const ob__sigv4_header_t host = {"Host", "example.amazonaws.com"};
  (void)state;
  params_default(&p);
  c.session_token = "TOKEN/+=";
  memset(&req, 0, sizeof req);
  req.method = "GET";
  req.headers = &host;
  req.nheaders = 1;
  assert_int_equal(ob__sigv4_sign(&req, &c, &p, NULL, &out), 0);
  assert_string_equal(out.signed_headers, "host;x-amz-date;x-amz-security-token");
  ob__sigv4_out_free(&out);
  p.omit_session_token = 1;
  assert_int_equal(ob__sigv4_sign(&req, &c, &p, NULL, &out), 0);
  assert_string_equal(out.signed_headers, "host;x-amz-date");
  assert_null(strstr(out.canonical_request, "TOKEN"));
  ob__sigv4_out_free(&out);
  assert_int_equal(ob__sigv4_presign(&req, &c, &p, NULL, &out), 0);
  assert_null(strstr(out.canonical_request, "TOKEN"));
  assert_non_null(strstr(out.presigned_query,
                         "&X-Amz-Security-Token=TOKEN%2F%2B%3D&X-Amz-Signature="));
  ob__sigv4_out_free(&out);
  p.omit_session_token = 0;
  assert_int_equal(ob__sigv4_presign(&req, &c, &p, NULL, &out), 0);
  assert_non_null(strstr(out.canonical_request,
                         "&X-Amz-Security-Token=TOKEN%2F%2B%3D&"));
  ob__sigv4_out_free(&out);
}

static void test_key_cache(void** state) {
  ob__sigv4_params_t p;
  ob__sigv4_out_t out;
  ob__sigv4_request_t req;
  ob__sigv4_cache_t cache;
  ob__aws_creds_t c = k_creds;
  const ob__sigv4_header_t host = {"Host", "example.amazonaws.com"};
  char sig_a[65], sig_b[65];
  static const char* const regions[] = {"r1", "r2", "r3", "r4", "r5"};
  (void)state;
  params_default(&p);
  memset(&req, 0, sizeof req);
  req.method = "GET";
  req.headers = &host;
  req.nheaders = 1;
  ob__sigv4_cache_init(&cache);

  /* Same day, later time: a hit, and the same result as uncached. */
  assert_int_equal(ob__sigv4_sign(&req, &c, &p, &cache, &out), 0);
  ob__sigv4_out_free(&out);
  p.time_s += 3600;
  assert_int_equal(ob__sigv4_sign(&req, &c, &p, &cache, &out), 0);
  memcpy(sig_a, out.signature, 65);
  ob__sigv4_out_free(&out);
  assert_int_equal(cache.misses, 1);
  assert_int_equal(cache.hits, 1);
  assert_int_equal(ob__sigv4_sign(&req, &c, &p, NULL, &out), 0);
  assert_string_equal(out.signature, sig_a);
  ob__sigv4_out_free(&out);

  /* Next day: a miss. */
  p.time_s += 86400;
  assert_int_equal(ob__sigv4_sign(&req, &c, &p, &cache, &out), 0);
  ob__sigv4_out_free(&out);
  assert_int_equal(cache.misses, 2);

  /* Same key id, rotated secret: never the stale key. */
  params_default(&p);
  p.time_s += 3600;
  c.secret_access_key = "another-secret";
  assert_int_equal(ob__sigv4_sign(&req, &c, &p, &cache, &out), 0);
  memcpy(sig_b, out.signature, 65);
  ob__sigv4_out_free(&out);
  assert_int_equal(cache.misses, 3);
  assert_string_not_equal(sig_a, sig_b);
  assert_int_equal(ob__sigv4_sign(&req, &c, &p, NULL, &out), 0);
  assert_string_equal(out.signature, sig_b);
  ob__sigv4_out_free(&out);

  /* More scopes than slots: eviction, results still right. */
  for (size_t i = 0; i < 5; i++) {
    ob__sigv4_out_t o2;
    p.region = regions[i];
    assert_int_equal(ob__sigv4_sign(&req, &c, &p, &cache, &out), 0);
    assert_int_equal(ob__sigv4_sign(&req, &c, &p, NULL, &o2), 0);
    assert_string_equal(out.signature, o2.signature);
    ob__sigv4_out_free(&out);
    ob__sigv4_out_free(&o2);
  }
  assert_int_equal(cache.misses, 8);

  /* clear wipes everything. */
  ob__sigv4_cache_clear(&cache);
  {
    const unsigned char* b = (const unsigned char*)&cache;
    for (size_t i = 0; i < sizeof cache; i++) assert_int_equal(b[i], 0);
  }
  ob__sigv4_cache_clear(NULL);
}

/* Random bytes in every free-form input: 0 or OB_EINVAL, never a crash or
** a leak (run under ASan/valgrind), and a success is always complete. */
static void test_random_inputs(void** state) {
  uint64_t x = 0x2545F4914F6CDD1DULL;
  char path[40], query[40], name[12], value[40];
  int ok = 0, refused = 0;
  (void)state;
  for (int iter = 0; iter < 20000; iter++) {
    ob__sigv4_params_t p;
    ob__sigv4_out_t out;
    ob__sigv4_request_t req;
    ob__sigv4_header_t h[2] = {{"Host", "example.amazonaws.com"},
                               {name, value}};
    char* bufs[4] = {path, query, name, value};
    size_t lens[4] = {sizeof path, sizeof query, sizeof name, sizeof value};
    int rc;
    for (int b = 0; b < 4; b++) {
      size_t n;
      x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
      n = (size_t)(x % lens[b]);
      for (size_t i = 0; i < n; i++) {
        x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
        /* Mostly the interesting ASCII, sometimes any byte. */
        static const char pick[] = "/.%&=+ ~a9:\r\n\t";
        static const char tchar[] = "abcXYZ09-_~!#";
        if (b == 2)  /* header names: mostly valid tokens */
          bufs[b][i] = (x & 15) ? tchar[(x >> 8) % (sizeof tchar - 1)]
                                : (char)(1 + (x >> 8) % 255);
        else if (b == 3)  /* header values: folds and bare CR/LF too */
          bufs[b][i] = (x & 3) ? pick[(x >> 8) % (sizeof pick - 1)]
                               : (char)(1 + (x >> 8) % 255);
        else  /* path, query: rarely a raw byte (CTLs are refused) */
          bufs[b][i] = (x & 31) ? pick[(x >> 8) % (sizeof pick - 4)]
                                : (char)(1 + (x >> 8) % 255);
      }
      bufs[b][n] = '\0';
    }
    path[0] = '/';
    if (name[0] == '\0') strcpy(name, "x-n");
    params_default(&p);
    p.normalize = (int)(x & 1);
    memset(&req, 0, sizeof req);
    req.method = "GET";
    req.path = path;
    req.query = query;
    req.headers = h;
    req.nheaders = 2;
    rc = (x & 16) ? ob__sigv4_presign(&req, &k_creds, &p, NULL, &out)
                  : ob__sigv4_sign(&req, &k_creds, &p, NULL, &out);
    if (rc == 0) {
      assert_int_equal(strlen(out.signature), 64);
      assert_non_null(out.canonical_request);
      assert_true(out.authorization != NULL || out.presigned_query != NULL);
      ok++;
    } else {
      assert_int_equal(rc, OB_EINVAL);
      assert_null(out.canonical_request);
      refused++;
    }
    ob__sigv4_out_free(&out);
  }
  print_message("random inputs: %d signed, %d refused\n", ok, refused);
  assert_true(ok > 1000 && refused > 1000);
}

/* ---------------------------------------------------------------------------
** Discovery of the case folders and the test table.
*/
static int case_cmp(const void* a, const void* b) {
  return strcmp(((const vcase_t*)a)->name, ((const vcase_t*)b)->name);
}

static vcase_t* find_cases(const char* dir, int* n_out) {
  DIR* d = opendir(dir);
  struct dirent* e;
  vcase_t* cases = NULL;
  int n = 0;
  *n_out = 0;
  if (d == NULL) return NULL;
  errno = 0; /* readdir's NULL is also its error: then fail, not skip */
  while ((e = readdir(d)) != NULL) {
    char probe[4096 + 300];
    struct stat st;
    vcase_t* nc;
    if (e->d_name[0] == '.') continue;
    snprintf(probe, sizeof probe, "%s/%s/context.json", dir, e->d_name);
    if (stat(probe, &st) != 0) continue;
    nc = realloc(cases, (size_t)(n + 1) * sizeof *cases);
    if (nc == NULL) break;
    cases = nc;
    snprintf(cases[n].name, sizeof cases[n].name, "%s", e->d_name);
    snprintf(cases[n].dir, sizeof cases[n].dir, "%s/%s", dir, e->d_name);
    n++;
    errno = 0;
  }
  if (errno != 0) {
    fprintf(stderr, "sigv4: cannot read %s: %s\n", dir, strerror(errno));
    abort();
  }
  closedir(d);
  if (n) qsort(cases, (size_t)n, sizeof *cases, case_cmp);
  *n_out = n;
  return cases;
}

int main(void) {
  static const struct CMUnitTest fixed[] = {
      cmocka_unit_test(test_suite_complete),
      cmocka_unit_test(test_amz_date),
      cmocka_unit_test(test_refuses_bad_input),
      cmocka_unit_test(test_canonical_headers),
      cmocka_unit_test(test_sign_body_and_unsigned_payload),
      cmocka_unit_test(test_canonical_query_and_path),
      cmocka_unit_test(test_session_token_modes),
      cmocka_unit_test(test_key_cache),
      cmocka_unit_test(test_random_inputs),
  };
  const size_t nfixed = sizeof fixed / sizeof fixed[0];
  const char* shared = ts_shared_dir();
  vcase_t* cases = NULL;
  struct CMUnitTest* tests;
  char (*names)[300] = NULL;
  size_t n = 0;
  int rc;

  if (shared != NULL) {
    struct stat st;
    snprintf(g_vector_path, sizeof g_vector_path, "%s/testdata/sigv4", shared);
    if (stat(g_vector_path, &st) == 0 && S_ISDIR(st.st_mode))
      g_vector_dir = g_vector_path;
  }
  if (g_vector_dir != NULL) cases = find_cases(g_vector_dir, &g_ncases);
  if (g_vector_dir == NULL)
    printf("skipped: SigV4 vector folder not found ($OB_SHARED_DIR/testdata/"
           "sigv4, OB_SHARED_DIR=%s); only the hand-written tests run\n",
           getenv("OB_SHARED_DIR") ? getenv("OB_SHARED_DIR") : "(unset)");

  tests = calloc(nfixed + 2 * (size_t)g_ncases, sizeof *tests);
  if (g_ncases) names = calloc(2 * (size_t)g_ncases, sizeof *names);
  if (tests == NULL || (g_ncases && names == NULL)) return 1;
  for (size_t i = 0; i < nfixed; i++) tests[n++] = fixed[i];
  for (int i = 0; i < g_ncases; i++) {
    snprintf(names[2 * i], sizeof names[0], "header/%s", cases[i].name);
    snprintf(names[2 * i + 1], sizeof names[0], "query/%s", cases[i].name);
    tests[n].name = names[2 * i];
    tests[n].test_func = test_vector_header;
    tests[n].initial_state = &cases[i];
    n++;
    tests[n].name = names[2 * i + 1];
    tests[n].test_func = test_vector_query;
    tests[n].initial_state = &cases[i];
    n++;
  }
  rc = _cmocka_run_group_tests("sigv4", tests, n, NULL, NULL);
  free(tests);
  free(names);
  free(cases);
  return rc;
}
