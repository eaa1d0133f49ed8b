/* SPDX-License-Identifier: Apache-2.0 */
/*
** Asynchronous Amazon SQS client on a libuv loop.
**
** Internal to oncebox (platform layer): the relay, the consumer and the
** `oncebox sqs` commands use it. Each call builds the JSON-1.0 body with
** core/sqs, signs it with core/sigv4 (service "sqs", time from the injected
** clock corrected by the server's Date), posts it with platform/http, parses
** the answer and retries the way the AWS SDKs' standard mode does
** (core/sqs/sqs_retry.h: 3 attempts, full-jitter backoff on a uv timer,
** one retry-quota token bucket per client, one clock-skew retry).
**
** Threading: a client and its requests belong to the loop thread.
**
** Callback rules (libuv's): a function that takes a callback and returns an
** error never calls it; when it returns 0 the callback runs exactly once,
** later, from the loop, never from inside the call that registered it (nor
** from ob__sqs_cancel or ob__sqs_client_close).
**
** Secrets: the client copies the credentials at open and wipes its copies
** (mbedtls_platform_zeroize) at close. Nothing this layer writes (req->detail,
** errbuf) ever contains a credential; SQS error messages are passed through
** as the service wrote them (they never contain the secret key).
*/
#ifndef OB_PLATFORM_SQS_CLIENT_H
#define OB_PLATFORM_SQS_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "core/sqs/sqs.h"
#include "core/sqs/sqs_retry.h"
#include "oncebox.h"
#include "platform/aws/aws_config.h"
#include "platform/http/http_client.h"

/* Status codes: OB__SQS_E_* and OB__HTTP_E_* (core/util/net_error.h). A
** callback status is 0, one of those, OB_ECANCELED, or OB_ENOMEM. */

typedef struct ob__sqs_client_config_s {
  /* Endpoint "https://host[:port]" (no path). Required. */
  const char* endpoint;
  const char* region;             /* required; signing scope */
  const char* access_key_id;      /* required; copied */
  const char* secret_access_key;  /* required; copied, wiped at close */
  const char* session_token;      /* NULL or "": none; copied, wiped */
  /* HTTP: CA bundle (NULL: the system bundle), plain http (1: an http://
  ** endpoint is accepted; 0: refused with OB_EINVAL. Only for a local test
  ** server: the signed requests and the session token travel in clear; see
  ** ob__aws_plain_http_check), timeouts (0: 10 s connect, 30 s per
  ** request), host overrides for tests. */
  const char* ca_file;
  int allow_plain_http;
  uint64_t connect_timeout_ms;
  uint64_t request_timeout_ms;
  const ob__http_resolve_t* resolve;
  size_t nresolve;
  int max_attempts;               /* 0: 3 (OB__SQS_MAX_ATTEMPTS) */
  /* Wall clock (signing time, Date skew) and randomness (jitter).
  ** NULL: ob_system_clock(). Must outlive the client. */
  const ob_clock_t* clock;
} ob__sqs_client_config_t;

/* Zero cfg (defaults everywhere). This function can't fail. */
void ob__sqs_client_config_init(ob__sqs_client_config_t* cfg);

/* Fill cfg from a loaded AWS configuration (borrowing its strings: aws must
** outlive the ob__sqs_client_open call, not the client). allow_plain_http
** is aws->plain_http_allowed: 1 only after ob__aws_plain_http_check let an
** http:// endpoint through. Fields not in ob__aws_config_t keep their
** values. This function can't fail. */
void ob__sqs_client_config_from_aws(ob__sqs_client_config_t* cfg,
                                   const ob__aws_config_t* aws);

typedef struct ob__sqs_client_s ob__sqs_client_t;
typedef struct ob__sqs_req_s ob__sqs_req_t;

/* status: see OB__SQS_ERRNO_MAP. req's result fields are filled. */
typedef void (*ob__sqs_cb)(ob__sqs_req_t* req, int status);
typedef void (*ob__sqs_close_cb)(ob__sqs_client_t* client, void* arg);

/*
** A request. Caller-allocated (uv_fs_t style), zeroed before its first use;
** it must stay valid and unmoved until its callback runs. The results below
** are owned by the request and stay valid after the callback until
** ob__sqs_req_cleanup(req) (or until the request is submitted again, which
** cleans it first). Call ob__sqs_req_cleanup when done, also after a failure.
*/
struct ob__sqs_req_s {
  void* data;                    /* free for the caller */
  ob__sqs_op_t op;               /* set by the submitting function */

