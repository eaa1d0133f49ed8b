/* SPDX-License-Identifier: Apache-2.0 */
/* The engine on a libuv loop: attached to the caller's loop, woken by
** enqueue, run until idle, stopped by signals. Real clock, real loop. */
#include "tests/integration/engine_fixture.h"
#include "oncebox_payout.h"
#include "core/engine/engine_host.h"

#include <signal.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <time.h>
#include <uv.h>

#define PAY OB_PAYOUT_MESSAGE_TYPE

static fixture_t* fx_new_real(int batch) {
  fixture_t* f = fx_new(batch);
  ob_close(f->e);
  f->opts.clock = NULL;  /* real time for real timers */
  f->opts.poll_interval_ms = 50;
  fx_open(f);
  return f;
}

typedef struct ctx_s {
  fixture_t* f;
  uv_timer_t timer;
  int enqueued;
  int detached;
} ctx_t;

static void detached_cb(ob_engine_t* e, void* arg) {
  (void)e;
  ((ctx_t*)arg)->detached++;
}

/* Enqueue from a loop callback; the engine wakes at once and handles it;
** then detach, and the loop ends. */
static void tick(uv_timer_t* t) {
  ctx_t* c = t->data;
  char id[OB_UUID_BUFLEN], body[256];
  ob_payout_stats_t st;
  if (c->enqueued < 20) {
    fx_enqueue(c->f, PAY, fx_event(c->enqueued, id), fx_payment(c->enqueued, body));
    c->enqueued++;
    return;
  }
  assert_int_equal(ob_payout_stats(c->f->e, &st), 0);
  if (st.payouts < 20) return;
  uv_timer_stop(t);
  uv_close((uv_handle_t*)t, NULL);
  assert_int_equal(ob_detach(c->f->e, detached_cb, c), 0);
}

static void test_attach_to_caller_loop(void** state) {
  fixture_t* f = fx_new_real(1);
  uv_loop_t loop;
  ctx_t c;
  (void)state;
  memset(&c, 0, sizeof c);
  c.f = f;
  ob_register_payout(f->e);
  assert_int_equal(uv_loop_init(&loop), 0);
  assert_int_equal(ob_attach(f->e, &loop), 0);
  assert_int_equal(ob_attach(f->e, &loop), OB_ESTATE);
  uv_timer_init(&loop, &c.timer);
  c.timer.data = &c;
  uv_timer_start(&c.timer, tick, 1, 5);
  assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
  assert_int_equal(c.detached, 1);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM merchant_payout"), 20);
  assert_int_equal(ob_detach(f->e, NULL, NULL), OB_ESTATE);
  assert_int_equal(uv_loop_close(&loop), 0);
  fx_free(f);
}

/* ob_close on an attached engine closes its handles itself. */
static void test_close_while_attached(void** state) {
  fixture_t* f = fx_new_real(1);
  uv_loop_t loop;
  (void)state;
  assert_int_equal(uv_loop_init(&loop), 0);
  assert_int_equal(ob_attach(f->e, &loop), 0);
  ob_close(f->e);
  f->e = NULL;
  assert_int_equal(uv_loop_close(&loop), 0);
  fx_free(f);
}

/* On PostgreSQL no file changes when another process commits: an idle
** engine there finds another process's rows by its poll_interval_ms (1 s
** by default). LISTEN/NOTIFY would be that backend's wake; it is not built
** (docs/postgresql.md), so these cases, whose poll is 10 minutes, skip. */
#define OTHER_PROCESS_WAKE_SQLITE_ONLY()                                    \
  do {                                                                      \
    if (ts_backend_is_pg()) {                                               \
      print_message("skipped on postgresql: no wake from another process's" \
                    " commit there (LISTEN/NOTIFY not built); it polls\n"); \
      skip();                                                               \
    }                                                                       \
  } while (0)

/* Another process enqueues while the engine sleeps with a 10-minute poll:
** the watch on the WAL file wakes it. */
typedef struct watch_ctx_s {
  fixture_t* f;
  uv_timer_t check;
  int rounds;
  long long payouts;
} watch_ctx_t;

static void watch_detached(ob_engine_t* e, void* arg) {
  (void)e;
  (void)arg;
}

static void watch_check(uv_timer_t* t) {
  watch_ctx_t* c = t->data;
  ob_payout_stats_t st;
  assert_int_equal(ob_payout_stats(c->f->e, &st), 0);
  c->payouts = st.payouts;
  if (st.payouts == 5 || ++c->rounds > 200) {
    uv_timer_stop(t);
    uv_close((uv_handle_t*)t, NULL);
    ob_detach(c->f->e, watch_detached, NULL);
  }
}

