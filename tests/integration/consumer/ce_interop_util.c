/* SPDX-License-Identifier: Apache-2.0 */
/* CloudEvents interop helpers of the consumer tests (ce_interop_util.h). */
#include "tests/integration/consumer/ce_interop_util.h"

#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/support/testsupport.h"

extern char** environ;

const char* ci_skip_reason(void) {
  static char why[4600];
  static const char* const need[] = {"cloudevents/package.json",
                                     "@aws-sdk/client-sqs/package.json",
                                     "@smithy/node-http-handler/package.json"};
  const char* r = sq_skip_reason();
  const char* src = getenv("OB_SOURCE_DIR");
  struct stat st;
  char p[4300];
  if (r != NULL) return r;
  for (size_t i = 0; i < sizeof need / sizeof need[0]; i++) {
    snprintf(p, sizeof p, "%s/tests/interop/node_modules/%s", src, need[i]);
    if (stat(p, &st) != 0) {
      snprintf(why, sizeof why,
               "skipped: %s missing (the CloudEvents and AWS SDKs for "
               "JavaScript; run: cd %s/tests/interop && npm ci)",
               p, src);
      return why;
    }
  }
  return NULL;
}

/* ---- running a script ------------------------------------------------------ */

/* The environment of the scripts: this process's, without the AWS_*
** variables and proxies, plus the test credentials and empty AWS files. */
static char** script_env(void) {
  static const char* const ours[] = {
      "AWS_ACCESS_KEY_ID=" SQ_AKID, "AWS_SECRET_ACCESS_KEY=" SQ_SECRET,
      "AWS_REGION=" SQ_REGION, "AWS_CONFIG_FILE=/dev/null",
      "AWS_SHARED_CREDENTIALS_FILE=/dev/null",
      "AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED=true"};
  size_t n = 0, k = 0;
  char** env;
  while (environ[n] != NULL) n++;
  env = calloc(n + sizeof ours / sizeof ours[0] + 1, sizeof *env);
  for (size_t i = 0; i < n; i++) {
    const char* e = environ[i];
    if (strncmp(e, "AWS_", 4) == 0 || strncasecmp(e, "https_proxy=", 12) == 0 ||
        strncasecmp(e, "http_proxy=", 11) == 0 ||
        strncasecmp(e, "all_proxy=", 10) == 0 ||
        strncasecmp(e, "no_proxy=", 9) == 0 ||
        strncmp(e, "NODE_OPTIONS=", 13) == 0)
      continue;
    env[k++] = (char*)e;
  }
  for (size_t i = 0; i < sizeof ours / sizeof ours[0]; i++)
    env[k++] = (char*)ours[i];
  env[k] = NULL;
  return env;
}

static char* slurp(const char* path) {
  FILE* f = fopen(path, "rb");
  char* s;
  long len;
  if (f == NULL) return strdup("");
  fseek(f, 0, SEEK_END);
  len = ftell(f);
  fseek(f, 0, SEEK_SET);
  s = malloc((size_t)(len > 0 ? len : 0) + 1);
  len = (long)fread(s, 1, (size_t)(len > 0 ? len : 0), f);
  s[len] = '\0';
  fclose(f);
  return s;
}

typedef struct run_s {
  int status;  /* exit status, -1 if it did not exit normally or start */
  char* out;   /* stdout (malloc'd) */
  char* err;   /* stderr (malloc'd) */
} run_t;

