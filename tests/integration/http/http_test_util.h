/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers for the HTTP client tests: server processes the test owns (and
** always kills), PKI generation, and running one request on a loop. */
#ifndef OB_TEST_HTTP_UTIL_H
#define OB_TEST_HTTP_UTIL_H

#include <stddef.h>
#include <sys/types.h>

#include <uv.h>

#include "platform/http/http_client.h"

/* ---- processes ------------------------------------------------------------ */
typedef struct ht_proc_s {
  pid_t pid;
  char* out_path;  /* stdout + stderr of the process */
  int stdin_fd;    /* write end of its stdin, held open until ht_stop */
} ht_proc_t;

/* Start argv (PATH lookup) with its output in out_path. The child gets
** SIGKILL if this process dies (PR_SET_PDEATHSIG), and every process still
** running at exit is killed by an atexit handler: no server outlives the
** test, even when an assertion aborts it. Returns NULL on failure. */
ht_proc_t* ht_spawn(const char* const* argv, const char* out_path);
/* Wait up to timeout_ms for `marker` in the output, then parse the decimal
** number right after it. Returns the number, or -1 (timeout or the process
** exited). */
int ht_wait_number(ht_proc_t* p, const char* marker, int timeout_ms);
/* The output so far (malloc'd, NUL-terminated; "" if none). */
char* ht_output(const ht_proc_t* p);
/* Lines of the output that start with prefix. */
int ht_count_lines(const ht_proc_t* p, const char* prefix);
/* SIGTERM, SIGKILL after 2 s, reap, free. NULL is fine. */
void ht_stop(ht_proc_t* p);

/* ---- environment ------------------------------------------------------------ */
/* $OB_SOURCE_DIR/tests/integration/http/<name> (malloc'd); aborts if the
** variable is unset. */
char* ht_script(const char* name);
/* Run gen_pki.sh into dir; 0 on success. */
int ht_gen_pki(const char* dir);
/* The same plus the "extra" certificates (gen_pki.sh lists them). */
int ht_gen_pki_extra(const char* dir);
/* 1 if a socket can bind ::1 (tests of IPv6 literals skip otherwise). */
int ht_have_ipv6_loopback(void);
/* 1 if getaddrinfo("localhost") yields 127.0.0.1 only (tests keep to
** 127.0.0.1, so the lookup tests skip otherwise). */
int ht_localhost_is_127(void);
/* A port on 127.0.0.1 that was free a moment ago (bind 0, close). */
int ht_free_port(void);

/* ---- requests ------------------------------------------------------------------ */
typedef struct ht_result_s {
  int done;
  int calls;         /* callback invocations: must end at 1 */
  int status;
  int http_status;
  char* body;        /* malloc'd copy */
  size_t body_len;
  char detail[640];
  int reused;
  int request_sent;
  size_t nheaders;
  char first_header[128];  /* "name: value" of the first header */
} ht_result_t;

/* The ob__http_cb the helpers use: fills the ht_result_t in req->data. */
void ht_on_response(ob__http_req_t* req, int status,
                    const ob__http_response_t* res);
/* Submit and run the loop until the callback ran. Returns the submit
** error (callback never runs) or the callback status. */
int ht_fetch(uv_loop_t* loop, ob__http_client_t* c, const char* method,
             const char* url, const void* body, size_t body_len,
             uint64_t timeout_ms, ht_result_t* out);
void ht_result_free(ht_result_t* r);
/* Close the client and run the loop until its close callback ran. */
void ht_close_client(uv_loop_t* loop, ob__http_client_t* c);
/* Milliseconds on a monotonic clock. */
uint64_t ht_now_ms(void);
/* Peak RSS of this process in KiB. */
long ht_maxrss_kb(void);

#endif