static void test_other_process_wakes_idle_engine(void** state) {
  fixture_t* f;
  uv_loop_t loop;
  watch_ctx_t c;
  char id[OB_UUID_BUFLEN], body[256];
  pid_t pid;
  int status;
  (void)state;
  OTHER_PROCESS_WAKE_SQLITE_ONLY();
  f = fx_new_real(1);
  ob_close(f->e);
  f->opts.poll_interval_ms = 600000;
  fx_open(f);
  ob_register_payout(f->e);
  assert_int_equal(uv_loop_init(&loop), 0);
  assert_int_equal(ob_attach(f->e, &loop), 0);
  /* Let it go idle first. */
  uv_run(&loop, UV_RUN_NOWAIT);
  pid = fork();
  if (pid == 0) {
    ob_engine_t* e = NULL;
    usleep(200000);
    if (ob_open(&e, &f->opts, NULL, 0) != 0) _exit(10);
    for (int i = 0; i < 5; i++) {
      ob_envelope_t env;
      memset(&env, 0, sizeof env);
      env.type = PAY;
      env.id = fx_event(i, id);
      env.body = fx_payment(i, body);
      env.body_len = strlen(body);
      if (ob_enqueue(e, &env) != 0) _exit(11);
    }
    ob_close(e);
    _exit(0);
  }
  memset(&c, 0, sizeof c);
  c.f = f;
  uv_timer_init(&loop, &c.check);
  c.check.data = &c;
  /* Checked every 50 ms for up to 10 s: far below the 10-minute poll. */
  uv_timer_start(&c.check, watch_check, 50, 50);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_int_equal(WEXITSTATUS(status), 0);
  assert_int_equal(c.payouts, 5);
  assert_int_equal(uv_loop_close(&loop), 0);
  fx_free(f);
}

/* Many enqueues from another process, one at a time: each must be handled
** before the next is sent. The engine sleeps with a 10-minute poll, so only
** the watch on the WAL file can wake it. An inotify event arrives when the
** other process writes its WAL frames, before its commit is visible (the
** wal-index is updated after the fsync, through shared memory, which
** inotify does not see): a runner that looks once then and sleeps misses
** the commit. Each trial has a generous 10 s deadline; the latency itself
** is measured by tests/bench (ob-bench-wake). */
#define SEQ_TRIALS 40
static int g_pings;

static int ping_handler(ob_tx_t* tx, const ob_message_t* m, void* arg) {
  (void)tx;
  (void)m;
  (void)arg;
  g_pings++;
  return OB_DONE;
}

typedef struct seq_ctx_s {
  ob_engine_t* e;
  uv_timer_t check;
  int to_child;
  int acked;
  pid_t pid;
  int status;
  int exited;
} seq_ctx_t;

static void seq_check(uv_timer_t* t) {
  seq_ctx_t* c = t->data;
  char b = 'k';
  while (c->acked < g_pings) {
    c->acked++;
    if (write(c->to_child, &b, 1) != 1) break;
  }
  if (!c->exited && waitpid(c->pid, &c->status, WNOHANG) == c->pid)
    c->exited = 1;
  if (c->exited) {
    uv_timer_stop(t);
    uv_close((uv_handle_t*)t, NULL);
    ob_detach(c->e, watch_detached, NULL);
  }
}

