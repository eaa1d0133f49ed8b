/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers for the SQS tests: the fauxqs + SigV4-verifying TLS terminator
** (sqs_server.mjs) the test starts and always kills, test-route calls, a
** controllable clock, and running one SQS call on a loop. */
#ifndef OB_TEST_SQS_UTIL_H
#define OB_TEST_SQS_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "oncebox.h"
#include "platform/sqs/sqs_client.h"
#include "tests/integration/http/http_test_util.h"

#define SQ_AKID "AKIDONCEBOXTEST"
#define SQ_SECRET "oncebox/test+SECRET/key0123456789abcdefg"
#define SQ_REGION "us-east-1"
#define SQ_HOST "sqs.test"

typedef struct sq_server_s {
  char* dir;          /* temporary directory (PKI, logs) */
  char* pki;          /* dir/pki: ca.crt, good.crt ... */
  char* ca_file;      /* pki/ca.crt */
  ht_proc_t* proc;
  int port;           /* TLS terminator on 127.0.0.1 */
  char endpoint[64];  /* "https://sqs.test:PORT" */
  /* fauxqs itself (or fifo_sqs.mjs with the fifo-rules backend), plain HTTP
  ** on 127.0.0.1 (no SigV4 check, no faults): for the plain-HTTP opt-in
  ** tests. Queues are the same; use the QueueUrl sq_create_queue returned
  ** (fauxqs 1.9.2 matches it exactly). */
  int fauxqs_port;
  char plain_endpoint[64];  /* "http://127.0.0.1:FAUXQS_PORT" */
} sq_server_t;

/* NULL if node and tests/interop/node_modules (fauxqs, @smithy/signature-v4)
** are there; else a static "skipped: ..." reason for the test to print. */
const char* sq_skip_reason(void);

/* Generate a PKI and start sqs_server.mjs expecting credentials SQ_AKID /
** SQ_SECRET (and session_token if not NULL). 0 or -1 (output printed).
** The backend is whatever OB_SQS_BACKEND says (fauxqs when unset), so
** `OB_SQS_BACKEND=fifo-rules ctest ...` runs a test against fifo_sqs.mjs. */
int sq_server_start(sq_server_t* s, const char* tag, const char* session_token);
/* The same with the backend named: "fauxqs", "fifo-rules" (fifo_sqs.mjs: the
** AWS FIFO receive rules), or NULL for sq_server_start's choice. With
** fifo-rules, fauxqs_port / plain_endpoint are fifo_sqs.mjs on plain HTTP
** (the same queues; no SigV4 check, no faults, no REQ lines). */
int sq_server_start_backend(sq_server_t* s, const char* tag,
                            const char* session_token, const char* backend);
void sq_server_stop(sq_server_t* s);

/* POST a test route (/_test/...) with a JSON body; returns the response
** body (malloc'd) or NULL; *http_status if not NULL. Blocking (own loop). */
char* sq_control(const sq_server_t* s, const char* route, const char* json,
                 int* http_status);
/* CreateQueue through the test route; returns the QueueUrl (malloc'd). */
char* sq_create_queue(const sq_server_t* s, const char* name,
                      const char* attributes_json);
/* Queue `count` faults: sq_fault(s, "{\"count\":2,\"status\":503}"). */
void sq_fault(const sq_server_t* s, const char* json);
/* Drop queued faults. */
void sq_clear(const sq_server_t* s);
/* Lines of the server's output starting with prefix. */
int sq_count(const sq_server_t* s, const char* prefix);

/* A clock: real time + offset_ms; random bytes give rand01() == fraction
** when fraction >= 0, else a seeded xorshift stream. */
typedef struct sq_clock_s {
  ob_clock_t clock;
  int64_t offset_ms;
  double fraction;
  uint64_t state;
} sq_clock_t;

void sq_clock_init(sq_clock_t* c, int64_t offset_ms, double fraction);

/* Client config for the server: endpoint, region, the given secret, the CA,
** resolve sqs.test -> 127.0.0.1. */
void sq_client_config(const sq_server_t* s, ob__sqs_client_config_t* cfg,
                      const char* secret, const ob_clock_t* clock);

/* Outcome of one call, filled by sq_cb. */
typedef struct sq_done_s {
  int calls;
  int status;
} sq_done_t;

/* The callback the helpers use: req->data is a sq_done_t. */
void sq_cb(ob__sqs_req_t* req, int status);
/* Run the loop until req's callback ran; aborts if it ran inside the
** submit call or the loop goes idle first. Returns the status. */
int sq_wait(uv_loop_t* loop, ob__sqs_req_t* req);

#endif
