/* SPDX-License-Identifier: Apache-2.0 */
/* The wall clock set back a day while a real process runs: libfaketime
** preloaded with its timestamp file rewritten mid-run (FAKETIME_NO_CACHE)
** and the monotonic clocks left alone, as on a terminal whose RTC is
** reset. The child is this executable again (clocks_retry_child): 20
** messages fail once and wait 1 s for their retry in `ob_run` until idle;
** the parent sets the clock back once all have failed and times how long
** the child takes to finish. Skips without faketime, and where libfaketime
** cannot preload (a sanitizer build). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/integration/clocks/clocks.h"

#define N_MSGS 20
#define RETRY_MS 1000
/* The retry's delay plus a process's scheduling on a busy 2-core machine;
** before the re-base the child waited the day out. */
#define BOUND_MS (RETRY_MS + 3000)

/* ---- the child ------------------------------------------------------------ */

static const char* g_dir;
static int g_failed, g_done;

static int child_flaky(ob_tx_t* tx, const ob_message_t* m, void* arg) {
  (void)arg;
  if (m->attempts == 0) {
    if (++g_failed == N_MSGS) {
      char p[1024];
      FILE* f;
      snprintf(p, sizeof p, "%s/failed", g_dir);
      f = fopen(p, "w");
      if (f) fclose(f);
    }
    return ob_tx_retry(tx, RETRY_MS, "supplier busy");
  }
  g_done++;
  return OB_DONE;
}

static void child_log(void* ctx, ob_log_level_t level, const char* msg) {
  (void)ctx;
  (void)level;
  fprintf(stderr, "%s\n", msg);
}

int clocks_retry_child(const char* dir) {
  ob_options_t o;
  ob_engine_t* e = NULL;
  char path[1024], err[256], id[OB_UUID_BUFLEN];
  int rc;
  g_dir = dir;
  snprintf(path, sizeof path, "%s/t.db", dir);
  ob_options_init(&o);
  o.db_path = path;
  o.log = child_log;
  o.log_level = OB_LOG_WARN;
  if (ob_open(&e, &o, err, sizeof err) != 0) {
    fprintf(stderr, "ob_open: %s\n", err);
    return 2;
  }
  if (ob_register(e, "Stock", "reserve-v1", child_flaky, NULL) != 0) return 2;
  for (int i = 0; i < N_MSGS; i++) {
    ob_envelope_t env;
    memset(&env, 0, sizeof env);
    env.type = "Stock";
    env.id = fx_event(i, id);
    env.body = "{}";
    env.body_len = 2;
    if (ob_enqueue(e, &env) != 0) return 2;
  }
  rc = ob_run(e, OB_RUN_UNTIL_IDLE, 0);
  ob_close(e);
  fprintf(stderr, "child: run %d, %d handled\n", rc, g_done);
  return rc == 0 && g_done == N_MSGS ? 0 : 3;
}

/* ---- the parent ----------------------------------------------------------- */

static int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Replace the timestamp file at once: libfaketime rereads it on every
** clock read and must never see it half written. */
static void set_offset(const char* dir, const char* offset) {
  char p[1024], tmp[1024];
  FILE* f;
  snprintf(p, sizeof p, "%s/faketime", dir);
  snprintf(tmp, sizeof tmp, "%s/faketime.tmp", dir);
  f = fopen(tmp, "w");
  assert_non_null(f);
  fprintf(f, "%s\n", offset);
  fclose(f);
  assert_int_equal(rename(tmp, p), 0);
}

void test_faketime_retries_jump_back_in_run(void** state) {
  CLOCKS_SQLITE_ONLY("the CLI under libfaketime on a SQLite file");
  char self[1024], p[1024], cmd[2048];
  char* dir;
  char* lib;
  ssize_t n;
  pid_t pid;
  int st = 0, exited = 0;
  int64_t t0, waited;
  (void)state;
  TS_FAKETIME_OR_SKIP(lib);
  n = readlink("/proc/self/exe", self, sizeof self - 1);
  assert_true(n > 0);
  self[n] = '\0';
  dir = ts_mkdtemp("clocks-faketime");
  set_offset(dir, "+0d");
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    snprintf(p, sizeof p, "%s/faketime", dir);
    setenv("LD_PRELOAD", lib, 1);
    setenv("FAKETIME_TIMESTAMP_FILE", p, 1);
    setenv("FAKETIME_NO_CACHE", "1", 1);
    setenv("FAKETIME_DONT_FAKE_MONOTONIC", "1", 1);
    unsetenv("FAKETIME");
    snprintf(p, sizeof p, "%s/child.log", dir);
    if (freopen(p, "w", stderr) == NULL) _exit(4);
    {
      char* argv[] = {self, "--retry-child", dir, NULL};
      ts_exec_built(self, argv);
    }
    _exit(5);
  }
  snprintf(p, sizeof p, "%s/failed", dir);
  for (int i = 0; i < 2000 && access(p, F_OK) != 0; i++) usleep(10000);
  assert_int_equal(access(p, F_OK), 0);
  set_offset(dir, "-1d");
  t0 = mono_ms();
  while (!exited && mono_ms() - t0 < 30000) {
    if (waitpid(pid, &st, WNOHANG) == pid) exited = 1;
    else usleep(20000);
  }
  waited = mono_ms() - t0;
  if (!exited) {
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
  }
  snprintf(cmd, sizeof cmd, "cat '%s/child.log' >&2", dir);
  if (system(cmd) != 0) print_message("no child log\n");
  print_message("the child finished %lld ms after the clock went back\n",
                (long long)waited);
  assert_true(exited && WIFEXITED(st) && WEXITSTATUS(st) == 0);
  assert_true(waited <= BOUND_MS);
  snprintf(cmd, sizeof cmd, "grep -q 'clock went back 86400 s: the engine "
           "clock runs on' '%s/child.log'", dir);
  assert_int_equal(system(cmd), 0);
  free(lib);
  ts_rmdir(dir);
}