static void test_other_process_sequential_enqueues(void** state) {
  fixture_t* f;
  uv_loop_t loop;
  seq_ctx_t c;
  int down[2];
  (void)state;
  OTHER_PROCESS_WAKE_SQLITE_ONLY();
  f = fx_new_real(1);
  ob_close(f->e);
  f->opts.poll_interval_ms = 600000;
  fx_open(f);
  g_pings = 0;
  assert_int_equal(ob_register(f->e, "Ping", "count", ping_handler, NULL), 0);
  assert_int_equal(pipe(down), 0);
  assert_int_equal(uv_loop_init(&loop), 0);
  assert_int_equal(ob_attach(f->e, &loop), 0);
  uv_run(&loop, UV_RUN_NOWAIT);
  memset(&c, 0, sizeof c);
  c.e = f->e;
  c.to_child = down[1];
  c.pid = fork();
  if (c.pid == 0) {
    char id[OB_UUID_BUFLEN];
    close(down[1]);
    for (int i = 0; i < SEQ_TRIALS; i++) {
      ob_engine_t* e = NULL;
      ob_envelope_t env;
      struct timeval tv = {10, 0};
      fd_set rd;
      char b;
      if (ob_open(&e, &f->opts, NULL, 0) != 0) _exit(10);
      memset(&env, 0, sizeof env);
      env.type = "Ping";
      env.id = fx_event(1000 + i, id);
      env.body = "{}";
      env.body_len = 2;
      if (ob_enqueue(e, &env) != 0) _exit(11);
      ob_close(e);
      FD_ZERO(&rd);
      FD_SET(down[0], &rd);
      if (select(down[0] + 1, &rd, NULL, NULL, &tv) != 1) _exit(100 + i);
      if (read(down[0], &b, 1) != 1) _exit(12);
    }
    _exit(0);
  }
  close(down[0]);
  uv_timer_init(&loop, &c.check);
  c.check.data = &c;
  uv_timer_start(&c.check, seq_check, 5, 5);
  uv_run(&loop, UV_RUN_DEFAULT);
  close(down[1]);
  assert_true(WIFEXITED(c.status));
  if (WEXITSTATUS(c.status) >= 100)
    fail_msg("enqueue %d of %d from another process was not handled within "
             "10 s", WEXITSTATUS(c.status) - 100 + 1, SEQ_TRIALS);
  assert_int_equal(WEXITSTATUS(c.status), 0);
  assert_int_equal(g_pings, SEQ_TRIALS);
  assert_int_equal(uv_loop_close(&loop), 0);
  fx_free(f);
}

/* --until-idle waits for delayed messages due within its horizon (here a
** minute; by default the poll interval, 50 ms here), then returns. */
static void test_until_idle_waits_for_delayed(void** state) {
  fixture_t* f = fx_new_real(4);
  char id[OB_UUID_BUFLEN], body[256];
  ob_envelope_t env;
  (void)state;
  ob_close(f->e);
  f->opts.idle_horizon_ms = 60000;
  fx_open(f);
  ob_register_payout(f->e);
  for (int i = 0; i < 10; i++) fx_enqueue(f, PAY, fx_event(i, id), fx_payment(i, body));
  memset(&env, 0, sizeof env);
  env.type = PAY;
  env.id = fx_event(10, id);
  env.body = fx_payment(10, body);
  env.body_len = strlen(body);
  env.delay_ms = 300;
  assert_int_equal(ob_enqueue(f->e, &env), 0);
  assert_int_equal(ob_run(f->e, OB_RUN_UNTIL_IDLE, 0), 0);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM merchant_payout"), 11);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM queue"), 0);
  fx_free(f);
}

/* Handlers that tell the parent, through a pipe, that they are in hand. */
static int in_hand_fd = -1;
static int sleep_us = 20000;
static int told_signal; /* the worker's: 'T' was written */
static ob_engine_t* worker_engine; /* the worker's own engine */

static int slow_handler(ob_tx_t* tx, const ob_message_t* m, void* arg) {
  ob_value_t p[1];
  (void)arg;
  if (in_hand_fd >= 0 && write(in_hand_fd, "x", 1) != 1) return OB_EIO;
  /* Sleep the whole time even when a signal interrupts: the message stays
  ** in hand until it is done. In 10 ms slices, telling the parent ('T')
  ** once the engine is stopping, i.e. the first signal was handled: a pipe
  ** handshake, since /proc's SigCgt is not the guest's under an emulator
  ** (qemu-user reports every signal as caught), and the handler may run
  ** between two sleeps, so EINTR cannot tell either. */
  for (int left = sleep_us; left > 0; left -= 10000) {
    int us = left < 10000 ? left : 10000;
    struct timespec ts = {0, us * 1000L};
    while (nanosleep(&ts, &ts) != 0) {}
    if (!told_signal && worker_engine != NULL &&
        ob__engine_stopping(worker_engine)) {
      told_signal = 1;
      if (in_hand_fd >= 0 && write(in_hand_fd, "T", 1) != 1) return OB_EIO;
    }
  }
  p[0] = OB_VTEXT(m->id);
  if (ob_tx_exec(tx, "CREATE TABLE IF NOT EXISTS done(id TEXT PRIMARY KEY)",
                 NULL, 0, NULL, NULL) < 0)
    return OB_EIO;
  return ob_tx_exec(tx, "INSERT INTO done(id) VALUES (?)", p, 1, NULL, NULL) < 0
             ? OB_EIO
             : OB_DONE;
}

