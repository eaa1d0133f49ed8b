/* SPDX-License-Identifier: Apache-2.0 */
/*
** The metrics and health listener (ob_metrics_enable, `run
** --metrics-listen`) on the real program: the address rules, a port that is
** taken, hostile requests, a scrape during a run with a relay and an SQS
** consumer (fauxqs behind the SigV4-checking TLS terminator,
** integration/sqs/sqs_server.mjs) checked by promtool, and /health turning
** 503 and back for each reason, with `oncebox health` giving the same
** verdict as an exit code:
**   - disk_reserve: a size cap whose reserve the failure store fills, then
**     `failed remove` gives the space back;
**   - relay_failing: SQS answering 503 to everything (the terminator's
**     fault injection: what SQS does when it is unavailable), then not;
**   - effects_unknown: a payment provider that holds its answers past the
**     client's timeout (fence/provider_sim.mjs, "slow" mode), then answers.
**   - db_not_writable: the disk (a 4 MiB tmpfs, root only) filling under a
**     running engine, then space freed;
**   - failures: more messages moved to the failure store within the
**     period than allowed, then the period passing.
** The HTTP client here is a plain socket: what the listener must accept
** from any scraper is one GET with a Host header.
** Parts that need node (fauxqs, the provider simulator) skip with a reason
** when it is missing; promtool is checked when installed.
*/
#define _GNU_SOURCE 1  /* unshare(2) */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>
#include <cmocka.h>

#include "oncebox.h"
#include "tests/integration/fence/provider_sim_util.h"
#include "tests/integration/sqs/sqs_test_util.h"
#include "tests/support/testsupport.h"

static char g_oncebox[4200];

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* A port free right now on 127.0.0.1 (the kernel's choice). */
static int free_port(void) {
  struct sockaddr_in a;
  socklen_t n = sizeof a;
  int fd = socket(AF_INET, SOCK_STREAM, 0), port;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(bind(fd, (struct sockaddr*)&a, sizeof a), 0);
  assert_int_equal(getsockname(fd, (struct sockaddr*)&a, &n), 0);
  port = ntohs(a.sin_port);
  close(fd);
  return port;
}

/* Send raw bytes to 127.0.0.1:port and read until the server closes.
** Returns the HTTP status (0 when none came) and the whole answer in *out
** (malloc'd) when out is not NULL. */
static int http_raw(int port, const char* req, size_t len, char** out) {
  struct sockaddr_in a;
  char* buf = calloc(1, 1 << 20);
  size_t got = 0;
  int fd = socket(AF_INET, SOCK_STREAM, 0), status = 0;
  struct timeval tv = {10, 0};
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (connect(fd, (struct sockaddr*)&a, sizeof a) == 0) {
    if (len > 0) (void)!write(fd, req, len);
    for (;;) {
      ssize_t n = read(fd, buf + got, (1 << 20) - 1 - got);
      if (n <= 0) break;
      got += (size_t)n;
    }
  }
  close(fd);
  buf[got] = '\0';
  if (sscanf(buf, "HTTP/1.1 %d", &status) != 1) status = 0;
  if (out) *out = buf;
  else free(buf);
  return status;
}

static int http_str(int port, const char* req) {
  return http_raw(port, req, strlen(req), NULL);
}

static int http_get(int port, const char* path, char** body) {
  char req[512], *all = NULL, *b;
  int st;
  snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n"
           "User-Agent: Prometheus/2.42.0\r\nAccept: text/plain\r\n\r\n", path);
  st = http_raw(port, req, strlen(req), &all);
  b = strstr(all, "\r\n\r\n");
  if (body) *body = strdup(b ? b + 4 : "");
  free(all);
  return st;
}