  /* --- filled before the callback ------------------------------------- */
  int attempts;                  /* HTTP attempts made (1 = no retry) */
  int quota_exhausted;           /* a retry was refused by the token bucket */
  int http_status;               /* of the last response, 0 if none */
  char request_id[80];           /* x-amzn-RequestId (or x-amz-request-id) */
  /* Service error of the last response (status OB__SQS_E_*): code, type,
  ** query code, message, sender fault. Zeroed when there was none. */
  ob__sqs_error_t error;
  /* One line for humans, "" on success: "QueueDoesNotExist: The specified
  ** queue does not exist. (HTTP 400, AWS.SimpleQueueService.NonExistentQueue)",
  ** or the transport detail, or the parse diagnostic. Never a secret. */
  char detail[768];

  /* Results (status 0), one per operation:                               */
  ob__sqs_send_result_t send;        /* SendMessage */
  ob__sqs_batch_result_t batch;      /* SendMessageBatch, DeleteMessageBatch,
                                     ** ChangeMessageVisibilityBatch: walk
                                     ** batch.failed, status is 0 even when
                                     ** entries failed */
  ob__sqs_receive_result_t receive;  /* ReceiveMessage (MD5s checked) */
  ob__sqs_attrs_result_t attrs;      /* GetQueueAttributes */
  char* queue_url;                   /* GetQueueUrl (malloc'd, owned) */

  /* private */
  struct ob__sqsc_op_s* op_;
};

/* Free the results of req and zero its result fields (data is kept).
** Must not be called while req is in flight (it is then a no-op).
** This function can't fail. */
void ob__sqs_req_cleanup(ob__sqs_req_t* req);

/*
** Open a client on loop (opens an HTTP client with the same settings). On
** failure *out is NULL, errbuf (if not NULL) gets a NUL-terminated detail
** and nothing is left allocated. Errors: OB_EINVAL (missing or invalid
** field: endpoint not http(s)://host[:port], http:// without
** allow_plain_http, bad region or key id), OB_ENOMEM, OB__HTTP_E_TLS_CA,
** OB__HTTP_E_TLS.
*/
int ob__sqs_client_open(ob__sqs_client_t** out, uv_loop_t* loop,
                       const ob__sqs_client_config_t* cfg, char* errbuf,
                       size_t errlen);

/* ob__sqs_client_open with the defaults, the endpoint, region, credentials,
** CA bundle and plain-HTTP opt-in of aws (ob__sqs_client_config_from_aws),
** and clock (the relay's and the consumer's client). Same contract. */
int ob__sqs_client_open_aws(ob__sqs_client_t** out, uv_loop_t* loop,
                            const ob__aws_config_t* aws,
                            const ob_clock_t* clock, char* errbuf,
                            size_t errlen);

/*
** Close: every request in flight or waiting to retry completes with
** OB_ECANCELED, the HTTP client closes, the credentials are wiped, then
** cb(client, arg) runs from the loop (cb may be NULL). The client pointer is
** invalid once cb returns. A second call is ignored. Requests submitted
** after it fail with OB__HTTP_E_CLOSING. This function can't fail.
*/
void ob__sqs_client_close(ob__sqs_client_t* client, ob__sqs_close_cb cb,
                         void* arg);

/*
** Operations. Each validates and builds the request body before returning:
** invalid input returns OB_EINVAL or OB_ETOOBIG at once (with req->detail
** naming the field) and the callback never runs. Other immediate errors:
** OB_ESTATE (req in flight), OB__HTTP_E_CLOSING, OB_ENOMEM. Pointers passed
** in are read during the call only.
**
** The callback status is 0 or a negative code:
**   OB__SQS_E_NO_QUEUE     QueueDoesNotExist / AWS.SimpleQueueService.NonExistentQueue
**   OB__SQS_E_AUTH         SignatureDoesNotMatch, InvalidClientTokenId,
**                         IncompleteSignature, MissingAuthenticationToken,
**                         AccessDenied(Exception), ExpiredToken, InvalidSecurity,
**                         RequestExpired and the other clock-skew codes (after
**                         the one corrected retry)
**   OB__SQS_E_THROTTLED    throttling after the last attempt or a refused retry
**   OB__SQS_E_UNAVAILABLE  HTTP 5xx after the last attempt or a refused retry
**   OB__SQS_E_SERVICE      any other service error (InvalidParameterValue,
**                         batch errors, OverLimit, ...): see req->error
**   OB__SQS_E_CHECKSUM     an MD5 in a 2xx response does not match (not retried:
**                         for a send, the message may well be queued)
**   OB__SQS_E_BAD_RESPONSE a 2xx response that is not the expected JSON
**   OB__SQS_E_NOT_JSON_API the server is not the SQS JSON API (HTTP 415, an
**                         unknown operation, XML, 404 at "/", a 2xx page:
**                         ob__sqs_not_json_api); req->detail says which in
**                         words; never retried
**   OB__HTTP_E_*           transport failure of the last attempt
**   OB_ECANCELED          ob__sqs_cancel or ob__sqs_client_close
** Retried (up to max_attempts, while the token bucket allows): throttling,
** 5xx, timeouts and connection errors, and one retry of a clock-skew error
** once the Date header moved the clock offset by 4 min or more. Never
** retried: TLS verification failures and everything else.
*/
int ob__sqs_send_message(ob__sqs_client_t* c, ob__sqs_req_t* req,
                        const char* queue_url, const ob__sqs_send_t* msg,
                        ob__sqs_cb cb);
