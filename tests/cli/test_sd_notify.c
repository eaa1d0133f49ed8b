/* SPDX-License-Identifier: Apache-2.0 */
/*
** `oncebox run` under a fake systemd (platform/posix/sd_notify.c,
** platform/loop/sd_watch.c): a real process, a real AF_UNIX datagram socket.
** The test binds NOTIFY_SOCKET in a temporary directory (and an abstract
** "@" name), runs the built oncebox with WATCHDOG_USEC=200000, and expects
** READY=1 (with a STATUS=), at least two WATCHDOG=1 pings at about 100 ms,
** then, after SIGTERM, STOPPING=1 and exit 0. A WATCHDOG_PID that is not the
** daemon's turns the pings off. $OB_EMULATOR (qemu, for a cross build)
** prefixes the command when set.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/support/testsupport.h"

static int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Bind a datagram socket at name ("@x": abstract). */
static int bind_notify(const char* name) {
  struct sockaddr_un sa;
  size_t n = strlen(name);
  socklen_t len;
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  assert_true(fd >= 0);
  assert_true(n < sizeof sa.sun_path);
  memset(&sa, 0, sizeof sa);
  sa.sun_family = AF_UNIX;
  memcpy(sa.sun_path, name, n);
  if (name[0] == '@') sa.sun_path[0] = '\0';
  len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n +
                    (name[0] == '@' ? 0 : 1));
  assert_int_equal(bind(fd, (struct sockaddr*)&sa, len), 0);
  return fd;
}

/* One datagram within timeout_ms into buf; 0 on timeout. */
static int recv_msg(int fd, char* buf, size_t n, int timeout_ms) {
  struct pollfd p = {fd, POLLIN, 0};
  ssize_t got;
  if (poll(&p, 1, timeout_ms) <= 0) return 0;
  got = recv(fd, buf, n - 1, 0);
  assert_true(got >= 0);
  buf[got] = '\0';
  return 1;
}

static pid_t spawn(const char* db, const char* sock, const char* wd_pid) {
  const char* bin_dir = getenv("OB_BINARY_DIR");
  const char* emu = getenv("OB_EMULATOR");
  char bin[4096];
  pid_t pid;
  assert_non_null(bin_dir);
  snprintf(bin, sizeof bin, "%s/oncebox", bin_dir);
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    int null = open("/dev/null", O_RDWR);
    dup2(null, 0);
    setenv("NOTIFY_SOCKET", sock, 1);
    setenv("WATCHDOG_USEC", "200000", 1);
    if (wd_pid) setenv("WATCHDOG_PID", wd_pid, 1);
    else unsetenv("WATCHDOG_PID");
    /* Nothing configured but the local queue. */
    unsetenv("ONCEBOX_OUTBOX_QUEUE_URL");
    unsetenv("ONCEBOX_CONSUME_QUEUE_URL");
    unsetenv("ONCEBOX_PROVIDER_URL");
    if (emu != NULL && emu[0] != '\0')
      execlp(emu, emu, bin, "--db", db, "run", (char*)NULL);
    else
      execl(bin, bin, "--db", db, "run", (char*)NULL);
    _exit(127);
  }
  return pid;
}

static void run_case(const char* sock_name, int bind_abstract,
                     const char* wd_pid) {
  char* dir = ts_mkdtemp("sd-notify");
  char* db = ts_path(dir, "db");
  char* path = ts_path(dir, "notify");
  char name[128];
  char buf[512];
  int fd, status, pings = 0, ready = 0, stopping = 0;
  int64_t t0, first = 0, last = 0;
  pid_t pid;
  if (bind_abstract) {
    snprintf(name, sizeof name, "@%s-%ld", sock_name, (long)getpid());
    fd = bind_notify(name);
  } else {
    snprintf(name, sizeof name, "%s", path);
    fd = bind_notify(path);
  }
  pid = spawn(db, name, wd_pid);
  /* READY=1 first (a cold start under qemu may take seconds). */
  assert_true(recv_msg(fd, buf, sizeof buf, 20000));
  if (strstr(buf, "READY=1") != NULL) ready = 1;
  if (!ready) fprintf(stderr, "first message: '%s'\n", buf);
  assert_true(ready);
  assert_non_null(strstr(buf, "STATUS=handling messages"));
  /* Pings for ~700 ms: every 100 ms, so at least two (more under load). */
  t0 = mono_ms();
  while (mono_ms() - t0 < 700) {
    if (!recv_msg(fd, buf, sizeof buf, 100)) continue;
    if (strcmp(buf, "WATCHDOG=1") == 0) {
      if (pings == 0) first = mono_ms();
      last = mono_ms();
      pings++;
    } else {
      fprintf(stderr, "unexpected: '%s'\n", buf);
      fail();
    }
  }
  if (wd_pid != NULL) {
    assert_int_equal(pings, 0);
  } else {
    fprintf(stderr, "%d WATCHDOG=1 in 700 ms (%lld ms apart on average)\n",
            pings, pings > 1 ? (long long)((last - first) / (pings - 1)) : 0LL);
    assert_true(pings >= 2);
  }
  assert_int_equal(kill(pid, SIGTERM), 0);
  t0 = mono_ms();
  while (!stopping && mono_ms() - t0 < 20000) {
    if (!recv_msg(fd, buf, sizeof buf, 1000)) continue;
    if (strstr(buf, "STOPPING=1") != NULL) stopping = 1;
  }
  assert_true(stopping);
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  close(fd);
  free(db);
  free(path);
  ts_rmdir(dir);
}

static void test_path_socket(void** state) {
  (void)state;
  run_case(NULL, 0, NULL);
}

static void test_abstract_socket(void** state) {
  (void)state;
  run_case("ob-sd-notify", 1, NULL);
}

/* WATCHDOG_PID of another process: the variables were inherited, no pings. */
static void test_watchdog_pid_elsewhere(void** state) {
  (void)state;
  run_case(NULL, 0, "1");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_path_socket),
      cmocka_unit_test(test_abstract_socket),
      cmocka_unit_test(test_watchdog_pid_elsewhere),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
