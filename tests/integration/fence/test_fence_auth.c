/* SPDX-License-Identifier: Apache-2.0 */
/* Provider credentials (ob_provider_options_t.authorization, the CLI's
** ONCEBOX_PROVIDER_AUTHORIZATION) against the provider simulator with
** --require-auth, over real HTTPS.
**
** The secret is a canary ("Bearer sk_canary_<random hex>", a wrong one
** alike): it must reach the provider in the Authorization header and
** nowhere else. Wrong credentials (401) cost the effect nothing: no charge,
** still pending, no attempt used, not parked, and the executor backs off
** instead of hammering the provider. Right ones charge each order once.
** Every file the case leaves (worker logs, the database, -wal and -shm read
** raw, the CLI's output, the simulator's files) is searched for the secret,
** and so is the output of `oncebox run`, `stats`, `effects show` and
** `effects reconcile`.
**
** Workers are forked children running the library with a log callback, as
** in test_fence_kill.c; the CLI is $OB_BINARY_DIR/oncebox. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "oncebox.h"
#include "oncebox_charge.h"
#include "tests/integration/fence/provider_sim_util.h"
#include "tests/integration/http/http_test_util.h"
#include "tests/support/testsupport.h"

#define REFUSED_LINE "refused the credentials (HTTP 401); effects wait"

static struct {
  const char* skip;
  char* dir;
  char* pki;
  char* ca;
  char oncebox[4096];
  char right_hex[33];
  char wrong_hex[33];
  char right[64];  /* "Bearer sk_canary_<right_hex>" */
  char wrong[64];  /* "Bearer sk_canary_<wrong_hex>" */
  int seq;
  pid_t worker;    /* a running worker, killed by teardown if a check fails */
} g;

typedef struct fix_s {
  char* dir;
  char* db;
  char* log;
  ps_sim_t* sim;
  char url[64];
} fix_t;

/* ---- the secret -------------------------------------------------------------- */

static void random_hex(char out[33]) {
  unsigned char b[16];
  int fd = open("/dev/urandom", O_RDONLY);
  assert_true(fd >= 0);
  assert_int_equal(read(fd, b, sizeof b), (ssize_t)sizeof b);
  close(fd);
  for (int i = 0; i < 16; i++) snprintf(out + 2 * i, 3, "%02x", b[i]);
}

static void make_canaries(void) {
  random_hex(g.right_hex);
  do random_hex(g.wrong_hex);
  while (memcmp(g.right_hex, g.wrong_hex, 12) == 0);
  snprintf(g.right, sizeof g.right, "Bearer sk_canary_%s", g.right_hex);
  snprintf(g.wrong, sizeof g.wrong, "Bearer sk_canary_%s", g.wrong_hex);
}

static int has_bytes(const char* hay, size_t n, const char* needle) {
  size_t m = strlen(needle);
  if (m == 0 || m > n) return 0;
  for (size_t i = 0; i + m <= n; i++)  /* binary files: no strstr */
    if (hay[i] == needle[0] && memcmp(hay + i, needle, m) == 0) return 1;
  return 0;
}

/* Which part of a secret is in buf: the whole value, its random hex, or
** the first or last 12 hex digits (a truncated or masked copy). NULL if
** none. */
static const char* secret_in(const char* buf, size_t n) {
  static char head[2][13], tail[2][13];
  const char* const values[2] = {g.right, g.wrong};
  const char* const hexes[2] = {g.right_hex, g.wrong_hex};
  for (int i = 0; i < 2; i++) {
    memcpy(head[i], hexes[i], 12);
    head[i][12] = '\0';
    memcpy(tail[i], hexes[i] + 20, 12);
    tail[i][12] = '\0';
    if (has_bytes(buf, n, values[i]) || has_bytes(buf, n, hexes[i]) ||
        has_bytes(buf, n, head[i]) || has_bytes(buf, n, tail[i]))
      return i == 0 ? "the right secret" : "the wrong secret";
  }
  return NULL;
}

