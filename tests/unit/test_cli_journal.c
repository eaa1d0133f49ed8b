/* SPDX-License-Identifier: Apache-2.0 */
/*
** The CLI's log line (ob__cli_log, programs/oncebox/cli_util.c) under systemd:
** when JOURNAL_STREAM names the device:inode of stderr, "<N>" syslog
** priorities and no timestamp (journald stamps lines itself); otherwise, and
** when JOURNAL_STREAM names something else (inherited by a child whose
** stderr was redirected), the plain timestamped line.
**
** ob__cli_log reads the environment once per process: each case runs in a
** child with stderr redirected to a file.
**
** With --log-format json (ob__cli_set_log_format): one object a line, the
** fields that apply and only those, every string escaped (quotes,
** backslashes, control characters, a peer's terminal escape, bytes that
** are not UTF-8); under journald the same object after the "<N>" prefix.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <cmocka.h>

#include "programs/oncebox/cli.h"
#include "tests/support/testsupport.h"

enum { JS_UNSET, JS_MATCH, JS_OTHER };

/* A record with every field set, and text that needs escaping. */
static void log_full_record(void) {
  ob_log_record_t r;
  memset(&r, 0, sizeof r);
  r.level = OB_LOG_WARN;
  r.component = "engine";
  r.event = "message_failed";
  r.message_id = "0190b6d8-3ae7-7ca2-a653-6ff2d5a6f231";
  r.type = "Pay\"ment";
  r.queue = "default";
  r.consumer = "c1";
  r.outcome = "retry";
  r.duration_ms = 12;
  r.error = OB_EHANDLER;
  r.repeated = 3;
  r.msg = "said \"no\"\n\\ \x1b[31m \xff end";
  ob__cli_log_record(NULL, &r);
}

/* Log one line per level with stderr on dir/log; JOURNAL_STREAM per how;
** in JSON (and then one full record more) when json. Returns the file's
** content (malloc'd). */
static char* log_lines_as(const char* dir, int how, int json) {
  char* path = ts_path(dir, "log");
  char* other = ts_path(dir, "other");
  static char buf[4096];
  pid_t pid;
  int status, fd;
  ssize_t n;
  fflush(stderr);
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    struct stat st;
    char v[64];
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || dup2(fd, 2) < 0) _exit(2);
    unsetenv("JOURNAL_STREAM");
    if (how != JS_UNSET) {
      int ofd = open(other, O_WRONLY | O_CREAT, 0600);
      if (fstat(how == JS_MATCH ? 2 : ofd, &st) != 0) _exit(2);
      snprintf(v, sizeof v, "%llu:%llu", (unsigned long long)st.st_dev,
               (unsigned long long)st.st_ino);
      setenv("JOURNAL_STREAM", v, 1);
    }
    if (json) ob__cli_set_log_format(CLI_LOG_JSON);
    ob__cli_log(NULL, OB_LOG_ERROR, "disk on fire");
    ob__cli_log(NULL, OB_LOG_WARN, "retrying");
    ob__cli_log(NULL, OB_LOG_INFO, "handled");
    ob__cli_log(NULL, OB_LOG_DEBUG, "detail");
    if (json) log_full_record();
    fflush(stderr);
    _exit(0);
  }
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  fd = open(path, O_RDONLY);
  assert_true(fd >= 0);
  n = read(fd, buf, sizeof buf - 1);
  assert_true(n >= 0);
  buf[n] = '\0';
  close(fd);
  free(path);
  free(other);
  return strdup(buf);
}

static char* log_lines(const char* dir, int how) {
  return log_lines_as(dir, how, 0);
}

static void test_journal_prefixes(void** state) {
  char* dir = ts_mkdtemp("cli-journal");
  char* out = log_lines(dir, JS_MATCH);
  (void)state;
  assert_string_equal(out,
                      "<3>error disk on fire\n"
                      "<4>warn retrying\n"
                      "<6>info handled\n"
                      "<7>debug detail\n");
  free(out);
  ts_rmdir(dir);
}

/* The plain line: "YYYY-MM-DDTHH:MM:SS.mmmZ level message". */
static void assert_plain(const char* out) {
  const char* want[] = {"error disk on fire", "warn retrying", "info handled",
                        "debug detail"};
  const char* p = out;
  for (int i = 0; i < 4; i++) {
    const char* nl = strchr(p, '\n');
    assert_non_null(nl);
    assert_true(nl - p == 25 + (long)strlen(want[i]));
    assert_true(p[0] == '2' && p[4] == '-' && p[10] == 'T' && p[19] == '.' &&
                p[23] == 'Z' && p[24] == ' ');
    assert_memory_equal(p + 25, want[i], strlen(want[i]));
    p = nl + 1;
  }
  assert_int_equal(*p, '\0');
  assert_null(strchr(out, '<'));
}