/* node tests/interop/<script> --endpoint srv->endpoint --queue-url url
** --ca srv->ca_file --region SQ_REGION --resolve sqs.test=127.0.0.1 extra...
** with stdin from stdin_text ("" if NULL); waits for it. */
static void run_script(const sq_server_t* srv, const char* script,
                       const char* url, const char* const* extra,
                       const char* stdin_text, run_t* r) {
  char* dir = ts_mkdtemp("ce-interop");
  char* in = ts_path(dir, "stdin");
  char* out = ts_path(dir, "stdout");
  char* err = ts_path(dir, "stderr");
  char path[4300];
  const char* argv[32];
  int argc = 0;
  posix_spawn_file_actions_t fa;
  char** env = script_env();
  pid_t pid;
  int st = 0;
  FILE* f = fopen(in, "wb");

  if (f == NULL || fputs(stdin_text ? stdin_text : "", f) < 0 ||
      fclose(f) != 0) {
    fprintf(stderr, "%s: cannot write %s\n", script, in);
    abort();
  }
  snprintf(path, sizeof path, "%s/tests/interop/%s", getenv("OB_SOURCE_DIR"),
           script);
  argv[argc++] = "node";
  argv[argc++] = path;
  argv[argc++] = "--endpoint";
  argv[argc++] = srv->endpoint;
  argv[argc++] = "--queue-url";
  argv[argc++] = url;
  argv[argc++] = "--ca";
  argv[argc++] = srv->ca_file;
  argv[argc++] = "--region";
  argv[argc++] = SQ_REGION;
  argv[argc++] = "--resolve";
  argv[argc++] = SQ_HOST "=127.0.0.1";
  for (size_t i = 0; extra != NULL && extra[i] != NULL && argc < 31; i++)
    argv[argc++] = extra[i];
  argv[argc] = NULL;

  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, in, O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  posix_spawn_file_actions_addopen(&fa, 2, err, O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  r->status = -1;
  if (posix_spawnp(&pid, "node", &fa, NULL, (char* const*)argv, env) != 0) {
    fprintf(stderr, "%s: cannot start node\n", script);
  } else if (waitpid(pid, &st, 0) == pid && WIFEXITED(st)) {
    r->status = WEXITSTATUS(st);
  }
  posix_spawn_file_actions_destroy(&fa);
  free(env);
  r->out = slurp(out);
  r->err = slurp(err);
  free(in);
  free(out);
  free(err);
  ts_rmdir(dir);
}

static void run_print(const char* script, const run_t* r) {
  fprintf(stderr, "%s: exit %d\n--- stdout\n%s--- stderr\n%s---\n", script,
          r->status, r->out, r->err);
}

static void run_free(run_t* r) {
  free(r->out);
  free(r->err);
}

/* ---- ce_send / ce_check ----------------------------------------------------- */

int ci_send(const sq_server_t* srv, const char* queue_url,
            const char* specs_json, char (*ids)[80], size_t n) {
  run_t r;
  int done = -1;
  const char* p;
  run_script(srv, "ce_send.mjs", queue_url, NULL, specs_json, &r);
  for (p = r.out; *p != '\0'; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : "") {
    size_t i;
    char id[80];
    int k;
    if (sscanf(p, "SENT %zu %79s", &i, id) == 2) {
      if (ids != NULL && i < n) snprintf(ids[i], 80, "%s", id);
    } else if (sscanf(p, "DONE %d", &k) == 1) {
      done = k;
    }
  }
  if (r.status != 0 || done < 0) {
    run_print("ce_send.mjs", &r);
    done = -1;
  } else if (r.err[0] != '\0') {
    fprintf(stderr, "%s", r.err);
  }
  run_free(&r);
  return done;
}

int ci_check_ex(const sq_server_t* srv, const char* queue_url, int count,
                int timeout_ms, unsigned flags, char*** lines, int* invalid) {
  char cnt[16], tmo[16];
  const char* extra[] = {"--count", cnt, "--timeout-ms", tmo,
                         (flags & CI_CHECK_KEEP) ? "--keep" : NULL, NULL};
  run_t r;
  char** v = NULL;
  int nv = 0, done = -1, bad = 0;
  char* p;
  snprintf(cnt, sizeof cnt, "%d", count);
  snprintf(tmo, sizeof tmo, "%d", timeout_ms);
  *lines = NULL;
  if (invalid != NULL) *invalid = 0;
  run_script(srv, "ce_check.mjs", queue_url, extra, NULL, &r);
  if (r.status != 0) {
    run_print("ce_check.mjs", &r);
    run_free(&r);
    return -1;
  }
  p = r.out;
  while (*p != '\0') {
    char* e = strchr(p, '\n');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len > 0 && p[0] == '{') {
      v = realloc(v, (size_t)(nv + 1) * sizeof *v);
      v[nv] = malloc(len + 1);
      memcpy(v[nv], p, len);
      v[nv][len] = '\0';
      nv++;
    } else if (len > 5 && strncmp(p, "DONE ", 5) == 0) {
      if (sscanf(p, "DONE %d %d", &done, &bad) != 2) done = -1;
    }
    p += len + (e ? 1 : 0);
  }
  if (done != nv) {
    fprintf(stderr, "ce_check.mjs: %d event line(s), DONE says %d\n", nv,
            done);
    run_print("ce_check.mjs", &r);
    ci_lines_free(v, nv);
    run_free(&r);
    return -1;
  }
  if (r.err[0] != '\0') fprintf(stderr, "%s", r.err);
  run_free(&r);
  *lines = v;
  if (invalid != NULL) *invalid = bad;
  return nv;
}

int ci_check(const sq_server_t* srv, const char* queue_url, int count,
             int timeout_ms, char*** lines, int* invalid) {
  return ci_check_ex(srv, queue_url, count, timeout_ms, 0, lines, invalid);
}

void ci_lines_free(char** lines, int n) {
  if (lines == NULL) return;
  for (int i = 0; i < n; i++) free(lines[i]);
  free(lines);
}