/* A whole file, raw; NULL (and *n 0) if it does not exist. */
static char* slurp(const char* path, size_t* n) {
  FILE* f = fopen(path, "rb");
  char* buf;
  long len;
  *n = 0;
  if (f == NULL) return NULL;
  assert_int_equal(fseek(f, 0, SEEK_END), 0);
  len = ftell(f);
  assert_true(len >= 0);
  rewind(f);
  buf = malloc((size_t)len + 1);
  assert_non_null(buf);
  *n = fread(buf, 1, (size_t)len, f);
  buf[*n] = '\0';
  fclose(f);
  return buf;
}

static void assert_no_secret_in_file(const char* path) {
  size_t n;
  char* buf = slurp(path, &n);
  const char* which = buf ? secret_in(buf, n) : NULL;
  free(buf);
  if (which != NULL) fail_msg("%s holds %s", path, which);
}

static void assert_no_secret_in_text(const char* what, const char* text) {
  const char* which = secret_in(text, strlen(text));
  if (which != NULL) fail_msg("%s holds %s:\n%s", what, which, text);
}

/* Every regular file under dir, recursively. Returns how many. */
static int assert_no_secret_under(const char* dir) {
  DIR* d = opendir(dir);
  struct dirent* de;
  int files = 0;
  if (d == NULL) fail_msg("cannot open %s: %s", dir, strerror(errno));
  /* A directory that cannot be read must fail the scan, not pass it as
  ** "no file holds a secret" (readdir's NULL is also its error). */
  errno = 0;
  while ((de = readdir(d)) != NULL) {
    struct stat st;
    char* p;
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
      continue;
    p = ts_path(dir, de->d_name);
    if (lstat(p, &st) != 0) {
      /* Only a file the worker removed meanwhile (a -journal) is skipped. */
      if (errno != ENOENT) fail_msg("cannot stat %s: %s", p, strerror(errno));
    } else {
      if (S_ISDIR(st.st_mode)) {
        files += assert_no_secret_under(p);
      } else if (S_ISREG(st.st_mode)) {
        assert_no_secret_in_file(p);
        files++;
      }
    }
    free(p);
    errno = 0;
  }
  if (errno != 0) fail_msg("cannot read directory %s: %s", dir, strerror(errno));
  closedir(d);
  return files;
}

/* The database files, raw, as they are now (a worker may be running: the
** -wal then holds its latest writes). Returns how many exist. */
static int assert_no_secret_in_db(fix_t* f) {
  static const char* const suffix[] = {"", "-wal", "-shm", "-journal"};
  int found = 0;
  for (size_t i = 0; i < sizeof suffix / sizeof suffix[0]; i++) {
    char p[4200];
    struct stat st;
    snprintf(p, sizeof p, "%s%s", f->db, suffix[i]);
    if (stat(p, &st) != 0) continue;
    found++;
    assert_no_secret_in_file(p);
  }
  return found;
}

/* ---- the worker ------------------------------------------------------------ */

static void worker_log(void* arg, ob_log_level_t level, const char* msg) {
  int fd = *(int*)arg;
  char line[1200];
  int n = snprintf(line, sizeof line, "%d %s\n", (int)level, msg);
  if (n > 0 && write(fd, line, (size_t)n) < 0) {
  }
}

static void open_engine(fix_t* f, ob_engine_t** e, int* log_fd) {
  ob_options_t o;
  char err[512];
  ob_options_init(&o);
  o.db_path = f->db;
  o.poll_interval_ms = 50;
  if (log_fd != NULL) {
    o.log = worker_log;
    o.log_ctx = log_fd;
    o.log_level = OB_LOG_DEBUG;
  }
  if (ob_open(e, &o, err, sizeof err) != 0) fail_msg("ob_open: %s", err);
}