/* The value of the sample "name{labels}" (exactly that text before the
** space), or -1 when absent. */
static double metric(const char* text, const char* sample) {
  size_t n = strlen(sample);
  for (const char* p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
    if (strncmp(p, sample, n) == 0 && p[n] == ' ') return atof(p + n + 1);
  return -1;
}

/* Every program started, so that one a failed assertion left running is
** killed at the end (teardown_all) instead of outliving the test. */
#define MAX_CHILDREN 32
static pid_t g_children[MAX_CHILDREN];
static int g_nchildren;

static void kill_children(void) {
  for (int i = 0; i < g_nchildren; i++)
    if (g_children[i] > 0 && kill(g_children[i], SIGKILL) == 0)
      (void)waitpid(g_children[i], NULL, 0);
  g_nchildren = 0;
}

/* `oncebox ARGS` in the background, stderr into errpath. */
static pid_t start_oncebox(const char* args, const char* errpath) {
  char cmd[8192];
  pid_t pid;
  snprintf(cmd, sizeof cmd, "exec $OB_EMULATOR '%s' %s </dev/null >/dev/null "
           "2>'%s'", g_oncebox, args, errpath);
  fflush(NULL);
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", cmd, (char*)NULL);
    _exit(127);
  }
  if (g_nchildren < MAX_CHILDREN) g_children[g_nchildren++] = pid;
  return pid;
}

static int stop_oncebox(pid_t pid) {
  int st = 0;
  kill(pid, SIGTERM);
  waitpid(pid, &st, 0);
  for (int i = 0; i < g_nchildren; i++)
    if (g_children[i] == pid) g_children[i] = 0;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Wait for /health to answer want (200 or 503); the body in *body. */
static int wait_health(int port, int want, int timeout_ms, char** body) {
  int st = 0;
  for (int waited = 0; waited <= timeout_ms; waited += 100) {
    free(*body);
    *body = NULL;
    st = http_get(port, "/health", body);
    if (st == want) return st;
    sleep_ms(100);
  }
  fprintf(stderr, "/health answered %d, not %d: %s\n", st, want,
          *body ? *body : "");
  return st;
}

static void print_file(const char* path) {
  (void)ts_sh("cat '%s' >&2", path);
}

/* ---- the address rules, on the library ---------------------------------- */

static void test_enable_rules(void** state) {
  char* dir = ts_mkdtemp("metrics_rules");
  char* db = ts_path(dir, "r.db");
  ob_options_t o;
  ob_metrics_options_t m;
  ob_engine_t* e;
  char err[512];
  (void)state;
  ob_options_init(&o);
  o.db_path = db;
  assert_int_equal(ob_open(&e, &o, err, sizeof err), 0);
  ob_metrics_options_init(&m);
  assert_int_equal(m.stats_refresh_ms, 5000);
  assert_int_equal(m.relay_failing_ms, 300000);
  m.listen = "0.0.0.0:9464";
  assert_int_equal(ob_metrics_enable(e, &m, err, sizeof err), OB_EINVAL);
  assert_non_null(strstr(err, "not a loopback address"));
  m.listen = "192.168.1.20:9464";
  assert_int_equal(ob_metrics_enable(e, &m, err, sizeof err), OB_EINVAL);
  m.listen = "localhost:9464";
  assert_int_equal(ob_metrics_enable(e, &m, err, sizeof err), OB_EINVAL);
  assert_non_null(strstr(err, "names are not resolved"));
  m.listen = "127.0.0.1:0";
  assert_int_equal(ob_metrics_enable(e, &m, err, sizeof err), OB_EINVAL);
  m.listen = "127.0.0.1:65536";
  assert_int_equal(ob_metrics_enable(e, &m, err, sizeof err), OB_EINVAL);
  m.listen = "[::1]9464";
  assert_int_equal(ob_metrics_enable(e, &m, err, sizeof err), OB_EINVAL);
  m.listen = "127.0.0.1:9464";
  m.stats_refresh_ms = 99;
  assert_int_equal(ob_metrics_enable(e, &m, err, sizeof err), OB_EINVAL);
  m.stats_refresh_ms = 5000;
  m.listen = "0.0.0.0:9464";
  m.allow_remote = 1;  /* asked for: then it may */
  assert_int_equal(ob_metrics_enable(e, &m, err, sizeof err), 0);
  assert_int_equal(ob_metrics_enable(e, &m, err, sizeof err), OB_EEXIST);
  ob_close(e);
  ts_rmdir(dir);
  free(db);
}

/* A port another process holds: attaching fails with OB_ENET, said. */
static void test_port_taken(void** state) {
  char* dir = ts_mkdtemp("metrics_taken");
  char* db = ts_path(dir, "t.db");
  struct sockaddr_in a;
  socklen_t n = sizeof a;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  char listen_at[64], err[512];
  ob_options_t o;
  ob_metrics_options_t m;
  ob_engine_t* e;
  uv_loop_t loop;
  (void)state;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(bind(fd, (struct sockaddr*)&a, sizeof a), 0);
  assert_int_equal(listen(fd, 1), 0);
  assert_int_equal(getsockname(fd, (struct sockaddr*)&a, &n), 0);
  snprintf(listen_at, sizeof listen_at, "127.0.0.1:%d", ntohs(a.sin_port));
  ob_options_init(&o);
  o.db_path = db;
  assert_int_equal(ob_open(&e, &o, err, sizeof err), 0);
  ob_metrics_options_init(&m);
  m.listen = listen_at;
  assert_int_equal(ob_metrics_enable(e, &m, err, sizeof err), 0);
  uv_loop_init(&loop);
  assert_int_equal(ob_attach(e, &loop), OB_ENET);
  ob_close(e);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&loop), 0);
  /* The program: exit 1 at start, the reason said, not a run blind. */
  assert_int_equal(ts_sh("$OB_EMULATOR '%s' --db '%s' run --until-idle "
                      "--metrics-listen %s 2>'%s.err'", g_oncebox, db,
                      listen_at, db), 1);
  assert_int_equal(ts_sh("grep -q 'metrics: cannot listen on %s: Address already "
                      "in use' '%s.err'", listen_at, db), 0);
  close(fd);
  ts_rmdir(dir);
  free(db);
}

