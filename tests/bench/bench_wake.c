/* SPDX-License-Identifier: Apache-2.0 */
/*
** How soon an idle engine handles a message another process committed:
** the engine sleeps attached to a loop; a child process opens the same
** file, enqueues one message, closes, waits until it was handled, and
** repeats. The latency is from the child's COMMIT (ob_enqueue returned) to
** the handler's run, both on CLOCK_REALTIME. The poll interval is 10
** minutes: only the -wal watch can wake the engine. (A configured poll
** interval is raised to 5 minutes while the watch works, so there is no
** polling mode to put beside it; the comparison is the 250 ms that a
** terminal's field use asks for.)
**
**   build/tests/bench/ob-bench-wake [-n N] [-d DIR]
**
** Prints p50, p90, p99 and max, and p99 / 250 ms.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "oncebox.h"

static int64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

typedef struct run_s {
  ob_engine_t* e;
  uv_timer_t check;
  int to_child;
  int n;
  int handled;
  int acked;
  int64_t* lat_us;
  pid_t pid;
  int status;
  int exited;
} run_t;

static run_t* g_run;

static int on_ping(ob_tx_t* tx, const ob_message_t* m, void* arg) {
  int64_t sent = strtoll(m->body, NULL, 10);
  (void)tx;
  (void)arg;
  if (g_run->handled < g_run->n) g_run->lat_us[g_run->handled] = now_us() - sent;
  g_run->handled++;
  return OB_DONE;
}

static void detached(ob_engine_t* e, void* arg) {
  (void)e;
  (void)arg;
}

static void check(uv_timer_t* t) {
  run_t* r = t->data;
  char b = 'k';
  while (r->acked < r->handled) {
    r->acked++;
    if (write(r->to_child, &b, 1) != 1) break;
  }
  if (!r->exited && waitpid(r->pid, &r->status, WNOHANG) == r->pid)
    r->exited = 1;
  if (r->exited) {
    uv_timer_stop(t);
    uv_close((uv_handle_t*)t, NULL);
    ob_detach(r->e, detached, NULL);
  }
}

static int cmp64(const void* a, const void* b) {
  int64_t x = *(const int64_t*)a, y = *(const int64_t*)b;
  return x < y ? -1 : x > y;
}

/* One mode: returns the sorted latencies' p99 in us, or -1. */
static int64_t run_mode(const char* dir, const char* name, int poll_ms, int n) {
  char path[512], err[256];
  ob_options_t o;
  uv_loop_t loop;
  run_t r;
  int down[2];

  snprintf(path, sizeof path, "%s/wake-%s-%d.db", dir, name, (int)getpid());
  unlink(path);
  ob_options_init(&o);
  o.db_path = path;
  o.poll_interval_ms = poll_ms;
  memset(&r, 0, sizeof r);
  r.n = n;
  r.lat_us = calloc((size_t)n, sizeof *r.lat_us);
  g_run = &r;
  if (ob_open(&r.e, &o, err, sizeof err) != 0) {
    fprintf(stderr, "open %s: %s\n", path, err);
    return -1;
  }
  ob_register(r.e, "Ping", "bench-wake", on_ping, NULL);
  if (pipe(down) != 0 || uv_loop_init(&loop) != 0) return -1;
  ob_attach(r.e, &loop);
  uv_run(&loop, UV_RUN_NOWAIT);
  r.to_child = down[1];
  r.pid = fork();
  if (r.pid == 0) {
    close(down[1]);
    for (int i = 0; i < n; i++) {
      ob_engine_t* e = NULL;
      ob_envelope_t env;
      char id[OB_UUID_BUFLEN], body[32];
      struct timeval tv = {30, 0};
      fd_set rd;
      char b;
      if (ob_open(&e, &o, NULL, 0) != 0) _exit(10);
      snprintf(id, sizeof id, "0190b6d8-3ae7-7ca2-a653-%012d", i);
      memset(&env, 0, sizeof env);
      env.type = "Ping";
      env.id = id;
      /* The commit time: ob_enqueue returns after COMMIT; it is stamped
      ** just before, the closest the body can carry. */
      snprintf(body, sizeof body, "%lld", (long long)now_us());
      env.body = body;
      env.body_len = strlen(body);
      if (ob_enqueue(e, &env) != 0) _exit(11);
      ob_close(e);
      FD_ZERO(&rd);
      FD_SET(down[0], &rd);
      if (select(down[0] + 1, &rd, NULL, NULL, &tv) != 1) _exit(12);
      if (read(down[0], &b, 1) != 1) _exit(13);
    }
    _exit(0);
  }
  close(down[0]);
  uv_timer_init(&loop, &r.check);
  r.check.data = &r;
  uv_timer_start(&r.check, check, 2, 2);
  uv_run(&loop, UV_RUN_DEFAULT);
  close(down[1]);
  uv_loop_close(&loop);
  ob_close(r.e);
  if (!WIFEXITED(r.status) || WEXITSTATUS(r.status) != 0 || r.handled != n) {
    fprintf(stderr, "%s: child exit %d, %d of %d handled\n", name,
            WIFEXITED(r.status) ? WEXITSTATUS(r.status) : -1, r.handled, n);
    return -1;
  }
  qsort(r.lat_us, (size_t)n, sizeof *r.lat_us, cmp64);
  printf("%-22s n=%d  p50 %7.2f ms  p90 %7.2f ms  p99 %7.2f ms  max %7.2f ms\n",
         name, n, r.lat_us[n / 2] / 1000.0, r.lat_us[n * 9 / 10] / 1000.0,
         r.lat_us[(n * 99) / 100] / 1000.0, r.lat_us[n - 1] / 1000.0);
  {
    int64_t p99 = r.lat_us[(n * 99) / 100];
    free(r.lat_us);
    unlink(path);
    return p99;
  }
}

int main(int argc, char** argv) {
  const char* dir = ".";
  int n = 200, opt;
  int64_t watch;
  while ((opt = getopt(argc, argv, "n:d:")) != -1) {
    if (opt == 'n') n = atoi(optarg);
    else if (opt == 'd') dir = optarg;
    else {
      fprintf(stderr, "usage: %s [-n N] [-d DIR]\n", argv[0]);
      return 2;
    }
  }
  if (n < 10) n = 10;
  printf("commit in another process -> handled, %d sequential messages, %s\n",
         n, dir);
  watch = run_mode(dir, "wal watch", 600000, n);
  if (watch < 0) return 1;
  printf("p99 / 250 ms target: %.3f\n", watch / 250000.0);
  return 0;
}
