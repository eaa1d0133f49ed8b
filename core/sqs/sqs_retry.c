/* SPDX-License-Identifier: Apache-2.0 */
/*
** SQS retry rules (see sqs_retry.h). Sources: @smithy/core 3.41
** submodules/retry (error lists, StandardRetryStrategy,
** DefaultRetryBackoffStrategy), botocore retries/standard.py (mode 2.1,
** RetryQuotaChecker, _LONG_POLLING_OPERATIONS), @aws-sdk/core
** AwsSdkSigV4Signer (clock skew); summarised in docs/sqs-protocol.md.
*/
#include "core/sqs/sqs_retry.h"

#include <string.h>

static int in_list(const ob__sqs_error_t* e, const char* const* names,
                   size_t n) {
  for (size_t i = 0; i < n; i++)
    if (ob__sqs_error_is(e, names[i])) return 1;
  return 0;
}

int ob__sqs_is_clock_skew_error(const ob__sqs_error_t* e) {
  static const char* const skew[] = {
      "AccessDeniedException", "AuthFailure", "InvalidSignatureException",
      "RequestExpired", "RequestInTheFuture", "RequestTimeTooSkewed",
      "SignatureDoesNotMatch"};
  return e != NULL && in_list(e, skew, sizeof skew / sizeof skew[0]);
}

ob__sqs_retry_class_t ob__sqs_classify(ob__sqs_net_t net,
                                       const ob__sqs_error_t* e,
                                       int skew_corrected) {
  /* Identical in botocore ThrottledRetryableChecker and @smithy
  ** THROTTLING_ERROR_CODES, plus the KMS data-key throttle SQS relays as a
  ** 400: retrying it with throttling backoff is our choice. */
  static const char* const throttling[] = {
      "Throttling", "ThrottlingException", "ThrottledException",
      "RequestThrottledException", "TooManyRequestsException",
      "ProvisionedThroughputExceededException", "TransactionInProgressException",
      "RequestLimitExceeded", "BandwidthLimitExceeded", "LimitExceededException",
      "RequestThrottled", "SlowDown", "PriorRequestNotComplete",
      "EC2ThrottledException", "KmsThrottled", "KMS.ThrottlingException"};
  static const char* const transient[] = {
      "RequestTimeout", "RequestTimeoutException", "InternalError",
      "InternalFailure", "ServiceUnavailable"};
  if (net != OB__SQS_NET_NONE)
    return net == OB__SQS_NET_TLS_FATAL ? OB__SQS_RETRY_NONE
                                        : OB__SQS_RETRY_TRANSIENT;
  if (e == NULL) return OB__SQS_RETRY_NONE;
  if (e->http_status == 429 ||
      in_list(e, throttling, sizeof throttling / sizeof throttling[0]))
    return OB__SQS_RETRY_THROTTLING;
  if (e->http_status == 500 || e->http_status == 502 ||
      e->http_status == 503 || e->http_status == 504 ||
      in_list(e, transient, sizeof transient / sizeof transient[0]))
    return OB__SQS_RETRY_TRANSIENT;
  if (skew_corrected && ob__sqs_is_clock_skew_error(e))
    return OB__SQS_RETRY_CLOCK_SKEW;
  return OB__SQS_RETRY_NONE;
}

/* A uniform double in [0, 1) from 53 random bits. */
static double rand01(const ob_clock_t* c) {
  uint8_t b[8];
  uint64_t v = 0;
  c->random(c->ctx, b, sizeof b);
  for (int i = 0; i < 8; i++) v = (v << 8) | b[i];
  return (double)(v >> 11) * (1.0 / 9007199254740992.0);
}

int64_t ob__sqs_backoff_ms(ob__sqs_retry_class_t cls, int retries_done,
                           const ob_clock_t* clock) {
  int64_t base = cls == OB__SQS_RETRY_THROTTLING ? OB__SQS_BASE_THROTTLING_MS
                                                 : OB__SQS_BASE_TRANSIENT_MS;
  int64_t cap = OB__SQS_BACKOFF_CAP_MS;
  int64_t ceiling = base;
  if (retries_done < 0) retries_done = 0;
  /* base x 2^i, saturating at the cap (no shift overflow for large i). */
  for (int i = 0; i < retries_done && ceiling < cap; i++) ceiling *= 2;
  if (ceiling > cap) ceiling = cap;
  if (clock == NULL || clock->random == NULL) return ceiling;
  return (int64_t)(rand01(clock) * (double)ceiling);
}

int64_t ob__sqs_apply_hint(int64_t delay_ms, int64_t hint_ms) {
  int64_t h;
  if (hint_ms < 0) return delay_ms;
  h = hint_ms < delay_ms + OB__SQS_HINT_SLACK_MS ? hint_ms
                                                 : delay_ms + OB__SQS_HINT_SLACK_MS;
  return h > delay_ms ? h : delay_ms;
}