/* ---- hostile requests, the disk reserve ---------------------------------- */

static const char kBig[] = "\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
                           "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"";

static void test_hostile_and_disk_reserve(void** state) {
  char* dir = ts_mkdtemp("metrics_disk");
  char* db = ts_path(dir, "d.db");
  char* errp = ts_path(dir, "run.err");
  char* ndjson = ts_path(dir, "fill.ndjson");
  char args[6000], *body = NULL, *all = NULL;
  char head[10000];
  int port = free_port(), rc, full = 0;
  pid_t pid;
  FILE* f;
  (void)state;
  /* Filler messages of a type nothing handles: each moves to the failure
  ** store, where it keeps its space until someone removes it. */
  f = fopen(ndjson, "w");
  assert_non_null(f);
  for (int i = 0; i < 200; i++) {
    fprintf(f, "{\"id\":\"0190b6d8-3ae7-7ca2-a653-%012d\",\"type\":\"Filler\","
            "\"body\":{\"pad\":[", i);
    for (int k = 0; k < 30; k++) fprintf(f, "%s%s", k ? "," : "", kBig);
    fprintf(f, "]}}\n");
  }
  fclose(f);
  assert_int_equal(ts_sh("$OB_EMULATOR '%s' --db '%s' init >/dev/null", g_oncebox,
                      db), 0);
  /* 512 KiB cap, 64 KiB reserve: 200 messages of ~3.4 KiB go past it. */
  rc = ts_sh("$OB_EMULATOR '%s' --db '%s' --max-db-bytes 512K enqueue --ndjson "
          "'%s' >/dev/null 2>&1", g_oncebox, db, ndjson);
  full = rc == 6 || rc == 3;
  assert_true(full);
  /* The fillers' failures are the means here, not the reason under test:
  ** the count rule (test_failures_in_period) is off. */
  /* The daemon and health run with a smaller cap than the fill, so the
  ** file is in the reserve whatever page the last refused message would
  ** have needed (refusal is judged with the message's size, the level
  ** without: a file filled to its refusal can sit a page below the line). */
  snprintf(args, sizeof args, "--db '%s' --max-db-bytes 480K run "
           "--metrics-listen 127.0.0.1:%d --metrics-refresh 100ms "
           "--health-failed -1", db, port);
  pid = start_oncebox(args, errp);
  assert_int_equal(wait_health(port, 503, 15000, &body), 503);
  assert_non_null(strstr(body, "\"reasons\":[\"disk_reserve\"]"));
  assert_non_null(strstr(body, "\"status\":\"unhealthy\""));
  assert_int_equal(ts_sh("$OB_EMULATOR '%s' --db '%s' --max-db-bytes 480K health "
                      ">'%s.h' 2>&1", g_oncebox, db, errp), 1);
  assert_int_equal(ts_sh("grep -q 'unhealthy: disk_reserve' '%s.h'", errp), 0);

  /* Hostile requests get a specific status and leave the server serving. */
  assert_int_equal(http_str(port, "BREW /metrics HTCPCP/1.0\r\n\r\n"),
                   400);
  assert_int_equal(http_str(port, "POST /metrics HTTP/1.1\r\n\r\n"),
                   405);
  assert_int_equal(http_get(port, "/../../etc/passwd", NULL), 404);
  assert_int_equal(http_raw(port, "GET /metrics\0 HTTP/1.1\r\n\r\n", 26, NULL),
                   400);
  memset(head, 'a', sizeof head);
  memcpy(head, "GET /metrics HTTP/1.1\r\nX-Pad: ", 30);
  assert_int_equal(http_raw(port, head, sizeof head, NULL), 431);
  /* A client that connects and says nothing is dropped, answered nothing;
  ** HEAD gets the head without the body. */
  assert_int_equal(http_raw(port, "", 0, NULL), 0);
  assert_int_equal(http_raw(port, "HEAD /health HTTP/1.0\r\n\r\n", 25, &all),
                   503);
  assert_non_null(strstr(all, "Content-Length: "));
  assert_null(strstr(all, "\"status\""));
  free(all);

  /* Space given back: healthy again, by both. */
  assert_int_equal(ts_sh("$OB_EMULATOR '%s' --db '%s' failed remove --all --force "
                      ">/dev/null 2>&1", g_oncebox, db), 0);
  assert_int_equal(wait_health(port, 200, 15000, &body), 200);
  assert_non_null(strstr(body, "\"status\":\"ok\",\"reasons\":[]"));
  assert_int_equal(ts_sh("$OB_EMULATOR '%s' --db '%s' --max-db-bytes 480K health "
                      ">/dev/null", g_oncebox, db), 0);
  rc = stop_oncebox(pid);
  if (rc != 0) print_file(errp);
  assert_int_equal(rc, 0);
  free(body);
  free(db);
  free(errp);
  free(ndjson);
  ts_rmdir(dir);
}