/* Runs in the child; never returns. */
static void worker_main(fix_t* f, const char* authorization,
                        ob_run_mode_t mode) {
  ob_engine_t* e;
  ob_provider_options_t p;
  char err[512];
  int rc, log_fd = open(f->log, O_WRONLY | O_CREAT | O_APPEND, 0600);
  char* copy = strdup(authorization);  /* freed (scribbled) after enable */
  open_engine(f, &e, &log_fd);
  ob_register_charge_order(e);
  ob_provider_options_init(&p);
  p.name = OB_CHARGE_PROVIDER;
  p.base_url = f->url;
  p.ca_file = g.ca;
  p.authorization = copy;
  p.lookup_path = OB_CHARGE_LOOKUP_PATH;
  p.timeout_ms = 1500;
  p.lease_ms = 2500;
  /* Short retry delays: without the executor's backoff on 401 the worker
  ** would ask again every 50 ms. */
  p.retry.max_retries = 8;
  p.retry.delay_ms = 50;
  p.retry.max_delay_ms = 400;
  if ((rc = ob_provider_enable(e, &p, err, sizeof err)) != 0) {
    fprintf(stderr, "ob_provider_enable: %s\n", err);
    _exit(3);
  }
  /* The engine keeps its own copy: the caller's may go away. */
  memset(copy, 'x', strlen(copy));
  free(copy);
  rc = ob_run(e, mode, 1);
  ob_close(e);
  /* Stalled (effects left for a provider offline or leased by a dead
  ** worker) is a clean stop: the caller runs another worker. */
  _exit(rc == 0 || rc == OB_RUN_STALLED ? 0 : 4);
}

static pid_t spawn_worker(fix_t* f, const char* authorization,
                          ob_run_mode_t mode) {
  pid_t pid;
  fflush(NULL);
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);  /* never outlives the test */
    worker_main(f, authorization, mode);
  }
  g.worker = pid;
  return pid;
}

static void reap_worker(pid_t pid, int* st) {
  assert_int_equal(waitpid(pid, st, 0), pid);
  g.worker = 0;
}

static void stop_worker(pid_t pid) {
  int st;
  assert_int_equal(kill(pid, SIGTERM), 0);
  reap_worker(pid, &st);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
    fail_msg("the worker ended with status %d after SIGTERM", st);
}

/* ---- the database, read from outside ---------------------------------------- */

static long long q(fix_t* f, const char* sql) {
  long long v;
  if (ps_db_int(f->db, sql, &v) != 0) fail_msg("cannot read %s: %s", f->db, sql);
  return v;
}

static void enqueue_orders(fix_t* f, int first, int n) {
  ob_engine_t* e;
  open_engine(f, &e, NULL);
  for (int i = first; i < first + n; i++) {
    char id[OB_UUID_BUFLEN], body[160];
    ob_envelope_t env;
    snprintf(id, sizeof id, "0190b6d8-3ae7-7ca2-a653-%012d", i);
    snprintf(body, sizeof body,
             "{\"orderId\":\"order-%d\",\"amountInMinorUnits\":%d,"
             "\"currency\":\"EUR\"}", i, 1000 + i);
    memset(&env, 0, sizeof env);
    env.id = id;
    env.type = OB_CHARGE_MESSAGE_TYPE;
    env.body = body;
    env.body_len = strlen(body);
    assert_int_equal(ob_enqueue(e, &env), 0);
  }
  ob_close(e);
}

/* Orders [first, first + n) were refused: nothing charged, nothing spent. */
static void check_refused(fix_t* f, int first, int n) {
  char sql[256];
  for (int i = first; i < first + n; i++) {
    char order[32];
    snprintf(order, sizeof order, "order-%d", i);
    assert_int_equal(ps_charges(f->sim, order), 0);
  }
  snprintf(sql, sizeof sql,
           "SELECT count(*) FROM effect WHERE state = 'pending' AND attempts"
           " = 0 AND parked_at IS NULL AND successes = 0 AND http_status ="
           " 401");
  assert_int_equal(q(f, sql), n);
  assert_int_equal(q(f, "SELECT count(*) FROM effect WHERE state <>"
                        " 'pending'"), 0);
  assert_int_equal(q(f, "SELECT count(*) FROM failed_message"), 0);
  assert_int_equal(q(f, "SELECT count(*) FROM charge"), 0);
  assert_int_equal(q(f, "SELECT count(*) FROM queue"), n);
}