static pid_t start_slow_worker(fixture_t* f, int pipe_w) {
  pid_t pid = fork();
  if (pid == 0) {
    ob_engine_t* e = NULL;
    in_hand_fd = pipe_w;
    if (ob_open(&e, &f->opts, NULL, 0) != 0) _exit(10);
    worker_engine = e;
    ob_register(e, "Slow", "slow", slow_handler, NULL);
    int rc = ob_run(e, OB_RUN_FOREVER, 1);
    ob_close(e);
    _exit(rc == 0 ? 0 : 11);
  }
  return pid;
}

/* Wait until the worker is inside its k-th handler call. */
static void wait_in_hand(int fd, int k) {
  char c;
  for (int i = 0; i < k; i++) assert_int_equal(read(fd, &c, 1), 1);
}

/* SIGTERM while a message is in hand: it is finished and committed, no new
** message is claimed, and the process exits 0. */
static void test_sigterm_finishes_message_in_hand(void** state) {
  fixture_t* f = fx_new_real(1);
  char id[OB_UUID_BUFLEN];
  int status, fds[2];
  pid_t pid;
  (void)state;
  for (int i = 0; i < 200; i++) fx_enqueue(f, "Slow", fx_event(i, id), "{}");
  ob_close(f->e);
  f->e = NULL;
  assert_int_equal(pipe(fds), 0);
  sleep_us = 100000;
  pid = start_slow_worker(f, fds[1]);
  wait_in_hand(fds[0], 3);  /* two done, the third in hand */
  assert_int_equal(kill(pid, SIGTERM), 0);
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM done"), 3);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM queue"), 197);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM processed_message"), 3);
  close(fds[0]);
  close(fds[1]);
  fx_open(f);
  fx_free(f);
}

/* Wait until the worker's first signal handler has run (its message
** handler writes 'T'). Two signals sent back to back could otherwise merge
** into one while pending. */
static void wait_signal_handled(int fd) {
  char c = 0;
  while (c != 'T') {
    if (read(fd, &c, 1) != 1)
      fail_msg("worker never told it handled the first SIGTERM");
  }
}

/* Run the slow worker on 100 messages in batches of 50, a message taking
** 4 s, send SIGTERM while the first is in hand, then send a second signal
** `gap_ms` after the first was handled. */
static pid_t signal_twice(fixture_t* f, int fds[2], int second, int gap_ms) {
  char id[OB_UUID_BUFLEN];
  pid_t pid;
  for (int i = 0; i < 100; i++) fx_enqueue(f, "Slow", fx_event(i, id), "{}");
  ob_close(f->e);
  f->e = NULL;
  assert_int_equal(pipe(fds), 0);
  sleep_us = 4000000;
  pid = start_slow_worker(f, fds[1]);
  close(fds[1]);  /* a worker that dies ends the parent's reads */
  fds[1] = -1;
  wait_in_hand(fds[0], 1);
  kill(pid, SIGTERM);
  wait_signal_handled(fds[0]);
  if (gap_ms > 0) {
    struct timespec ts = {gap_ms / 1000, (gap_ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {}
  }
  kill(pid, second);
  return pid;
}

/* A second signal well after the first ends the process at once: the batch
** in hand is rolled back by SQLite, effects and acks together. */
static void test_second_signal_exits_at_once(void** state) {
  fixture_t* f = fx_new_real(50);
  int status, fds[2];
  pid_t pid;
  (void)state;
  pid = signal_twice(f, fds, SIGTERM, 1500);
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFSIGNALED(status));
  assert_int_equal(WTERMSIG(status), SIGTERM);
  close(fds[0]);
  fx_open(f);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM sqlite_schema WHERE"
                               " name = 'done'"),
                   0);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM queue"), 100);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM processed_message"), 0);
  assert_int_equal(ob_check(f->e, NULL, NULL), 0);
  fx_free(f);
}

/* The same request delivered twice is one request: GNU timeout signals the
** child, then its process group, so the child gets SIGTERM twice within a
** few milliseconds (under load, after the first was already handled). The
** message in hand is finished and committed and the process exits 0, as
** after one signal; a SIGINT echo (Ctrl-C reaching the group) counts too.
** Before the repeat window, the echo killed the process mid-batch: `oncebox
** run` under `timeout` lost its stop line (cli_logs, under CI load). */
static void test_signal_echo_is_one_request(void** state) {
  static const int second[] = {SIGTERM, SIGINT};
  for (int k = 0; k < 2; k++) {
    fixture_t* f = fx_new_real(50);
    int status, fds[2];
    pid_t pid;
    (void)state;
    pid = signal_twice(f, fds, second[k], 20);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFEXITED(status))
      fail_msg("signal %d 20 ms after SIGTERM killed the worker (status 0x%x)",
               second[k], status);
    assert_int_equal(WEXITSTATUS(status), 0);
    close(fds[0]);
    fx_open(f);
    assert_int_equal(fx_count(f, "SELECT count(*) FROM done"), 1);
    assert_int_equal(fx_count(f, "SELECT count(*) FROM queue"), 99);
    assert_int_equal(fx_count(f, "SELECT count(*) FROM processed_message"), 1);
    assert_int_equal(ob_check(f->e, NULL, NULL), 0);
    fx_free(f);
  }
}

