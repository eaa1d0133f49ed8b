/* SPDX-License-Identifier: Apache-2.0 */
#include "tests/integration/sqs/sqs_test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/support/testsupport.h"

static int file_exists(const char* p) {
  struct stat st;
  return stat(p, &st) == 0;
}

const char* sq_skip_reason(void) {
  static char why[4600];
  const char* src = getenv("OB_SOURCE_DIR");
  char p[4300];
  static const char* const need[] = {
      "fauxqs/dist/app.js", "@smithy/signature-v4/package.json",
      "@aws-crypto/sha256-js/package.json"};
  if (src == NULL) return "skipped: OB_SOURCE_DIR is not set (run through ctest)";
  FILE* v;
  int major = 0;
  if (system("node --version >/dev/null 2>&1") != 0)
    return "skipped: node not found (install Node.js >= 20)";
  /* fauxqs 1.9.2 (fastify 5) needs Node 20; Debian 12's nodejs is 18. */
  v = popen("node -p \"process.versions.node.split('.')[0]\" 2>/dev/null", "r");
  if (v != NULL) {
    if (fscanf(v, "%d", &major) != 1) major = 0;
    pclose(v);
  }
  if (major < 20) {
    snprintf(why, sizeof why,
             "skipped: node %d found, fauxqs needs Node.js >= 20", major);
    return why;
  }
  for (size_t i = 0; i < sizeof need / sizeof need[0]; i++) {
    snprintf(p, sizeof p, "%s/tests/interop/node_modules/%s", src, need[i]);
    if (!file_exists(p)) {
      snprintf(why, sizeof why,
               "skipped: %s missing (run: cd %s/tests/interop && npm ci)", p,
               src);
      return why;
    }
  }
  return NULL;
}

int sq_server_start(sq_server_t* s, const char* tag, const char* token) {
  return sq_server_start_backend(s, tag, token, NULL);
}

int sq_server_start_backend(sq_server_t* s, const char* tag,
                            const char* token, const char* backend) {
  const char* src = getenv("OB_SOURCE_DIR");
  char script[4200];
  char* saved = NULL;
  char* out;
  memset(s, 0, sizeof *s);
  s->dir = ts_mkdtemp(tag);
  s->pki = ts_path(s->dir, "pki");
  s->ca_file = ts_path(s->pki, "ca.crt");
  if (ht_gen_pki(s->pki) != 0) {
    fprintf(stderr, "gen_pki.sh failed\n");
    return -1;
  }
  snprintf(script, sizeof script, "%s/tests/integration/sqs/sqs_server.mjs",
           src);
  if (token != NULL) setenv("OB_SQS_SESSION_TOKEN", token, 1);
  else unsetenv("OB_SQS_SESSION_TOKEN");
  if (backend != NULL) {
    /* Named for this server only: the caller's OB_SQS_BACKEND comes back. */
    const char* was = getenv("OB_SQS_BACKEND");
    if (was != NULL) saved = strdup(was);
    setenv("OB_SQS_BACKEND", backend, 1);
  }
  out = ts_path(s->dir, "server.out");
  {
    const char* argv[] = {"node", script, s->pki, SQ_AKID, SQ_SECRET,
                          SQ_REGION, NULL};
    s->proc = ht_spawn(argv, out);
  }
  free(out);
  unsetenv("OB_SQS_SESSION_TOKEN");
  if (backend != NULL) {
    if (saved != NULL) setenv("OB_SQS_BACKEND", saved, 1);
    else unsetenv("OB_SQS_BACKEND");
    free(saved);
  }
  if (s->proc == NULL) return -1;
  s->port = ht_wait_number(s->proc, "PORT ", 20000);
  if (s->port <= 0) {
    char* o = ht_output(s->proc);
    fprintf(stderr, "sqs_server.mjs did not start:\n%s\n", o);
    free(o);
    return -1;
  }
  snprintf(s->endpoint, sizeof s->endpoint, "https://%s:%d", SQ_HOST,
           s->port);
  /* Printed before PORT, so it is there already. */
  s->fauxqs_port = ht_wait_number(s->proc, "FAUXQS ", 5000);
  if (s->fauxqs_port <= 0) {
    fprintf(stderr, "sqs_server.mjs printed no FAUXQS line\n");
    return -1;
  }
  snprintf(s->plain_endpoint, sizeof s->plain_endpoint, "http://127.0.0.1:%d",
           s->fauxqs_port);
  return 0;
}

void sq_server_stop(sq_server_t* s) {
  ht_stop(s->proc);
  s->proc = NULL;
  free(s->ca_file);
  free(s->pki);
  if (s->dir) ts_rmdir(s->dir);
  memset(s, 0, sizeof *s);
}