/* Non-negative decimal, at most 12 digits (~31,000 years of ms). */
static int parse_uint(const char* s, int64_t* out) {
  int64_t v = 0;
  int n = 0;
  while (*s == ' ' || *s == '\t') s++;
  for (; *s >= '0' && *s <= '9'; s++, n++) {
    if (n >= 12) return -1;
    v = v * 10 + (*s - '0');
  }
  while (*s == ' ' || *s == '\t') s++;
  if (n == 0 || *s != '\0') return -1;
  *out = v;
  return 0;
}

int64_t ob__sqs_retry_hint_ms(const char* x_amz_retry_after,
                              const char* retry_after, int64_t now_ms) {
  int64_t v;
  if (x_amz_retry_after && parse_uint(x_amz_retry_after, &v) == 0) return v;
  if (retry_after) {
    if (parse_uint(retry_after, &v) == 0) return v * 1000;
    if (ob__http_date_parse(retry_after, &v) == 0)
      return v > now_ms ? v - now_ms : 0;
  }
  return -1;
}

void ob__sqs_bucket_init(ob__sqs_bucket_t* b) {
  b->tokens = OB__SQS_RETRY_QUOTA;
}

int ob__sqs_retry_cost(ob__sqs_retry_class_t cls) {
  switch (cls) {
    case OB__SQS_RETRY_THROTTLING: return OB__SQS_RETRY_COST_THROTTLING;
    case OB__SQS_RETRY_TRANSIENT:
    case OB__SQS_RETRY_CLOCK_SKEW: return OB__SQS_RETRY_COST;
    case OB__SQS_RETRY_NONE: break;
  }
  return 0;
}

int ob__sqs_bucket_acquire(ob__sqs_bucket_t* b, ob__sqs_retry_class_t cls) {
  int cost = ob__sqs_retry_cost(cls);
  if (cost == 0 || b->tokens < cost) return 0;
  b->tokens -= cost;
  return cost;
}

void ob__sqs_bucket_success(ob__sqs_bucket_t* b, int last_retry_cost) {
  b->tokens += last_retry_cost > 0 ? last_retry_cost : OB__SQS_NO_RETRY_INCREMENT;
  if (b->tokens > OB__SQS_RETRY_QUOTA) b->tokens = OB__SQS_RETRY_QUOTA;
}

void ob__sqs_retry_init(ob__sqs_retry_t* r, int max_attempts, int long_poll) {
  memset(r, 0, sizeof *r);
  r->max_attempts = max_attempts > 0 ? max_attempts : OB__SQS_MAX_ATTEMPTS;
  r->attempt = 1;
  r->long_poll = long_poll != 0;
}

ob__sqs_verdict_t ob__sqs_retry_decide(ob__sqs_retry_t* r, ob__sqs_bucket_t* b,
                                       ob__sqs_retry_class_t cls,
                                       int64_t hint_ms,
                                       const ob_clock_t* clock,
                                       int64_t* delay_ms) {
  int64_t delay;
  int cost;
  *delay_ms = 0;
  if (cls == OB__SQS_RETRY_NONE || r->attempt >= r->max_attempts)
    return OB__SQS_GIVE_UP;
  if (cls == OB__SQS_RETRY_CLOCK_SKEW && r->skew_retried)
    return OB__SQS_GIVE_UP;
  delay = ob__sqs_apply_hint(ob__sqs_backoff_ms(cls, r->attempt - 1, clock),
                             hint_ms);
  cost = ob__sqs_bucket_acquire(b, cls);
  if (cost == 0) {
    /* Quota exhausted: fail fast, except that a long poll still waits so
    ** a receive loop on a failing endpoint cannot spin. */
    if (r->long_poll) {
      *delay_ms = delay;
      return OB__SQS_GIVE_UP_AFTER;
    }
    return OB__SQS_GIVE_UP;
  }
  if (cls == OB__SQS_RETRY_CLOCK_SKEW) r->skew_retried = 1;
  r->last_cost = cost;
  r->attempt++;
  *delay_ms = delay;
  return OB__SQS_RETRY_AFTER;
}

void ob__sqs_retry_succeeded(ob__sqs_retry_t* r, ob__sqs_bucket_t* b) {
  ob__sqs_bucket_success(b, r->attempt > 1 ? r->last_cost : 0);
}

/* ---------------------------------------------------------------------------
** HTTP dates (RFC 9110 §5.6.7).
*/
static int month_of(const char* s) {
  static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
  for (int i = 0; i < 12; i++)
    if (strncmp(s, months + 3 * i, 3) == 0) return i + 1;
  return 0;
}

static int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
  int64_t era, yoe, doy, doe;
  y -= m <= 2;
  era = (y >= 0 ? y : y - 399) / 400;
  yoe = y - era * 400;
  doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