/* Orders [1, n] charged once each and confirmed. */
static void check_charged(fix_t* f, int n) {
  ob_engine_t* e;
  ob_stats_t s;
  ps_stats_t ps;
  for (int i = 1; i <= n; i++) {
    char order[32];
    snprintf(order, sizeof order, "order-%d", i);
    if (ps_charges(f->sim, order) != 1)
      fail_msg("%s: charged %d times, want 1", order,
               ps_charges(f->sim, order));
  }
  assert_int_equal(ps_stats(f->sim, &ps), 0);
  assert_int_equal(ps.charges_total, n);
  assert_int_equal(ps.max_charges_per_order, 1);
  assert_int_equal(q(f, "SELECT count(*) FROM effect WHERE state ="
                        " 'confirmed' AND successes = 1"), n);
  assert_int_equal(q(f, "SELECT count(*) FROM effect"), n);
  assert_int_equal(q(f, "SELECT count(*) FROM charge"), n);
  assert_int_equal(q(f, "SELECT count(*) FROM outbox_event WHERE event_type ="
                        " 'OrderCharged'"), n);
  assert_int_equal(q(f, "SELECT count(*) FROM queue"), 0);
  assert_int_equal(q(f, "SELECT count(*) FROM failed_message"), 0);
  open_engine(f, &e, NULL);
  assert_int_equal(ob_check(e, NULL, NULL), 0);
  assert_int_equal(ob_stats(e, &s), 0);
  {
    ob_charge_stats_t cs;
    assert_int_equal(ob_charge_stats(e, &cs), 0);
    assert_int_equal(cs.unfenced_successes, 0);
  }
  assert_int_equal(s.fence_claims, n);
  ob_close(e);
}

/* Until-idle workers with the right credentials until nothing is left (a
** refused worker stopped with SIGTERM may have left a lease to expire). */
static void run_until_charged(fix_t* f) {
  for (int i = 0; i < 40; i++) {
    int st;
    pid_t pid = spawn_worker(f, g.right, OB_RUN_UNTIL_IDLE);
    reap_worker(pid, &st);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
      fail_msg("worker ended with status %d", st);
    if (q(f, "SELECT count(*) FROM queue") == 0 &&
        q(f, "SELECT count(*) FROM effect WHERE state IN ('pending',"
             "'unknown')") == 0)
      return;
    usleep(250 * 1000);
  }
  fail_msg("the orders were never charged");
}

/* ---- the CLI ------------------------------------------------------------------ */

typedef struct cli_out_s {
  int rc;
  char* out;  /* stdout and stderr together */
} cli_out_t;

/* Run oncebox --db DB ARGS... with the provider's environment (authorization
** NULL: unset) and stdout + stderr in a file of the case, read back. */
static cli_out_t run_cli(fix_t* f, const char* authorization, ...) {
  const char* argv[32];
  int argc = 0, st;
  char name[64], *path;
  cli_out_t r = {-1, NULL};
  uint64_t end;
  size_t n;
  va_list ap;
  pid_t pid;

  argv[argc++] = g.oncebox;
  argv[argc++] = "--db";
  argv[argc++] = f->db;
  va_start(ap, authorization);
  for (const char* a; (a = va_arg(ap, const char*)) != NULL;) {
    assert_true(argc < 31);
    argv[argc++] = a;
  }
  va_end(ap);
  argv[argc] = NULL;
  snprintf(name, sizeof name, "cli-%d.out", ++g.seq);
  path = ts_path(f->dir, name);
  fflush(NULL);
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (fd < 0) _exit(126);
    dup2(fd, 1);
    dup2(fd, 2);
    close(fd);
    setenv("ONCEBOX_PROVIDER_URL", f->url, 1);
    setenv("AWS_CA_BUNDLE", g.ca, 1);
    unsetenv("ONCEBOX_PROVIDER_ALLOW_HTTP");
    unsetenv("ONCEBOX_DB");
    if (authorization != NULL)
      setenv("ONCEBOX_PROVIDER_AUTHORIZATION", authorization, 1);
    else
      unsetenv("ONCEBOX_PROVIDER_AUTHORIZATION");
    ts_exec_built(argv[0], (char* const*)argv);
    _exit(127);
  }
  end = ht_now_ms() + 120000;
  for (;;) {
    pid_t w = waitpid(pid, &st, WNOHANG);
    assert_true(w >= 0);
    if (w == pid) break;
    if (ht_now_ms() > end) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      fail_msg("oncebox %s did not finish", argv[3]);
    }
    usleep(20 * 1000);
  }
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  r.out = slurp(path, &n);
  if (r.out == NULL) r.out = strdup("");
  free(path);
  return r;
}