/* ---- SQS: a scrape during a run, and a failing relay ---------------------- */

static sq_server_t g_srv;
static int g_srv_up;

static const char* need_sqs(void) {
  const char* skip = sq_skip_reason();
  if (skip != NULL) return skip;
  if (!g_srv_up) {
    if (sq_server_start(&g_srv, "metrics", NULL) != 0)
      return "skipped: sqs_server.mjs did not start";
    g_srv_up = 1;
    setenv("AWS_ACCESS_KEY_ID", SQ_AKID, 1);
    setenv("AWS_SECRET_ACCESS_KEY", SQ_SECRET, 1);
    setenv("AWS_REGION", SQ_REGION, 1);
    setenv("AWS_CA_BUNDLE", g_srv.ca_file, 1);
    unsetenv("AWS_PROFILE");
    unsetenv("AWS_ENDPOINT_URL");
    unsetenv("ONCEBOX_SQS_ALLOW_HTTP");
  }
  {
    static char ep[96];
    snprintf(ep, sizeof ep, "https://localhost:%d", g_srv.port);
    setenv("AWS_ENDPOINT_URL_SQS", ep, 1);
  }
  return NULL;
}

static const char kPayment[] =
    "{\"paymentId\":\"%s\",\"merchantId\":\"3727331a-b533-4c6e-a0f8-"
    "48532237307b\",\"amountInMinorUnits\":%d,\"currency\":\"EUR\"}";

static void uuid_n(char* out, int i, int salt) {
  snprintf(out, 37, "0190b6d8-3ae7-7ca2-a%03d-%012d", salt, i);
}