/* Exactly n digits at s; -1 otherwise. */
static int digits(const char* s, int n) {
  int v = 0;
  for (int i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return -1;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

static int hms(const char* s, int* h, int* mi, int* se) {
  *h = digits(s, 2);
  *mi = digits(s + 3, 2);
  *se = digits(s + 6, 2);
  return *h >= 0 && *mi >= 0 && *se >= 0 && s[2] == ':' && s[5] == ':';
}

static const char* const k_days[] = {"Mon", "Tue", "Wed", "Thu",
                                     "Fri", "Sat", "Sun"};
static const char* const k_long_days[] = {"Monday", "Tuesday", "Wednesday",
                                          "Thursday", "Friday", "Saturday",
                                          "Sunday"};

int ob__http_date_parse(const char* s, int64_t* ms_out) {
  int y = -1, mo = 0, d = -1, h, mi, se;
  size_t n;
  if (s == NULL) return OB_EINVAL;
  while (*s == ' ') s++;
  n = strlen(s);
  while (n && s[n - 1] == ' ') n--;
  if (n == 29 && s[3] == ',') {
    /* IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT" */
    int ok = 0;
    for (int i = 0; i < 7; i++) ok |= strncmp(s, k_days[i], 3) == 0;
    if (!ok || s[4] != ' ' || s[7] != ' ' || s[11] != ' ' || s[16] != ' ' ||
        strncmp(s + 25, " GMT", 4) != 0)
      return OB_EINVAL;
    d = digits(s + 5, 2);
    mo = month_of(s + 8);
    y = digits(s + 12, 4);
    if (!hms(s + 17, &h, &mi, &se)) return OB_EINVAL;
  } else if (n == 24 && s[3] == ' ') {
    /* asctime: "Sun Nov  6 08:49:37 1994" */
    int ok = 0;
    for (int i = 0; i < 7; i++) ok |= strncmp(s, k_days[i], 3) == 0;
    if (!ok || s[7] != ' ' || s[10] != ' ' || s[19] != ' ') return OB_EINVAL;
    mo = month_of(s + 4);
    d = s[8] == ' ' ? digits(s + 9, 1) : digits(s + 8, 2);
    y = digits(s + 20, 4);
    if (!hms(s + 11, &h, &mi, &se)) return OB_EINVAL;
  } else {
    /* RFC 850: "Sunday, 06-Nov-94 08:49:37 GMT" */
    const char* c = strchr(s, ',');
    int ok = 0, yy;
    if (c == NULL || (size_t)(c - s) + 24 != n) return OB_EINVAL;
    for (int i = 0; i < 7; i++)
      ok |= (size_t)(c - s) == strlen(k_long_days[i]) &&
            strncmp(s, k_long_days[i], (size_t)(c - s)) == 0;
    c++;
    if (!ok || c[0] != ' ' || c[3] != '-' || c[7] != '-' || c[10] != ' ' ||
        strncmp(c + 19, " GMT", 4) != 0)
      return OB_EINVAL;
    d = digits(c + 1, 2);
    mo = month_of(c + 4);
    yy = digits(c + 8, 2);
    if (yy < 0) return OB_EINVAL;
    /* RFC 9110: a two-digit year more than 50 years ahead is in the past;
    ** without a clock here, pivot at 70 (1970-2069). */
    y = yy < 70 ? 2000 + yy : 1900 + yy;
    if (!hms(c + 11, &h, &mi, &se)) return OB_EINVAL;
  }
  if (y < 1970 || mo == 0 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60)
    return OB_EINVAL;
  {
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (d > mdays[mo - 1] || (mo == 2 && d == 29 && !leap)) return OB_EINVAL;
  }
  if (se == 60) se = 59;  /* a leap second: close enough for an offset */
  *ms_out = (days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se) *
            INT64_C(1000);
  return 0;
}

int ob__sqs_clock_update(int64_t* offset_ms, const char* date, int64_t sent_ms,
                         int64_t now_ms, int has_age) {
  int64_t server_ms, old, fresh;
  if (date == NULL || has_age) return 0;
  if (ob__http_date_parse(date, &server_ms) != 0) return OB_EINVAL;
  if (now_ms - sent_ms > OB__SQS_MAX_ROUND_TRIP_MS) return 0;
  old = *offset_ms;
  fresh = server_ms - now_ms;
  *offset_ms = fresh;
  /* "Corrected" means the offset moved by at least 4 min: enough to explain
  ** a skew rejection of a request signed with the old one. (The JS SDK tests
  ** |fresh| >= 4 min and fresh != old; with Date's 1 s resolution that is
  ** true on almost every response once a clock is off, so a request failing
  ** for another reason would be retried each time.) */
  return fresh - old >= OB__SQS_SKEW_CORRECTED_MS ||
         old - fresh >= OB__SQS_SKEW_CORRECTED_MS;
}

int64_t ob__sqs_signing_time_s(int64_t now_ms, int64_t offset_ms) {
  int64_t t = now_ms + offset_ms;
  return t >= 0 ? t / 1000 : -((-t + 999) / 1000);
}