static void expect_cli(cli_out_t* r, int rc, const char* text) {
  if (r->rc != rc || (text != NULL && strstr(r->out, text) == NULL))
    fail_msg("oncebox exited %d (want %d)%s%s; its output:\n%s", r->rc, rc,
             text ? ", want the text " : "", text ? text : "", r->out);
}

/* ---- fixture ------------------------------------------------------------------ */

static int group_setup(void** state) {
  const char* bin = getenv("OB_BINARY_DIR");
  (void)state;
  make_canaries();
  g.dir = ts_mkdtemp("fence-auth");
  snprintf(g.oncebox, sizeof g.oncebox, "%s/oncebox", bin ? bin : ".");
  g.skip = ps_skip_reason();
  if (g.skip != NULL) {
    printf("%s\n", g.skip);
    return 0;
  }
  g.pki = ts_path(g.dir, "pki");
  g.ca = ts_path(g.pki, "ca.crt");
  return ht_gen_pki(g.pki) == 0 ? 0 : -1;
}

static int group_teardown(void** state) {
  (void)state;
  free(g.ca);
  free(g.pki);
  if (g.dir != NULL && getenv("OB_KEEP") == NULL) ts_rmdir(g.dir);
  return 0;
}

static int setup(void** state) {
  fix_t* f;
  char name[64], flags[128], *st;
  *state = NULL;
  if (g.skip != NULL) return 0;
  f = calloc(1, sizeof *f);
  snprintf(name, sizeof name, "case-%d", ++g.seq);
  f->dir = ts_path(g.dir, name);
  assert_int_equal(mkdir(f->dir, 0700), 0);
  f->db = ts_path(f->dir, "pos.db");
  f->log = ts_path(f->dir, "worker.log");
  st = ts_path(f->dir, "provider.json");
  snprintf(flags, sizeof flags, "--require-auth '%s'", g.right);
  f->sim = ps_start(g.pki, st, 0, flags);
  free(st);
  if (f->sim == NULL) return -1;
  snprintf(f->url, sizeof f->url, "https://localhost:%d", ps_port(f->sim));
  *state = f;
  return 0;
}

static int teardown(void** state) {
  fix_t* f = *state;
  if (g.worker > 0) {  /* a check failed while it ran */
    int st;
    kill(g.worker, SIGKILL);
    waitpid(g.worker, &st, 0);
    g.worker = 0;
  }
  if (f == NULL) return 0;
  ps_stop(f->sim);
  free(f->db);
  free(f->log);
  free(f->dir);
  free(f);
  return 0;
}

#define SKIP_IF_NEEDED()        \
  do {                          \
    if (g.skip != NULL) skip(); \
  } while (0)

/* ---- ob_provider_enable's checks (no provider needed) ------------------------ */

static void test_enable_refuses_bad_values(void** state) {
  static const char* const bad[] = {"Bearer sk_canary_\r\nX-Evil: 1",
                                    "Bearer sk_canary_\n", "\tBearer x",
                                    "Bearer \x7f", ""};
  char* dir = ts_mkdtemp("fence-auth-enable");
  fix_t f = {.dir = dir};
  ob_engine_t* e;
  ob_provider_options_t p;
  char err[512], value[256], *big;
  (void)state;
  f.db = ts_path(dir, "pos.db");
  open_engine(&f, &e, NULL);
  ob_provider_options_init(&p);
  p.name = OB_CHARGE_PROVIDER;
  p.base_url = "https://localhost:9";
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    /* Each with the canary in it: the message must not quote it. */
    snprintf(value, sizeof value, "%s%s", bad[i], bad[i][0] ? g.right : "");
    p.authorization = value;
    assert_int_equal(ob_provider_enable(e, &p, err, sizeof err), OB_EINVAL);
    assert_non_null(strstr(err, "authorization"));
    assert_no_secret_in_text("ob_provider_enable's message", err);
    assert_null(strstr(err, "X-Evil"));
  }
  big = malloc(8194);
  assert_non_null(big);
  memset(big, 'a', 8193);
  big[8193] = '\0';
  memcpy(big, g.right, strlen(g.right));
  p.authorization = big;
  assert_int_equal(ob_provider_enable(e, &p, err, sizeof err), OB_EINVAL);
  assert_non_null(strstr(err, "longer than 8192 bytes"));
  assert_no_secret_in_text("ob_provider_enable's message", err);
  big[8192] = '\0';  /* exactly 8 KiB: accepted */
  assert_int_equal(ob_provider_enable(e, &p, err, sizeof err), 0);
  free(big);
  ob_close(e);
  free(f.db);
  ts_rmdir(dir);
}