char* sq_control(const sq_server_t* s, const char* route, const char* json,
                 int* http_status) {
  uv_loop_t loop;
  ob__http_client_t* c = NULL;
  ob__http_config_t cfg;
  ob__http_resolve_t r = {SQ_HOST, "127.0.0.1"};
  ht_result_t res;
  char url[256];
  char err[256];
  char* body = NULL;
  int rc;

  uv_loop_init(&loop);
  ob__http_config_init(&cfg);
  cfg.ca_file = s->ca_file;
  cfg.resolve = &r;
  cfg.nresolve = 1;
  if (ob__http_client_open(&c, &loop, &cfg, err, sizeof err) != 0) {
    fprintf(stderr, "sq_control: %s\n", err);
    uv_loop_close(&loop);
    return NULL;
  }
  snprintf(url, sizeof url, "%s%s", s->endpoint, route);
  rc = ht_fetch(&loop, c, json ? "POST" : "GET", url, json,
                json ? strlen(json) : 0, 10000, &res);
  if (rc == 0) {
    body = res.body;
    res.body = NULL;
    if (http_status) *http_status = res.http_status;
  } else {
    fprintf(stderr, "sq_control %s: %s\n", route, res.detail);
  }
  ht_result_free(&res);
  ht_close_client(&loop, c);
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
  return body;
}

char* sq_create_queue(const sq_server_t* s, const char* name,
                      const char* attributes_json) {
  char json[2048];
  char* body;
  char* url = NULL;
  const char* p;
  int st = 0;
  snprintf(json, sizeof json, "{\"QueueName\":\"%s\",\"Attributes\":%s}", name,
           attributes_json ? attributes_json : "{}");
  body = sq_control(s, "/_test/create", json, &st);
  if (body == NULL) return NULL;
  p = strstr(body, "\"QueueUrl\":\"");
  if (st == 200 && p != NULL) {
    const char* e;
    p += 12;
    e = strchr(p, '"');
    if (e != NULL) {
      url = malloc((size_t)(e - p) + 1);
      memcpy(url, p, (size_t)(e - p));
      url[e - p] = '\0';
    }
  }
  if (url == NULL) fprintf(stderr, "create %s failed: %d %s\n", name, st, body);
  free(body);
  return url;
}

void sq_fault(const sq_server_t* s, const char* json) {
  int st = 0;
  char* b = sq_control(s, "/_test/fault", json, &st);
  if (b == NULL || st != 200) {
    fprintf(stderr, "sq_fault failed\n");
    abort();
  }
  free(b);
}

void sq_clear(const sq_server_t* s) {
  free(sq_control(s, "/_test/clear", "{}", NULL));
}

int sq_count(const sq_server_t* s, const char* prefix) {
  return ht_count_lines(s->proc, prefix);
}

/* ---- clock ------------------------------------------------------------------ */
static int64_t sq_now(void* ctx) {
  sq_clock_t* c = ctx;
  uv_timeval64_t tv;
  uv_gettimeofday(&tv);
  return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000 + c->offset_ms;
}

static void sq_random(void* ctx, void* buf, size_t len) {
  sq_clock_t* c = ctx;
  uint8_t* b = buf;
  if (c->fraction >= 0) {
    /* rand01 = (v >> 11) / 2^53 with v read big-endian from 8 bytes. */
    uint64_t v = (uint64_t)(c->fraction * 9007199254740992.0) << 11;
    for (size_t i = 0; i < len; i++)
      b[i] = i < 8 ? (uint8_t)(v >> (56 - 8 * i)) : 0;
    return;
  }
  for (size_t i = 0; i < len; i++) {
    c->state ^= c->state >> 12;
    c->state ^= c->state << 25;
    c->state ^= c->state >> 27;
    b[i] = (uint8_t)((c->state * 2685821657736338717ull) >> 56);
  }
}

void sq_clock_init(sq_clock_t* c, int64_t offset_ms, double fraction) {
  memset(c, 0, sizeof *c);
  c->clock.ctx = c;
  c->clock.now_ms = sq_now;
  c->clock.random = sq_random;
  c->offset_ms = offset_ms;
  c->fraction = fraction;
  c->state = 0x9e3779b97f4a7c15ull;
}

static const ob__http_resolve_t k_resolve = {SQ_HOST, "127.0.0.1"};

void sq_client_config(const sq_server_t* s, ob__sqs_client_config_t* cfg,
                      const char* secret, const ob_clock_t* clock) {
  ob__sqs_client_config_init(cfg);
  cfg->endpoint = s->endpoint;
  cfg->region = SQ_REGION;
  cfg->access_key_id = SQ_AKID;
  cfg->secret_access_key = secret ? secret : SQ_SECRET;
  cfg->ca_file = s->ca_file;
  cfg->resolve = &k_resolve;
  cfg->nresolve = 1;
  cfg->clock = clock;
  cfg->connect_timeout_ms = 5000;
  cfg->request_timeout_ms = 10000;
}

/* ---- requests ----------------------------------------------------------------- */
void sq_cb(ob__sqs_req_t* req, int status) {
  sq_done_t* d = req->data;
  d->calls++;
  d->status = status;
}

int sq_wait(uv_loop_t* loop, ob__sqs_req_t* req) {
  sq_done_t* d = req->data;
  if (d->calls != 0) {
    fprintf(stderr, "callback ran inside the submitting call\n");
    abort();
  }
  while (d->calls == 0)
    if (uv_run(loop, UV_RUN_ONCE) == 0 && d->calls == 0) {
      fprintf(stderr, "loop went idle without the SQS callback\n");
      abort();
    }
  if (d->calls != 1) {
    fprintf(stderr, "callback ran %d times\n", d->calls);
    abort();
  }
  return d->status;
}