static void test_plain_without_journal(void** state) {
  char* dir = ts_mkdtemp("cli-journal");
  char* out = log_lines(dir, JS_UNSET);
  (void)state;
  assert_plain(out);
  free(out);
  /* Inherited JOURNAL_STREAM, stderr elsewhere: plain. */
  out = log_lines(dir, JS_OTHER);
  assert_plain(out);
  free(out);
  ts_rmdir(dir);
}

/* The JSON lines, each after prefix[i] (journald's "<N>" or ""), with the
** time checked for its shape and the rest byte for byte. */
static void assert_json(const char* out, const char* const prefix[5]) {
  static const char* const rest[5] = {
      "\",\"level\":\"error\",\"component\":\"cli\",\"event\":\"log\","
      "\"msg\":\"disk on fire\"}",
      "\",\"level\":\"warn\",\"component\":\"cli\",\"event\":\"log\","
      "\"msg\":\"retrying\"}",
      "\",\"level\":\"info\",\"component\":\"cli\",\"event\":\"log\","
      "\"msg\":\"handled\"}",
      "\",\"level\":\"debug\",\"component\":\"cli\",\"event\":\"log\","
      "\"msg\":\"detail\"}",
      "\",\"level\":\"warn\",\"component\":\"engine\","
      "\"event\":\"message_failed\","
      "\"message_id\":\"0190b6d8-3ae7-7ca2-a653-6ff2d5a6f231\","
      "\"type\":\"Pay\\\"ment\",\"queue\":\"default\",\"consumer\":\"c1\","
      "\"outcome\":\"retry\",\"duration_ms\":12,\"error\":\"OB_EHANDLER\","
      "\"repeated\":3,"
      "\"msg\":\"said \\\"no\\\"\\n\\\\ \\u001b[31m \\ufffd end\"}"};
  const char* p = out;
  for (int i = 0; i < 5; i++) {
    const char* nl = strchr(p, '\n');
    size_t pl = strlen(prefix[i]);
    assert_non_null(nl);
    assert_memory_equal(p, prefix[i], pl);
    p += pl;
    /* {"time":"YYYY-MM-DDTHH:MM:SS.mmmZ */
    assert_memory_equal(p, "{\"time\":\"", 9);
    p += 9;
    assert_true(p[0] == '2' && p[4] == '-' && p[10] == 'T' && p[19] == '.' &&
                p[23] == 'Z');
    p += 24;
    assert_int_equal((size_t)(nl - p), strlen(rest[i]));
    assert_memory_equal(p, rest[i], strlen(rest[i]));
    p = nl + 1;
  }
  assert_int_equal(*p, '\0');
}

static void test_json_lines(void** state) {
  static const char* const none[5] = {"", "", "", "", ""};
  char* dir = ts_mkdtemp("cli-journal");
  char* out = log_lines_as(dir, JS_UNSET, 1);
  (void)state;
  assert_json(out, none);
  free(out);
  out = log_lines_as(dir, JS_OTHER, 1);
  assert_json(out, none);
  free(out);
  ts_rmdir(dir);
}

static void test_json_under_journal_keeps_priorities(void** state) {
  static const char* const prio[5] = {"<3>", "<4>", "<6>", "<7>", "<4>"};
  char* dir = ts_mkdtemp("cli-journal");
  char* out = log_lines_as(dir, JS_MATCH, 1);
  (void)state;
  assert_json(out, prio);
  free(out);
  ts_rmdir(dir);
}

static void test_parse_log_format(void** state) {
  (void)state;
  assert_int_equal(ob__cli_parse_log_format("text"), CLI_LOG_TEXT);
  assert_int_equal(ob__cli_parse_log_format("json"), CLI_LOG_JSON);
  assert_int_equal(ob__cli_parse_log_format("JSON"), -1);
  assert_int_equal(ob__cli_parse_log_format(""), -1);
  assert_int_equal(ob__cli_parse_log_format(NULL), -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_journal_prefixes),
      cmocka_unit_test(test_plain_without_journal),
      cmocka_unit_test(test_json_lines),
      cmocka_unit_test(test_json_under_journal_keeps_priorities),
      cmocka_unit_test(test_parse_log_format),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
