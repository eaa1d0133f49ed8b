/* SPDX-License-Identifier: Apache-2.0 */
#include "tests/integration/http/http_test_util.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_PROCS 32

static pid_t g_pids[MAX_PROCS];
static int g_atexit;

static void kill_all(void) {
  for (int i = 0; i < MAX_PROCS; i++)
    if (g_pids[i] > 0) {
      kill(g_pids[i], SIGKILL);
      waitpid(g_pids[i], NULL, 0);
      g_pids[i] = 0;
    }
}

static void track(pid_t pid, int add) {
  for (int i = 0; i < MAX_PROCS; i++) {
    if (add && g_pids[i] == 0) {
      g_pids[i] = pid;
      return;
    }
    if (!add && g_pids[i] == pid) {
      g_pids[i] = 0;
      return;
    }
  }
}

ht_proc_t* ht_spawn(const char* const* argv, const char* out_path) {
  ht_proc_t* p;
  pid_t parent = getpid();
  pid_t pid;
  int fds[2];

  if (!g_atexit) {
    atexit(kill_all);
    g_atexit = 1;
  }
  p = calloc(1, sizeof *p);
  if (p == NULL) return NULL;
  p->out_path = strdup(out_path);
  /* stdin: a pipe we hold open, so tools that quit on EOF of stdin
  ** (openssl s_server) keep serving until we stop them. */
  if (pipe(fds) != 0) {
    free(p->out_path);
    free(p);
    return NULL;
  }
  fflush(NULL);
  pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    free(p->out_path);
    free(p);
    return NULL;
  }
  if (pid == 0) {
    int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fds[0], 0);
    close(fds[0]);
    close(fds[1]);
    /* Die with the test, whatever kills it. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
    }
    setpgid(0, 0);
    execvp(argv[0], (char* const*)argv);
    _exit(127);
  }
  close(fds[0]);
  p->stdin_fd = fds[1];
  fcntl(p->stdin_fd, F_SETFD, FD_CLOEXEC);
  p->pid = pid;
  track(pid, 1);
  return p;
}

char* ht_output(const ht_proc_t* p) {
  FILE* f = fopen(p->out_path, "rb");
  char* buf;
  long n;

  if (f == NULL) return strdup("");
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  buf = malloc((size_t)(n > 0 ? n : 0) + 1);
  if (buf == NULL) abort();
  n = (long)fread(buf, 1, (size_t)(n > 0 ? n : 0), f);
  buf[n > 0 ? n : 0] = '\0';
  fclose(f);
  return buf;
}

int ht_count_lines(const ht_proc_t* p, const char* prefix) {
  char* out = ht_output(p);
  size_t plen = strlen(prefix);
  int n = 0;
  for (char* line = out; line && *line;) {
    char* nl = strchr(line, '\n');
    if (strncmp(line, prefix, plen) == 0) n++;
    line = nl ? nl + 1 : NULL;
  }
  free(out);
  return n;
}

int ht_wait_number(ht_proc_t* p, const char* marker, int timeout_ms) {
  uint64_t end = ht_now_ms() + (uint64_t)timeout_ms;

  for (;;) {
    char* out = ht_output(p);
    char* at = strstr(out, marker);
    int status;
    if (at != NULL) {
      char* num = at + strlen(marker);
      if (*num >= '0' && *num <= '9') {
        char* e;
        long v = strtol(num, &e, 10);
        if (*e == '\n' || *e == ' ' || *e == '\r') {
          free(out);
          return (int)v;
        }
      }
    }
    free(out);
    if (waitpid(p->pid, &status, WNOHANG) == p->pid) {
      track(p->pid, 0);
      p->pid = 0;
      return -1;
    }
    if (ht_now_ms() > end) return -1;
    usleep(20 * 1000);
  }
}

void ht_stop(ht_proc_t* p) {
  if (p == NULL) return;
  if (p->pid > 0) {
    uint64_t end = ht_now_ms() + 2000;
    int reaped = 0;
    kill(p->pid, SIGTERM);
    while (ht_now_ms() < end) {
      if (waitpid(p->pid, NULL, WNOHANG) == p->pid) {
        reaped = 1;
        break;
      }
      usleep(10 * 1000);
    }
    if (!reaped) {
      kill(p->pid, SIGKILL);
      waitpid(p->pid, NULL, 0);
    }
    track(p->pid, 0);
  }
  if (p->stdin_fd > 0) close(p->stdin_fd);
  free(p->out_path);
  free(p);
}

char* ht_script(const char* name) {
  const char* src = getenv("OB_SOURCE_DIR");
  char buf[4096];
  if (src == NULL) {
    fprintf(stderr, "OB_SOURCE_DIR is not set (run through ctest)\n");
    abort();
  }
  snprintf(buf, sizeof buf, "%s/tests/integration/http/%s", src, name);
  return strdup(buf);
}

static int gen_pki(const char* dir, const char* extra) {
  char* script = ht_script("gen_pki.sh");
  char cmd[8192];
  int rc;
  snprintf(cmd, sizeof cmd, "sh '%s' '%s' %s", script, dir, extra);
  free(script);
  rc = system(cmd);
  return rc == 0 ? 0 : -1;
}

int ht_gen_pki(const char* dir) { return gen_pki(dir, ""); }

int ht_gen_pki_extra(const char* dir) { return gen_pki(dir, "extra"); }

int ht_have_ipv6_loopback(void) {
  struct sockaddr_in6 a;
  int fd = socket(AF_INET6, SOCK_STREAM, 0);
  int ok;
  if (fd < 0) return 0;
  memset(&a, 0, sizeof a);
  a.sin6_family = AF_INET6;
  a.sin6_addr = in6addr_loopback;
  ok = bind(fd, (struct sockaddr*)&a, sizeof a) == 0;
  close(fd);
  return ok;
}

int ht_localhost_is_127(void) {
  struct addrinfo hints;
  struct addrinfo* res = NULL;
  int ok = 1;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo("localhost", "80", &hints, &res) != 0) return 0;
  for (struct addrinfo* ai = res; ai != NULL; ai = ai->ai_next) {
    const struct sockaddr_in* a4 = (const struct sockaddr_in*)ai->ai_addr;
    if (ai->ai_family != AF_INET ||
        a4->sin_addr.s_addr != htonl(INADDR_LOOPBACK))
      ok = 0;
  }
  freeaddrinfo(res);
  return ok;
}

int ht_free_port(void) {
  struct sockaddr_in a;
  socklen_t len = sizeof a;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  int port = -1;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd >= 0 && bind(fd, (struct sockaddr*)&a, sizeof a) == 0 &&
      getsockname(fd, (struct sockaddr*)&a, &len) == 0)
    port = ntohs(a.sin_port);
  if (fd >= 0) close(fd);
  return port;
}

/* ---- requests ------------------------------------------------------------ */