/* ---- (a) wrong credentials, then (b) the right ones -------------------------- */

static void test_wrong_then_right_credentials(void** state) {
  fix_t* f = *state;
  ps_stats_t ps;
  size_t n;
  char* log;
  char* line;
  uint64_t t0;
  long refused_at_first;
  pid_t pid;
  SKIP_IF_NEEDED();
  enqueue_orders(f, 1, 3);
  pid = spawn_worker(f, g.wrong, OB_RUN_FOREVER);
  /* Refused: the three calls go out together, then the executor probes one
  ** effect at a time with backoff (1 s, 2 s, ...). */
  assert_true(ps_wait_lines(f->sim, "REQ POST /v1/charges 401", 1, 30000) >=
              1);
  t0 = ht_now_ms();
  assert_true(ps_wait_lines(f->sim, "REQ POST /v1/charges 401", 4, 15000) >=
              4);  /* a probe came after the first refusals */
  while (ht_now_ms() < t0 + 4000) usleep(50 * 1000);
  assert_int_equal(ps_stats(f->sim, &ps), 0);
  refused_at_first = ps.unauthorized;
  /* With a 50 ms retry delay and no backoff this would be ~200. */
  if (ps.unauthorized > 10)
    fail_msg("the worker hammered the provider: %ld requests refused in "
             "about 4 s", ps.unauthorized);
  assert_int_equal(ps.posts, 0);  /* refused before any charge processing */
  assert_int_equal(ps.lookups, 0);
  assert_int_equal(ps.charges_total, 0);
  /* The secret is in no byte of the database while the worker runs. */
  assert_true(assert_no_secret_in_db(f) >= 2);
  stop_worker(pid);

  check_refused(f, 1, 3);
  log = slurp(f->log, &n);
  assert_non_null(log);
  line = strstr(log, "effects: provider " OB_CHARGE_PROVIDER " " REFUSED_LINE);
  if (line == NULL) fail_msg("no 401 line in the worker's log:\n%s", log);
  /* At ERROR (level 0 starts the line). */
  assert_true(line >= log + 2 && line[-1] == ' ' && line[-2] == '0' &&
              (line == log + 2 || line[-3] == '\n'));
  assert_no_secret_in_text("the worker's log", log);
  /* Nor the 401's body or headers. */
  assert_null(strstr(log, "Invalid API key"));
  assert_null(strstr(log, "realm="));
  free(log);
  assert_true(refused_at_first >= 4);

  /* (b) The right credentials: each order charged once. */
  run_until_charged(f);
  check_charged(f, 3);
  assert_int_equal(ps_stats(f->sim, &ps), 0);
  assert_int_equal(ps.unauthorized, refused_at_first);
  assert_int_equal(ps.lookups, 0);  /* idempotency keys: the call repeated */

  /* (c) for the library: no trace anywhere. */
  assert_true(assert_no_secret_in_db(f) >= 1);
  assert_true(assert_no_secret_under(f->dir) >= 3);
}

/* ---- (c) the CLI ------------------------------------------------------------- */