static void test_scrape_during_run(void** state) {
  const char* skip = need_sqs();
  char* dir;
  char *db, *errp, *body = NULL, *q_out, *q_in, *prom;
  char args[8192], id[40], pay[40], data[400];
  int port, ok = 0, n_local = 20, n_sqs = 10;
  pid_t pid;
  (void)state;
  if (skip) {
    printf("%s\n", skip);
    return;
  }
  dir = ts_mkdtemp("metrics_scrape");
  db = ts_path(dir, "s.db");
  errp = ts_path(dir, "run.err");
  prom = ts_path(dir, "scrape.prom");
  q_out = sq_create_queue(&g_srv, "metrics-out", NULL);
  q_in = sq_create_queue(&g_srv, "metrics-in", NULL);
  assert_non_null(q_out);
  assert_non_null(q_in);
  for (int i = 0; i < n_local; i++) {
    uuid_n(id, i, 1);
    uuid_n(pay, i, 2);
    snprintf(data, sizeof data, kPayment, pay, 100 + i);
    assert_int_equal(ts_sh("$OB_EMULATOR '%s' --db '%s' enqueue --type "
                        "PaymentCaptured --id %s --body '%s' >/dev/null",
                        g_oncebox, db, id, data), 0);
    if (i % 5 == 0)  /* a redelivery: a duplicate */
      assert_int_equal(ts_sh("$OB_EMULATOR '%s' --db '%s' enqueue --type "
                          "PaymentCaptured --id %s --body '%s' >/dev/null",
                          g_oncebox, db, id, data), 0);
  }
  for (int i = 0; i < n_sqs; i++) {
    char ce[1024];
    uuid_n(id, i, 3);
    uuid_n(pay, i, 4);
    snprintf(data, sizeof data, kPayment, pay, 500 + i);
    snprintf(ce, sizeof ce, "{\"specversion\":\"1.0\",\"id\":\"%s\","
             "\"source\":\"urn:test:acquirer\",\"type\":\"PaymentCaptured\","
             "\"datacontenttype\":\"application/json\",\"data\":%s}", id, data);
    assert_int_equal(ts_sh("$OB_EMULATOR '%s' sqs send --queue-url '%s' --body "
                        "'%s' >/dev/null", g_oncebox, q_in, ce), 0);
  }
  port = free_port();
  snprintf(args, sizeof args, "--db '%s' run --outbox-queue-url '%s' "
           "--consume-queue-url '%s' --metrics-listen 127.0.0.1:%d "
           "--metrics-refresh 100ms", db, q_out, q_in, port);
  pid = start_oncebox(args, errp);
  /* Scrape every 100 ms until everything went through. */
  for (int waited = 0; waited < 60000 && !ok; waited += 100) {
    free(body);
    body = NULL;
    if (http_get(port, "/metrics", &body) == 200 &&
        metric(body, "oncebox_handled_total{input=\"queue\",outcome=\"done\"}") == n_local &&
        metric(body, "oncebox_handled_total{input=\"sqs\",outcome=\"done\"}") == n_sqs &&
        metric(body, "oncebox_relay_events_published_total") == n_local + n_sqs &&
        metric(body, "oncebox_outbox_pending") == 0)
      ok = 1;
    else
      sleep_ms(100);
  }
  if (!ok) {
    fprintf(stderr, "last scrape:\n%s\n", body ? body : "(none)");
    print_file(errp);
  }
  assert_true(ok);
  assert_true(metric(body, "oncebox_duplicates_total{input=\"queue\"}") == 4);
  assert_true(metric(body, "oncebox_relay_requests_total{outcome=\"ok\"}") >= 3);
  assert_true(metric(body, "oncebox_relay_requests_total{outcome=\"failed\"}") == 0);
  assert_true(metric(body, "oncebox_payouts") == n_local + n_sqs);
  assert_true(metric(body, "oncebox_relay_online") == 1);
  assert_true(metric(body, "process_start_time_seconds") > 1.7e9);
  assert_non_null(strstr(body, "# TYPE oncebox_handled_total counter\n"));
  /* The format, by Prometheus's own parser. */
  if (ts_sh("command -v promtool >/dev/null") == 0) {
    FILE* f = fopen(prom, "w");
    fputs(body, f);
    fclose(f);
    assert_int_equal(ts_sh("promtool check metrics <'%s' >&2", prom), 0);
  } else {
    printf("promtool not installed: the format is not checked by it here\n");
  }
  free(body);
  body = NULL;
  assert_int_equal(http_get(port, "/health", &body), 200);
  assert_non_null(strstr(body, "\"status\":\"ok\""));
  assert_int_equal(stop_oncebox(pid), 0);
  free(body);
  free(q_out);
  free(q_in);
  free(db);
  free(errp);
  free(prom);
  ts_rmdir(dir);
}