/* A backlog must not starve the loop's I/O: between two transactions the
** loop polls its sockets (the relay's and the consumer's replies). Here a
** byte waits in a socket before the loop starts; it must be read while the
** backlog drains, not after. Ordering by libuv's own semantics, not a time
** measurement: with the defect (a timer re-armed at 0 from its callback,
** libuv #4245) the read came only after all 200 messages. */
typedef struct io_ctx_s {
  fixture_t* f;
  uv_pipe_t pipe;
  uv_timer_t check;
  char byte;
  long long payouts_at_read;
  int read;
} io_ctx_t;

static void io_alloc(uv_handle_t* h, size_t hint, uv_buf_t* buf) {
  io_ctx_t* c = h->data;
  (void)hint;
  *buf = uv_buf_init(&c->byte, 1);
}

static void io_read(uv_stream_t* s, ssize_t n, const uv_buf_t* buf) {
  io_ctx_t* c = s->data;
  ob_payout_stats_t st;
  (void)buf;
  if (n <= 0 || c->read) return;
  assert_int_equal(ob_payout_stats(c->f->e, &st), 0);
  c->payouts_at_read = st.payouts;
  c->read = 1;
  uv_read_stop(s);
  uv_close((uv_handle_t*)s, NULL);
}

static void io_check(uv_timer_t* t) {
  io_ctx_t* c = t->data;
  ob_payout_stats_t st;
  assert_int_equal(ob_payout_stats(c->f->e, &st), 0);
  if (st.payouts < 200 || !c->read) return;
  uv_timer_stop(t);
  uv_close((uv_handle_t*)t, NULL);
  assert_int_equal(ob_detach(c->f->e, NULL, NULL), 0);
}

static void test_backlog_does_not_starve_io(void** state) {
  fixture_t* f = fx_new_real(1);
  uv_loop_t loop;
  io_ctx_t c;
  int sv[2];
  char id[OB_UUID_BUFLEN], body[256];
  (void)state;
  memset(&c, 0, sizeof c);
  c.f = f;
  c.payouts_at_read = -1;
  ob_register_payout(f->e);
  for (int i = 0; i < 200; i++)
    assert_int_equal(fx_enqueue(f, PAY, fx_event(i, id), fx_payment(i, body)), 0);
  assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  assert_int_equal(write(sv[1], "x", 1), 1);
  assert_int_equal(uv_loop_init(&loop), 0);
  assert_int_equal(uv_pipe_init(&loop, &c.pipe, 0), 0);
  assert_int_equal(uv_pipe_open(&c.pipe, sv[0]), 0);
  c.pipe.data = &c;
  assert_int_equal(uv_read_start((uv_stream_t*)&c.pipe, io_alloc, io_read), 0);
  uv_timer_init(&loop, &c.check);
  c.check.data = &c;
  uv_timer_start(&c.check, io_check, 5, 5);
  assert_int_equal(ob_attach(f->e, &loop), 0);
  assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
  assert_int_equal(c.read, 1);
  printf("the socket was read after %lld of 200 messages\n", c.payouts_at_read);
  assert_true(c.payouts_at_read < 10);
  assert_int_equal(fx_count(f, "SELECT count(*) FROM merchant_payout"), 200);
  assert_int_equal(uv_loop_close(&loop), 0);
  close(sv[1]);
  fx_free(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_attach_to_caller_loop),
      cmocka_unit_test(test_close_while_attached),
      cmocka_unit_test(test_backlog_does_not_starve_io),
      cmocka_unit_test(test_until_idle_waits_for_delayed),
      cmocka_unit_test(test_other_process_wakes_idle_engine),
      cmocka_unit_test(test_other_process_sequential_enqueues),
      cmocka_unit_test(test_sigterm_finishes_message_in_hand),
      cmocka_unit_test(test_second_signal_exits_at_once),
      cmocka_unit_test(test_signal_echo_is_one_request),
  };
  return cmocka_run_group_tests_name("loop", tests, NULL, NULL);
}