static void test_cli_credentials(void** state) {
  fix_t* f = *state;
  cli_out_t r;
  ps_stats_t ps;
  SKIP_IF_NEEDED();
  enqueue_orders(f, 1, 2);

  /* Wrong credentials: run ends, stalled (exit 5: the effects wait for a
  ** provider that refuses them), nothing charged. */
  r = run_cli(f, g.wrong, "--log-level", "debug", "run", "--until-idle",
              (char*)NULL);
  expect_cli(&r, 5, REFUSED_LINE);
  assert_no_secret_in_text("oncebox run (wrong credentials)", r.out);
  assert_null(strstr(r.out, "Invalid API key"));
  free(r.out);
  check_refused(f, 1, 2);

  /* No credentials at all: refused the same way. (reconcile: the refused
  ** effects are not due again for a second, a run would find nothing to
  ** do.) */
  r = run_cli(f, NULL, "effects", "reconcile", "--timeout", "2",
              (char*)NULL);
  expect_cli(&r, 1, REFUSED_LINE);
  free(r.out);

  /* effects reconcile uses them too: wrong ones leave both open. */
  r = run_cli(f, g.wrong, "effects", "reconcile", "--timeout", "3",
              (char*)NULL);
  expect_cli(&r, 1, REFUSED_LINE);
  assert_no_secret_in_text("oncebox effects reconcile (wrong)", r.out);
  free(r.out);
  check_refused(f, 1, 2);
  assert_int_equal(ps_stats(f->sim, &ps), 0);
  assert_int_equal(ps.charges_total, 0);
  assert_true(ps.unauthorized >= 3);

  /* A value with a newline: refused before anything is sent, without
  ** echoing it. */
  {
    char bad[128];
    snprintf(bad, sizeof bad, "%s\nX-Evil: 1", g.right);
    r = run_cli(f, bad, "run", "--until-idle", (char*)NULL);
    expect_cli(&r, 2, "ONCEBOX_PROVIDER_AUTHORIZATION");
    assert_no_secret_in_text("oncebox run (bad value)", r.out);
    assert_null(strstr(r.out, "X-Evil"));
    free(r.out);
  }

  /* The right ones, through effects reconcile: both confirmed. */
  r = run_cli(f, g.right, "--log-level", "debug", "effects", "reconcile",
              "--timeout", "60", (char*)NULL);
  expect_cli(&r, 0, NULL);
  assert_no_secret_in_text("oncebox effects reconcile (right)", r.out);
  free(r.out);

  /* And through run, for the next orders. */
  enqueue_orders(f, 3, 2);
  r = run_cli(f, g.right, "--log-level", "debug", "run", "--until-idle",
              (char*)NULL);
  expect_cli(&r, 0, NULL);
  assert_no_secret_in_text("oncebox run (right credentials)", r.out);
  assert_null(strstr(r.out, REFUSED_LINE));
  free(r.out);
  check_charged(f, 4);

  /* What an operator reads. */
  {
    static const char* const cmds[][4] = {
        {"stats", NULL},
        {"stats", "--json", NULL},
        {"effects", "show", NULL},
        {"effects", "show", "--json", NULL},
        {"outbox", "show", "--json", NULL},
        {"check", NULL},
    };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
      r = run_cli(f, g.right, cmds[i][0], cmds[i][1], cmds[i][2], cmds[i][3]);
      expect_cli(&r, 0, NULL);
      assert_no_secret_in_text(cmds[i][0], r.out);
      free(r.out);
    }
  }
  r = run_cli(f, g.right, "effects", "show", "--json", (char*)NULL);
  expect_cli(&r, 0, "\"confirmed\"");
  free(r.out);

  assert_true(assert_no_secret_in_db(f) >= 1);
  assert_true(assert_no_secret_under(f->dir) >= 5);
}

/* `run --until-idle` waits for effects whose retry is due soon (issue 14:
** it used to exit while they waited out a 1-4 s retry, and one run needed
** 8 invocations). The simulator answers the first two calls with a 503:
** one run charges both orders and exits 0. */
static void test_until_idle_waits_for_a_retry(void** state) {
  fix_t* f = *state;
  cli_out_t r;
  SKIP_IF_NEEDED();
  enqueue_orders(f, 1, 2);
  assert_int_equal(ps_mode(f->sim, "error_5xx", 2, 0, 0), 0);
  r = run_cli(f, g.right, "run", "--until-idle", (char*)NULL);
  expect_cli(&r, 0, NULL);
  free(r.out);
  check_charged(f, 2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_enable_refuses_bad_values),
      cmocka_unit_test_setup_teardown(test_wrong_then_right_credentials, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_cli_credentials, setup, teardown),
      cmocka_unit_test_setup_teardown(test_until_idle_waits_for_a_retry, setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