void ht_on_response(ob__http_req_t* req, int status,
                    const ob__http_response_t* res) {
  ht_result_t* r = req->data;
  r->calls++;
  r->done = 1;
  r->status = status;
  r->http_status = res->status;
  r->reused = res->reused;
  r->request_sent = res->request_sent;
  r->nheaders = res->nheaders;
  snprintf(r->detail, sizeof r->detail, "%s", res->detail ? res->detail : "");
  if (res->nheaders > 0)
    snprintf(r->first_header, sizeof r->first_header, "%s: %s",
             res->headers[0].name, res->headers[0].value);
  free(r->body);
  r->body = malloc(res->body_len + 1);
  if (r->body == NULL) abort();
  memcpy(r->body, res->body, res->body_len);
  r->body[res->body_len] = '\0';
  r->body_len = res->body_len;
}

int ht_fetch(uv_loop_t* loop, ob__http_client_t* c, const char* method,
             const char* url, const void* body, size_t body_len,
             uint64_t timeout_ms, ht_result_t* out) {
  ob__http_req_t req;
  int rc;

  memset(&req, 0, sizeof req);
  memset(out, 0, sizeof *out);
  req.data = out;
  req.method = method;
  req.url = url;
  req.body = body;
  req.body_len = body_len;
  req.timeout_ms = timeout_ms;
  rc = ob__http_request(c, &req, ht_on_response);
  if (rc < 0) return rc;
  if (out->done) {  /* must never happen: callbacks are not re-entrant */
    fprintf(stderr, "callback ran inside ob__http_request\n");
    abort();
  }
  while (!out->done)
    if (uv_run(loop, UV_RUN_ONCE) == 0 && !out->done) {
      fprintf(stderr, "loop went idle without the request callback\n");
      abort();
    }
  return out->status;
}

void ht_result_free(ht_result_t* r) {
  free(r->body);
  r->body = NULL;
}

static void on_client_closed(ob__http_client_t* c, void* arg) {
  (void)c;
  *(int*)arg = 1;
}

void ht_close_client(uv_loop_t* loop, ob__http_client_t* c) {
  int closed = 0;
  ob__http_client_close(c, on_client_closed, &closed);
  while (!closed)
    if (uv_run(loop, UV_RUN_ONCE) == 0 && !closed) {
      fprintf(stderr, "loop went idle without the close callback\n");
      abort();
    }
}

uint64_t ht_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

long ht_maxrss_kb(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}
