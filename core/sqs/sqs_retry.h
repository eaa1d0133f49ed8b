/* SPDX-License-Identifier: Apache-2.0 */
/*
** Retries for SQS calls, the AWS SDKs' "standard" mode as of the 2026
** update (docs/sqs-protocol.md, "Standard retry mode" and "Clock skew";
** @smithy/core StandardRetryStrategy, botocore retries/standard.py): classification, backoff with full jitter,
** the retry-quota token bucket, server retry hints and clock-skew
** correction.
**
** Internal (ob__). Pure: time and randomness come in as parameters or
** through ob_clock_t; nothing sleeps. The HTTP layer drives it:
**
**   ob__sqs_retry_t r; ob__sqs_retry_init(&r, 3, op == ReceiveMessage);
**   for (;;) {
**     send (signed at ob__sqs_signing_time_s(now, offset));
**     ob__sqs_clock_update(&offset, date_header, sent_ms, now_ms, has_age);
**     if (ok) { ob__sqs_retry_succeeded(&r, &bucket); break; }
**     cls = ob__sqs_classify(net, &err, skew_corrected);
**     v = ob__sqs_retry_decide(&r, &bucket, cls, hint, clock, &delay);
**     if (v == GIVE_UP) fail; sleep(delay); if (v == GIVE_UP_AFTER_DELAY) fail;
**   }
**
** Not thread-safe: one bucket per client, used from the loop thread.
*/
#ifndef OB_CORE_SQS_RETRY_H
#define OB_CORE_SQS_RETRY_H

#include <stdint.h>

#include "core/sqs/sqs.h"
#include "oncebox.h"

#define OB__SQS_MAX_ATTEMPTS 3              /* first attempt + 2 retries */
#define OB__SQS_BACKOFF_CAP_MS 20000        /* applied before jitter */
#define OB__SQS_BASE_TRANSIENT_MS 50
#define OB__SQS_BASE_THROTTLING_MS 1000
#define OB__SQS_HINT_SLACK_MS 5000          /* a server hint may add <= 5 s */
#define OB__SQS_RETRY_QUOTA 500
#define OB__SQS_RETRY_COST 14               /* transient */
#define OB__SQS_RETRY_COST_THROTTLING 5
#define OB__SQS_NO_RETRY_INCREMENT 1
#define OB__SQS_SKEW_CORRECTED_MS 240000    /* |offset| that marks a skew fix */
#define OB__SQS_MAX_ROUND_TRIP_MS 900000    /* ignore Date after 15 min */

typedef enum {
  OB__SQS_RETRY_NONE = 0,     /* surface the error */
  OB__SQS_RETRY_TRANSIENT,    /* 5xx, timeouts, connection errors */
  OB__SQS_RETRY_THROTTLING,   /* 429, throttling codes, 403 RequestThrottled */
  OB__SQS_RETRY_CLOCK_SKEW    /* skew error after the offset was corrected:
                              ** retried once, priced as transient */
} ob__sqs_retry_class_t;

/* What went wrong below HTTP (mapped by the platform layer from libuv,
** getaddrinfo and mbedTLS codes). */
typedef enum {
  OB__SQS_NET_NONE = 0,       /* an HTTP response arrived */
  OB__SQS_NET_CONNECT_TIMEOUT,
  OB__SQS_NET_TIMEOUT,        /* request deadline or read timeout */
  OB__SQS_NET_RESET,          /* ECONNRESET, EOF or TLS close mid-response,
                              ** truncated handshake */
  OB__SQS_NET_REFUSED,        /* ECONNREFUSED */
  OB__SQS_NET_PIPE,           /* EPIPE */
  OB__SQS_NET_DNS,            /* EAI_AGAIN, EAI_NONAME (ENOTFOUND) */
  OB__SQS_NET_UNREACHABLE,    /* EHOSTUNREACH, ENETUNREACH */
  OB__SQS_NET_TLS_FATAL       /* certificate / protocol refusal: retrying
                              ** cannot help, never retried */
} ob__sqs_net_t;

/* 1 if the error is one of the clock-skew codes (AccessDeniedException,
** AuthFailure, InvalidSignatureException, RequestExpired,
** RequestInTheFuture, RequestTimeTooSkewed, SignatureDoesNotMatch). */
int ob__sqs_is_clock_skew_error(const ob__sqs_error_t* e);

/*
** Classify a failed attempt. net != OB__SQS_NET_NONE: transport failure
** (err ignored). Else err is the parsed error response (NULL: NONE).
**   THROTTLING  HTTP 429; Throttling, ThrottlingException, ThrottledException,
**               RequestThrottledException, TooManyRequestsException,
**               ProvisionedThroughputExceededException,
**               TransactionInProgressException, RequestLimitExceeded,
**               BandwidthLimitExceeded, LimitExceededException,
**               RequestThrottled (SQS, HTTP 403), SlowDown,
**               PriorRequestNotComplete, EC2ThrottledException, and (our
**               choice, not the SDKs') KmsThrottled / KMS.ThrottlingException
**   TRANSIENT   HTTP 500/502/503/504; RequestTimeout, RequestTimeoutException,
**               InternalError, InternalFailure, ServiceUnavailable; every
**               transport failure but TLS_FATAL
**   CLOCK_SKEW  a clock-skew code when skew_corrected (the offset was just
**               corrected, see ob__sqs_clock_update); NONE otherwise
**   NONE        everything else (Sender faults, OverLimit, ...)
** This function can't fail.
*/
ob__sqs_retry_class_t ob__sqs_classify(ob__sqs_net_t net,
                                       const ob__sqs_error_t* err,
                                       int skew_corrected);