static void test_relay_failing(void** state) {
  const char* skip = need_sqs();
  char *dir, *db, *errp, *body = NULL, *q_out;
  char args[8192], id[40], pay[40], data[400];
  int port;
  pid_t pid;
  (void)state;
  if (skip) {
    printf("%s\n", skip);
    return;
  }
  dir = ts_mkdtemp("metrics_relay");
  db = ts_path(dir, "r.db");
  errp = ts_path(dir, "run.err");
  q_out = sq_create_queue(&g_srv, "metrics-relay", NULL);
  uuid_n(id, 1, 5);
  uuid_n(pay, 1, 6);
  snprintf(data, sizeof data, kPayment, pay, 4200);
  assert_int_equal(ts_sh("$OB_EMULATOR '%s' --db '%s' enqueue --type "
                      "PaymentCaptured --id %s --body '%s' >/dev/null",
                      g_oncebox, db, id, data), 0);
  /* SQS unavailable: every request answered 503 (ServiceUnavailable). */
  sq_fault(&g_srv, "{\"count\":100000,\"status\":503}");
  port = free_port();
  snprintf(args, sizeof args, "--db '%s' run --outbox-queue-url '%s' "
           "--metrics-listen 127.0.0.1:%d --metrics-refresh 100ms "
           "--health-relay-failing 1s", db, q_out, port);
  pid = start_oncebox(args, errp);
  assert_int_equal(wait_health(port, 503, 30000, &body), 503);
  assert_non_null(strstr(body, "\"relay_failing\""));
  assert_null(strstr(body, SQ_SECRET));
  /* The same verdict from the database alone, once the event waited 1 s. */
  sleep_ms(1100);
  assert_int_equal(ts_sh("$OB_EMULATOR '%s' --db '%s' health "
                      "--health-relay-failing 1s >/dev/null", g_oncebox, db), 1);
  sq_clear(&g_srv);
  /* The relay probes again (1 s, doubling) and publishes. */
  assert_int_equal(wait_health(port, 200, 60000, &body), 200);
  assert_int_equal(ts_sh("$OB_EMULATOR '%s' --db '%s' health "
                      "--health-relay-failing 1s >/dev/null", g_oncebox, db), 0);
  free(body);
  body = NULL;
  assert_int_equal(http_get(port, "/metrics", &body), 200);
  assert_true(metric(body, "oncebox_relay_requests_total{outcome=\"failed\"}") >= 1);
  assert_true(metric(body, "oncebox_relay_events_published_total") == 1);
  assert_true(metric(body, "oncebox_relay_failing_seconds") == 0);
  assert_int_equal(stop_oncebox(pid), 0);
  free(body);
  free(q_out);
  free(db);
  free(errp);
  ts_rmdir(dir);
}

/* ---- a charge whose outcome no one knows ---------------------------------- */

