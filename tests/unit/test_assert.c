/* SPDX-License-Identifier: Apache-2.0 */
/* OB__ASSERT: compiled into this build (Debug or OB_SANITIZE), it prints
** file:line and the expression and aborts; a true one does nothing. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/util/link.h"
#include "core/util/assert.h"

typedef void (*child_fn)(void);

/* Run fn in a child with stderr on a pipe; the child's wait status, and
** what it wrote in out. */
static int run_child(child_fn fn, char* out, size_t outlen) {
  int fds[2], status = 0;
  size_t got = 0;
  ssize_t n;
  pid_t pid;
  assert_int_equal(pipe(fds), 0);
  fflush(NULL);
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    dup2(fds[1], STDERR_FILENO);
    close(fds[1]);
    fn();
    _exit(0);
  }
  close(fds[1]);
  while (got + 1 < outlen &&
         (n = read(fds[0], out + got, outlen - 1 - got)) > 0)
    got += (size_t)n;
  out[got] = '\0';
  close(fds[0]);
  assert_int_equal(waitpid(pid, &status, 0), pid);
  return status;
}

static void child_false(void) {
  int two = 2;
  OB__ASSERT(two + two == 5);
}

static void child_true(void) {
  int two = 2;
  OB__ASSERT(two + two == 4);
}

/* An invariant inside the library: a link that is online has no failures
** counted. */
static void child_library_invariant(void) {
  ob__link_t l;
  ob__link_init(&l, 1000, 60000);
  l.failures = 3;
  (void)ob__link_failed(&l, 0, NULL);
}

static void test_false_aborts_with_location(void** state) {
  char err[1024];
  int status;
  (void)state;
  if (!OB__ASSERTS_ON) skip();
  status = run_child(child_false, err, sizeof err);
  assert_true(WIFSIGNALED(status));
  assert_int_equal(WTERMSIG(status), SIGABRT);
  assert_non_null(strstr(err, "test_assert.c:"));
  assert_non_null(strstr(err, "assertion failed: two + two == 5"));
}

static void test_true_is_silent(void** state) {
  char err[1024];
  int status;
  (void)state;
  status = run_child(child_true, err, sizeof err);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  assert_string_equal(err, "");
}

static void test_library_asserts_compiled_in(void** state) {
  char err[1024];
  int status;
  (void)state;
  if (!OB__ASSERTS_ON) skip();
  status = run_child(child_library_invariant, err, sizeof err);
  assert_true(WIFSIGNALED(status));
  assert_int_equal(WTERMSIG(status), SIGABRT);
  assert_non_null(strstr(err, "link.c:"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_false_aborts_with_location),
    cmocka_unit_test(test_true_is_silent),
    cmocka_unit_test(test_library_asserts_compiled_in),
  };
  return cmocka_run_group_tests_name("assert", tests, NULL, NULL);
}