/* 1..10 entries; MD5s of every Successful entry are checked. */
int ob__sqs_send_message_batch(ob__sqs_client_t* c, ob__sqs_req_t* req,
                              const char* queue_url,
                              const ob__sqs_send_t* entries, size_t n,
                              ob__sqs_cb cb);
/* The request deadline is WaitTimeSeconds (20 s when omitted: the queue's
** ReceiveMessageWaitTimeSeconds may apply) plus the client's request
** timeout, so a long poll is never cut short. MD5OfBody is always checked,
** MD5OfMessageAttributes when params asked for "All" or ".*". */
int ob__sqs_receive_message(ob__sqs_client_t* c, ob__sqs_req_t* req,
                           const ob__sqs_receive_t* params, ob__sqs_cb cb);
int ob__sqs_delete_message(ob__sqs_client_t* c, ob__sqs_req_t* req,
                          const char* queue_url, const char* receipt_handle,
                          ob__sqs_cb cb);
int ob__sqs_delete_message_batch(ob__sqs_client_t* c, ob__sqs_req_t* req,
                                const char* queue_url,
                                const ob__sqs_handle_entry_t* entries, size_t n,
                                ob__sqs_cb cb);
int ob__sqs_change_visibility(ob__sqs_client_t* c, ob__sqs_req_t* req,
                             const char* queue_url, const char* receipt_handle,
                             int visibility_timeout, ob__sqs_cb cb);
int ob__sqs_change_visibility_batch(ob__sqs_client_t* c, ob__sqs_req_t* req,
                                   const char* queue_url,
                                   const ob__sqs_handle_entry_t* entries,
                                   size_t n, ob__sqs_cb cb);
/* owner_account_id may be NULL. Result: req->queue_url. */
int ob__sqs_get_queue_url(ob__sqs_client_t* c, ob__sqs_req_t* req,
                         const char* queue_name, const char* owner_account_id,
                         ob__sqs_cb cb);
/* names may be NULL/0 (SQS then returns none); {"All"} for everything. */
int ob__sqs_get_queue_attributes(ob__sqs_client_t* c, ob__sqs_req_t* req,
                                const char* queue_url,
                                const char* const* names, size_t n,
                                ob__sqs_cb cb);

/*
** Cancel req. Returns 0 and its callback runs later with OB_ECANCELED: a
** retry wait is cut short, an HTTP attempt in flight is aborted and its
** connection closed (the server may still have acted on it, and an answer
** that was already arriving is dropped). Returns OB_ESTATE when req is not
** in flight, was already canceled, or is completing (its callback is then
** already scheduled with its own status).
*/
int ob__sqs_cancel(ob__sqs_req_t* req);

typedef struct ob__sqs_stats_s {
  uint64_t calls;              /* operations submitted */
  uint64_t attempts;           /* HTTP requests sent */
  uint64_t retries;            /* attempts after the first */
  uint64_t quota_refusals;     /* retries the token bucket refused */
  uint64_t skew_corrections;   /* Date headers that moved the offset >= 4 min */
  int retry_tokens;            /* token bucket level, 0..500 */
  int64_t clock_offset_ms;     /* server - local, from Date headers */
  size_t in_flight;            /* requests not yet completed */
  char tls_version[16];        /* of the last TLS connection: "TLSv1.3" */
  char tls_suite[64];          /* and its suite; "" before the first */
} ob__sqs_stats_t;

void ob__sqs_client_stats(const ob__sqs_client_t* c, ob__sqs_stats_t* s);

#endif