static void test_effect_unknown(void** state) {
  const char* skip = ps_skip_reason();
  char *dir, *db, *errp, *state_path, *body = NULL;
  char args[8192];
  ps_sim_t* sim;
  sq_server_t pki;
  int port;
  pid_t pid;
  (void)state;
  if (skip == NULL) skip = sq_skip_reason();
  if (skip) {
    printf("%s\n", skip);
    return;
  }
  if (need_sqs() != NULL) {
    printf("skipped: no test PKI\n");
    return;
  }
  pki = g_srv;  /* its PKI: good.crt for localhost, ca.crt in AWS_CA_BUNDLE */
  dir = ts_mkdtemp("metrics_effect");
  db = ts_path(dir, "e.db");
  errp = ts_path(dir, "run.err");
  state_path = ts_path(dir, "provider.json");
  sim = ps_start(pki.pki, state_path, 0, NULL);
  assert_non_null(sim);
  /* The provider holds its next answers longer than the client waits. */
  assert_int_equal(ps_mode(sim, "slow", 1000, 3000, 0), 0);
  assert_int_equal(ts_sh("$OB_EMULATOR '%s' --db '%s' enqueue --type ChargeOrder "
                      "--id 0190b6d8-3ae7-7ca2-a653-6ff2d5a6f231 --body "
                      "'{\"orderId\":\"order-7\",\"amountInMinorUnits\":1999,"
                      "\"currency\":\"EUR\"}' >/dev/null", g_oncebox, db), 0);
  port = free_port();
  snprintf(args, sizeof args, "--db '%s' run --provider-url "
           "https://localhost:%d --provider-timeout 500 --metrics-listen "
           "127.0.0.1:%d --metrics-refresh 100ms", db, ps_port(sim), port);
  pid = start_oncebox(args, errp);
  assert_int_equal(wait_health(port, 503, 30000, &body), 503);
  assert_non_null(strstr(body, "\"effects_unknown\""));
  assert_int_equal(ts_sh("$OB_EMULATOR '%s' --db '%s' health >/dev/null",
                      g_oncebox, db), 1);
  /* The provider answers again: the fence learns the outcome. */
  assert_int_equal(ps_mode(sim, "normal", 0, 0, 0), 0);
  assert_int_equal(wait_health(port, 200, 90000, &body), 200);
  assert_int_equal(ts_sh("$OB_EMULATOR '%s' --db '%s' health >/dev/null",
                      g_oncebox, db), 0);
  assert_int_equal(ps_charges(sim, "order-7"), 1);
  assert_int_equal(stop_oncebox(pid), 0);
  ps_stop(sim);
  free(body);
  free(db);
  free(errp);
  free(state_path);
  ts_rmdir(dir);
}

/* ---- messages given up on in a period: failures ------------------------ */

/* Three payments without a paymentId go to the failure store at once: more
** than --health-failed 2 within --health-period 3s is unhealthy
** ("failures", with the count), and once the period has passed with no
** new failure it is 200 again, the same run still going. */
static void test_failures_in_period(void** state) {
  char args[6000], id[40], *dir, *db, *body = NULL;
  int port;
  pid_t pid;
  (void)state;
  dir = ts_mkdtemp("metrics_failures");
  db = ts_path(dir, "f.db");
  for (int i = 0; i < 3; i++) {
    uuid_n(id, i, 9);
    assert_int_equal(ts_sh("$OB_EMULATOR '%s' --db '%s' enqueue --type "
                        "PaymentCaptured --id %s --body '{\"amount\":1}' "
                        ">/dev/null", g_oncebox, db, id), 0);
  }
  port = free_port();
  snprintf(args, sizeof args, "--db '%s' run --metrics-listen 127.0.0.1:%d "
           "--metrics-refresh 100ms --health-period 3s --health-failed 2 "
           "--health-retried -1", db, port);
  pid = start_oncebox(args, "/dev/null");
  assert_int_equal(wait_health(port, 503, 10000, &body), 503);
  assert_non_null(strstr(body, "\"reasons\":[\"failures\"]"));
  assert_non_null(strstr(body, "\"period_seconds\":3,\"failed_in_period\":3,"));
  /* The one-shot command has no period to count in: the figures only. */
  assert_int_equal(ts_sh("$OB_EMULATOR '%s' --db '%s' health >/dev/null",
                      g_oncebox, db), 0);
  assert_int_equal(wait_health(port, 200, 10000, &body), 200);
  /* 200 comes as soon as at most 2 are left in the window; when the three
  ** were committed in different batches (slow hosts, emulators) they leave
  ** it one by one, so wait for the last to go. */
  for (int waited = 0; waited < 10000 &&
                       strstr(body, "\"failed_in_period\":0,") == NULL;
       waited += 100) {
    sleep_ms(100);
    free(body);
    body = NULL;
    (void)http_get(port, "/health", &body);
  }
  assert_non_null(body);
  assert_non_null(strstr(body, "\"failed_in_period\":0,"));
  assert_non_null(strstr(body, "\"status\":\"ok\""));
  assert_int_equal(stop_oncebox(pid), 0);
  free(body);
  free(db);
  ts_rmdir(dir);
}

/* ---- a full disk: db_not_writable -------------------------------------- */