/* Full-jitter backoff: rand[0,1) x min(base x 2^retries_done, 20 s), base
** 1000 ms for THROTTLING and 50 ms otherwise; retries_done = retries
** already made (0 before the first retry). Randomness from clock->random;
** clock NULL gives the upper bound (deterministic). Never negative. */
int64_t ob__sqs_backoff_ms(ob__sqs_retry_class_t cls, int retries_done,
                           const ob_clock_t* clock);

/* A server hint (ms, < 0: none) stretches a delay to
** max(delay, min(hint, delay + 5 s)). */
int64_t ob__sqs_apply_hint(int64_t delay_ms, int64_t hint_ms);

/* The hint from x-amz-retry-after (integer ms) or else Retry-After
** (delta-seconds or an HTTP date, relative to now_ms); either may be NULL.
** -1 when absent or invalid. */
int64_t ob__sqs_retry_hint_ms(const char* x_amz_retry_after,
                              const char* retry_after, int64_t now_ms);

/* ---------------------------------------------------------------------------
** Retry quota: one per client, shared by all operations.
*/
typedef struct ob__sqs_bucket_s {
  int tokens;
} ob__sqs_bucket_t;

/* Full (500). This function can't fail. */
void ob__sqs_bucket_init(ob__sqs_bucket_t* b);

/* Cost of a retry of this class (5 throttling, 14 otherwise, 0 for NONE). */
int ob__sqs_retry_cost(ob__sqs_retry_class_t cls);

/* Take the cost of a retry; returns the cost taken, or 0 when the bucket
** holds less than that (nothing taken: do not retry). */
int ob__sqs_bucket_acquire(ob__sqs_bucket_t* b, ob__sqs_retry_class_t cls);

/* A call succeeded: refund last_retry_cost if it succeeded on a retry, else
** add 1; capped at 500. Failures refund nothing. Can't fail. */
void ob__sqs_bucket_success(ob__sqs_bucket_t* b, int last_retry_cost);

/* ---------------------------------------------------------------------------
** Per-call state.
*/
typedef struct ob__sqs_retry_s {
  int max_attempts;   /* >= 1 */
  int attempt;        /* attempts made so far: 1 after the first send */
  int last_cost;      /* tokens held by the latest retry, 0 if none */
  int long_poll;      /* ReceiveMessage: wait the backoff even when the
                      ** quota says no, so a poll loop cannot spin */
  int skew_retried;   /* the one clock-skew retry was used */
} ob__sqs_retry_t;

/* max_attempts <= 0 means OB__SQS_MAX_ATTEMPTS. attempt starts at 1.
** This function can't fail. */
void ob__sqs_retry_init(ob__sqs_retry_t* r, int max_attempts, int long_poll);

typedef enum {
  OB__SQS_GIVE_UP = 0,             /* fail now */
  OB__SQS_RETRY_AFTER = 1,         /* wait *delay_ms, then send again */
  OB__SQS_GIVE_UP_AFTER = 2        /* wait *delay_ms, then fail (long poll
                                   ** with an empty quota) */
} ob__sqs_verdict_t;

/* Decide after attempt r->attempt failed with cls. On RETRY_AFTER the cost
** is taken from b and r->attempt is incremented. hint_ms as from
** ob__sqs_retry_hint_ms. *delay_ms is 0 for GIVE_UP. */
ob__sqs_verdict_t ob__sqs_retry_decide(ob__sqs_retry_t* r, ob__sqs_bucket_t* b,
                                       ob__sqs_retry_class_t cls,
                                       int64_t hint_ms,
                                       const ob_clock_t* clock,
                                       int64_t* delay_ms);

/* The call succeeded: refund the bucket. Can't fail. */
void ob__sqs_retry_succeeded(ob__sqs_retry_t* r, ob__sqs_bucket_t* b);

/* ---------------------------------------------------------------------------
** Clock skew (JS SDK AwsSdkSigV4Signer).
*/

/* Parse an HTTP date (IMF-fixdate "Sun, 06 Nov 1994 08:49:37 GMT", RFC 850
** "Sunday, 06-Nov-94 08:49:37 GMT", asctime "Sun Nov  6 08:49:37 1994") into
** ms since the epoch. Returns 0 or OB_EINVAL. */
int ob__http_date_parse(const char* s, int64_t* ms_out);

/*
** Update *offset_ms (server time - local time) from a response's Date
** header: sent_ms and now_ms are the local wall clock when the request was
** sent and when the response arrived. Skipped (0, offset unchanged) when
** date is NULL, the response carried an Age header (a cache answered) or
** the round trip took more than 15 min. Returns 1 when the offset moved by
** at least 4 min: a clock-skew error on this response is then "corrected"
** and worth one retry (pass 1 as skew_corrected to ob__sqs_classify).
** Returns 0 otherwise, OB_EINVAL for an unparsable date (offset unchanged).
*/
int ob__sqs_clock_update(int64_t* offset_ms, const char* date, int64_t sent_ms,
                         int64_t now_ms, int has_age);

/* Signing time for SigV4: floor((now_ms + offset_ms) / 1000). */
int64_t ob__sqs_signing_time_s(int64_t now_ms, int64_t offset_ms);

#endif