/* A small tmpfs in a mount namespace of this process (children inherit
** it; nothing stays mounted on the host). NULL and why when not allowed. */
static char* mount_small_tmpfs(char* why, size_t n) {
  return ts_private_tmpfs("metrics_full", "size=4m,mode=0700", why, n);
}

/* The disk fills under a running engine: its next handling commit fails
** (SQLITE_FULL), /health says db_not_writable; space comes back, the engine
** commits again on its own and /health is 200. */
static void test_disk_full(void** state) {
  char why[256], args[6000], id[40], pay[40], data[400];
  char *dir, *db, *errp, *filler, *body = NULL;
  int port, rc;
  pid_t pid;
  (void)state;
  if ((dir = mount_small_tmpfs(why, sizeof why)) == NULL) {
    printf("skipped: %s\n", why);
    return;
  }
  db = ts_path(dir, "f.db");
  errp = ts_path(dir, "run.err");
  filler = ts_path(dir, "filler");
  /* Due in 3 s: by then the disk is full. */
  for (int i = 0; i < 5; i++) {
    uuid_n(id, i, 7);
    uuid_n(pay, i, 8);
    snprintf(data, sizeof data, kPayment, pay, 300 + i);
    assert_int_equal(ts_sh("$OB_EMULATOR '%s' --db '%s' enqueue --type "
                        "PaymentCaptured --id %s --delay 3000 --body '%s' "
                        ">/dev/null", g_oncebox, db, id, data), 0);
  }
  port = free_port();
  snprintf(args, sizeof args, "--db '%s' run --metrics-listen 127.0.0.1:%d "
           "--metrics-refresh 100ms", db, port);
  pid = start_oncebox(args, "/dev/null");
  assert_int_equal(wait_health(port, 200, 10000, &body), 200);
  (void)ts_sh("dd if=/dev/zero of='%s' bs=64k 2>/dev/null", filler);
  assert_int_equal(wait_health(port, 503, 20000, &body), 503);
  assert_non_null(strstr(body, "\"reasons\":[\"db_not_writable\"]"));
  assert_non_null(strstr(body, "\"db_write_error\":\"OB_ENOSPC\""));
  free(body);
  body = NULL;
  assert_int_equal(http_get(port, "/metrics", &body), 200);
  assert_true(metric(body, "oncebox_write_errors_total") >= 1);
  assert_true(metric(body, "oncebox_handled_total{input=\"queue\",outcome=\"done\"}") == 0);
  assert_int_equal(unlink(filler), 0);
  assert_int_equal(wait_health(port, 200, 60000, &body), 200);
  free(body);
  body = NULL;
  for (int waited = 0; waited < 20000; waited += 100) {
    free(body);
    body = NULL;
    if (http_get(port, "/metrics", &body) == 200 &&
        metric(body, "oncebox_handled_total{input=\"queue\",outcome=\"done\"}") == 5)
      break;
    sleep_ms(100);
  }
  assert_true(metric(body, "oncebox_handled_total{input=\"queue\",outcome=\"done\"}") == 5);
  rc = stop_oncebox(pid);
  assert_int_equal(rc, 0);
  free(body);
  free(db);
  free(errp);
  free(filler);
  (void)umount2(dir, MNT_DETACH);
  ts_rmdir(dir);
}

static int teardown_all(void** state) {
  (void)state;
  kill_children();
  if (g_srv_up) sq_server_stop(&g_srv);
  return 0;
}

int main(void) {
  const char* bin = getenv("OB_BINARY_DIR");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_enable_rules),
      cmocka_unit_test(test_port_taken),
      cmocka_unit_test(test_hostile_and_disk_reserve),
      cmocka_unit_test(test_scrape_during_run),
      cmocka_unit_test(test_relay_failing),
      cmocka_unit_test(test_effect_unknown),
      cmocka_unit_test(test_failures_in_period),
      cmocka_unit_test(test_disk_full),  /* last: it enters a mount namespace */
  };
  signal(SIGPIPE, SIG_IGN);
  snprintf(g_oncebox, sizeof g_oncebox, "%s/oncebox", bin ? bin : ".");
  return cmocka_run_group_tests(tests, NULL, teardown_all);
}
