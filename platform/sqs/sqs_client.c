/* SPDX-License-Identifier: Apache-2.0 */
/* Asynchronous SQS client: codec + SigV4 + HTTP + standard-mode retries. */
#include "platform/sqs/sqs_client.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <mbedtls/platform_util.h>

#include "core/sigv4/sigv4.h"
#include "core/util/errbuf.h"
#include "core/util/peer_text.h"
#include "core/util/secret.h"

#define USER_AGENT "oncebox/" OB_VERSION_STRING
#define DEFAULT_CONNECT_TIMEOUT_MS 10000
#define DEFAULT_REQUEST_TIMEOUT_MS 30000
#define LONG_POLL_MAX_WAIT_S 20

typedef enum { ST_HTTP = 1, ST_WAIT, ST_DONE } op_state_t;

/* Private state of one call; malloc'd at submit, freed after the callback
** (its timer handle must be closed first, hence the close-callback path). */
typedef struct ob__sqsc_op_s {
  ob__sqs_client_t* c;
  ob__sqs_req_t* req;
  ob__sqs_cb cb;
  struct ob__sqsc_op_s* prev;
  struct ob__sqsc_op_s* next;
  uv_timer_t timer;
  ob__http_req_t http;
  op_state_t state;
  int canceled;
  int status;          /* final status, set by finish() */
  int pending_status;  /* GIVE_UP_AFTER: reported when the timer fires */
  char* body;
  size_t body_len;
  uint64_t timeout_ms;
  ob__sqs_retry_t retry;
  int64_t sent_ms;
  int sent;            /* HTTP attempts actually started */
  /* What to check in the answer. */
  int receive_flags;
  char md5_body[OB__SQS_MD5_BUFLEN];
  char md5_attrs[OB__SQS_MD5_BUFLEN];   /* "" when no attributes were sent */
  char** ids;           /* batch entry Ids */
  char (*batch_md5_body)[OB__SQS_MD5_BUFLEN];
  char (*batch_md5_attrs)[OB__SQS_MD5_BUFLEN];
  size_t nids;
} op_t;

/* Closing runs in two steps: the calls in flight finish (canceled), then
** the HTTP client closes, then the close callback runs. */
typedef enum {
  CLIENT_OPEN = 0,
  CLIENT_DRAINING,      /* ob__sqs_client_close: waiting for calls to end */
  CLIENT_HTTP_CLOSING   /* the HTTP client is being closed */
} client_state_t;

struct ob__sqs_client_s {
  uv_loop_t* loop;
  ob__http_client_t* http;
  ob__aws_endpoint_t ep;
  char* region;
  char* access_key_id;
  char* secret;
  char* token;
  int held;              /* secret and token are held (peer_text.h) */
  const ob_clock_t* clock;
  int max_attempts;
  uint64_t request_timeout_ms;
  ob__sigv4_cache_t sigcache;
  ob__sqs_bucket_t bucket;
  int64_t clock_offset_ms;
  op_t* ops;            /* calls not yet completed */
  size_t nops;
  client_state_t closing;
  ob__sqs_close_cb close_cb;
  void* close_arg;
  ob__sqs_stats_t stats;
};

static void detailf(ob__sqs_req_t* req, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void detailf(ob__sqs_req_t* req, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ob__errbuf_vset(req->detail, sizeof req->detail, 0, fmt, ap);
  va_end(ap);
}

/* ---------------------------------------------------------------------------
** Configuration and lifecycle.
*/
void ob__sqs_client_config_init(ob__sqs_client_config_t* cfg) {
  memset(cfg, 0, sizeof *cfg);
}

void ob__sqs_client_config_from_aws(ob__sqs_client_config_t* cfg,
                                   const ob__aws_config_t* aws) {
  cfg->endpoint = aws->endpoint.url;
  cfg->region = aws->region;
  cfg->access_key_id = aws->access_key_id;
  cfg->secret_access_key = aws->secret_access_key;
  cfg->session_token = aws->session_token;
  cfg->ca_file = aws->ca_file;
  /* Not aws->allow_plain_http (an http:// endpoint was configured): only
  ** the opt-in ob__aws_plain_http_check recorded lets it through. */
  cfg->allow_plain_http = aws->plain_http_allowed;
  if (aws->max_attempts > 0) cfg->max_attempts = aws->max_attempts;
}

static int printable_no_space(const char* s) {
  if (s == NULL || *s == '\0') return 0;
  for (; *s; s++)
    if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f) return 0;
  return 1;
}

static void client_free(ob__sqs_client_t* c) {
  if (c == NULL) return;
  ob__sigv4_cache_clear(&c->sigcache);
  free(c->region);
  free(c->access_key_id);
  if (c->held) {
    ob__secret_forget(c->secret);
    ob__secret_forget(c->token);
  }
  ob__free_secret(c->secret);
  ob__free_secret(c->token);
  mbedtls_platform_zeroize(c, sizeof *c);
  free(c);
}

int ob__sqs_client_open(ob__sqs_client_t** out, uv_loop_t* loop,
                       const ob__sqs_client_config_t* cfg, char* errbuf,
                       size_t errlen) {
  ob__sqs_client_t* c = NULL;
  ob__http_config_t hc;
  int rc;

  if (errbuf != NULL && errlen > 0) errbuf[0] = '\0';
  if (out != NULL) *out = NULL;
  if (out == NULL || loop == NULL || cfg == NULL) return OB_EINVAL;
  c = calloc(1, sizeof *c);
  if (c == NULL) return OB_ENOMEM;
  if (ob__aws_endpoint_parse(cfg->endpoint, &c->ep) != 0) {
    rc = ob__errbuf_set(errbuf, errlen, OB_EINVAL,
                        "endpoint must be http(s)://host[:port] with no path");
    goto fail;
  }
  if (!c->ep.tls && !cfg->allow_plain_http) {
    rc = ob__errbuf_set(errbuf, errlen, OB_EINVAL,
                        "endpoint http://%s refused: plain HTTP sends the "
                        "signed requests and the session token in clear; use "
                        "https://, or opt in (allow_plain_http; "
                        "ONCEBOX_SQS_ALLOW_HTTP=1) for a local test server",
                        c->ep.host_header);
    goto fail;
  }
  if (cfg->region == NULL || cfg->region[0] == '\0' ||
      strspn(cfg->region, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                          "0123456789-._") != strlen(cfg->region)) {
    rc = ob__errbuf_set(errbuf, errlen, OB_EINVAL, "missing or invalid region");
    goto fail;
  }
  if (!printable_no_space(cfg->access_key_id) ||
      strpbrk(cfg->access_key_id, "/,") != NULL ||
      !printable_no_space(cfg->secret_access_key) ||
      (cfg->session_token != NULL && cfg->session_token[0] != '\0' &&
       !printable_no_space(cfg->session_token))) {
    rc = ob__errbuf_set(errbuf, errlen, OB_EINVAL,
                        "missing or malformed credentials (access key id, "
                        "secret key or session token)");
    goto fail;
  }
  c->loop = loop;
  c->region = strdup(cfg->region);
  c->access_key_id = strdup(cfg->access_key_id);
  c->secret = strdup(cfg->secret_access_key);
  if (cfg->session_token != NULL && cfg->session_token[0] != '\0')
    c->token = strdup(cfg->session_token);
  if (c->region == NULL || c->access_key_id == NULL || c->secret == NULL ||
      (cfg->session_token && cfg->session_token[0] && c->token == NULL)) {
    rc = OB_ENOMEM;
    goto fail;
  }
  /* What SQS (or a proxy before it) echoes back is cleaned of them. */
  c->held = 1;
  (void)ob__secret_hold(c->secret);
  (void)ob__secret_hold(c->token);
  c->clock = cfg->clock != NULL ? cfg->clock : ob_system_clock();
  c->max_attempts = cfg->max_attempts > 0 ? cfg->max_attempts
                                          : OB__SQS_MAX_ATTEMPTS;
  c->request_timeout_ms = cfg->request_timeout_ms > 0
                              ? cfg->request_timeout_ms
                              : DEFAULT_REQUEST_TIMEOUT_MS;
  ob__sigv4_cache_init(&c->sigcache);
  ob__sqs_bucket_init(&c->bucket);

  ob__http_config_init(&hc);
  hc.ca_file = cfg->ca_file;
  hc.allow_plain_http = !c->ep.tls;
  hc.connect_timeout_ms = cfg->connect_timeout_ms > 0
                              ? cfg->connect_timeout_ms
                              : DEFAULT_CONNECT_TIMEOUT_MS;
  hc.request_timeout_ms = c->request_timeout_ms;
  /* A full receive is up to 10 x 1 MiB, escaped: the codec's own cap. */
  hc.max_body_bytes = OB__SQS_MAX_RESPONSE_BYTES;
  hc.resolve = cfg->resolve;
  hc.nresolve = cfg->nresolve;
  rc = ob__http_client_open(&c->http, loop, &hc, errbuf, errlen);
  if (rc < 0) goto fail;
  *out = c;
  return 0;
fail:
  client_free(c);
  return rc;
}

static void on_http_closed(ob__http_client_t* http, void* arg) {
  ob__sqs_client_t* c = arg;
  ob__sqs_close_cb cb = c->close_cb;
  void* cb_arg = c->close_arg;
  (void)http;
  /* Credentials are wiped before anyone hears the client is gone. */
  ob__sigv4_cache_clear(&c->sigcache);
  if (c->held) {
    ob__secret_forget(c->secret);
    ob__secret_forget(c->token);
    c->held = 0;
  }
  ob__free_secret(c->secret);
  c->secret = NULL;
  ob__free_secret(c->token);
  c->token = NULL;
  if (cb != NULL) cb(c, cb_arg);
  client_free(c);
}

static void maybe_finish_close(ob__sqs_client_t* c) {
  if (c->closing == CLIENT_DRAINING && c->nops == 0) {
    c->closing = CLIENT_HTTP_CLOSING;
    ob__http_client_close(c->http, on_http_closed, c);
  }
}

static void cancel_op(op_t* op);

void ob__sqs_client_close(ob__sqs_client_t* c, ob__sqs_close_cb cb, void* arg) {
  if (c == NULL || c->closing != CLIENT_OPEN) return;
  c->closing = CLIENT_DRAINING;
  c->close_cb = cb;
  c->close_arg = arg;
  for (op_t* op = c->ops; op != NULL; op = op->next) cancel_op(op);
  maybe_finish_close(c);
}

void ob__sqs_client_stats(const ob__sqs_client_t* c, ob__sqs_stats_t* s) {
  *s = c->stats;
  s->retry_tokens = c->bucket.tokens;
  s->clock_offset_ms = c->clock_offset_ms;
  s->in_flight = c->nops;
  if (c->http != NULL) {
    ob__http_stats_t h;
    ob__http_client_stats(c->http, &h);
    memcpy(s->tls_version, h.tls_version, sizeof s->tls_version);
    memcpy(s->tls_suite, h.tls_suite, sizeof s->tls_suite);
  }
}

/* ---------------------------------------------------------------------------
** Requests and results.
*/
void ob__sqs_req_cleanup(ob__sqs_req_t* req) {
  if (req == NULL || req->op_ != NULL) return;
  ob__sqs_send_result_free(&req->send);
  ob__sqs_batch_result_free(&req->batch);
  ob__sqs_receive_result_free(&req->receive);
  ob__sqs_attrs_result_free(&req->attrs);
  free(req->queue_url);
  req->queue_url = NULL;
  req->attempts = 0;
  req->quota_exhausted = 0;
  req->http_status = 0;
  req->request_id[0] = '\0';
  memset(&req->error, 0, sizeof req->error);
  req->detail[0] = '\0';
}

static void op_free(op_t* op) {
  free(op->body);
  for (size_t i = 0; i < op->nids; i++) free(op->ids[i]);
  free(op->ids);
  free(op->batch_md5_body);
  free(op->batch_md5_attrs);
  free(op);
}

/* The timer handle is closed; the op is unlinked: report. */
static void on_op_closed(uv_handle_t* h) {
  op_t* op = h->data;
  ob__sqs_client_t* c = op->c;
  ob__sqs_req_t* req = op->req;
  ob__sqs_cb cb = op->cb;
  int status = op->status;

  if (op->prev) op->prev->next = op->next;
  else c->ops = op->next;
  if (op->next) op->next->prev = op->prev;
  c->nops--;
  req->attempts = op->sent;
  req->op_ = NULL;
  op_free(op);
  /* The request is free again: the callback may resubmit it (but not on a
  ** closing client). */
  cb(req, status);
  maybe_finish_close(c);
}

/* Complete the call. Always asynchronous: the callback runs from the
** timer's close callback, so finish() may be called from anywhere. */
static void finish(op_t* op, int status) {
  if (op->state == ST_DONE) return;
  op->state = ST_DONE;
  op->status = status;
  if (status == OB_ECANCELED && op->req->detail[0] == '\0')
    detailf(op->req, "canceled");
  uv_close((uv_handle_t*)&op->timer, on_op_closed);
}

static void cancel_op(op_t* op) {
  if (op->state == ST_DONE) return;
  op->canceled = 1;
  if (op->state == ST_WAIT) {
    finish(op, OB_ECANCELED);
  } else if (op->state == ST_HTTP) {
    /* The HTTP callback follows with CANCELED, or with a result that is
    ** already on its way; either way it sees op->canceled. */
    (void)ob__http_cancel(&op->http);
  }
}

int ob__sqs_cancel(ob__sqs_req_t* req) {
  if (req == NULL || req->op_ == NULL || req->op_->state == ST_DONE ||
      req->op_->canceled)
    return OB_ESTATE;
  cancel_op(req->op_);
  return 0;
}

/* ---------------------------------------------------------------------------
** One attempt: sign at the skew-corrected time and post.
*/
static void on_http(ob__http_req_t* hreq, int status,
                    const ob__http_response_t* res);

static void attempt(op_t* op) {
  ob__sqs_client_t* c = op->c;
  const char* target = ob__sqs_target(op->req->op);
  ob__sigv4_header_t sh[4];
  ob__sigv4_request_t sreq;
  ob__sigv4_params_t params;
  ob__aws_creds_t creds;
  ob__sigv4_out_t sout;
  ob__http_header_t hh[8];
  size_t nh = 0;
  int64_t now;
  int rc;

  memset(&sout, 0, sizeof sout);
  now = c->clock->now_ms(c->clock->ctx);
  op->sent_ms = now;
  sh[0].name = "host";
  sh[0].value = c->ep.host_header;
  sh[1].name = "content-type";
  sh[1].value = OB__SQS_CONTENT_TYPE;
  sh[2].name = "x-amz-target";
  sh[2].value = target;
  sh[3].name = "x-amzn-query-mode";
  sh[3].value = "true";
  memset(&sreq, 0, sizeof sreq);
  sreq.method = "POST";
  sreq.path = "/";
  sreq.headers = sh;
  sreq.nheaders = 4;
  sreq.body = op->body;
  sreq.body_len = op->body_len;
  ob__sigv4_params_init(&params);
  params.region = c->region;
  params.service = "sqs";
  params.time_s = ob__sqs_signing_time_s(now, c->clock_offset_ms);
  creds.access_key_id = c->access_key_id;
  creds.secret_access_key = c->secret;
  creds.session_token = c->token;
  rc = ob__sigv4_sign(&sreq, &creds, &params, &c->sigcache, &sout);
  if (rc < 0) {
    detailf(op->req, "signing the request failed: %s", ob_strerror(rc));
    finish(op, rc);
    return;
  }
  hh[nh].name = "Content-Type";
  hh[nh++].value = OB__SQS_CONTENT_TYPE;
  hh[nh].name = "X-Amz-Target";
  hh[nh++].value = target;
  hh[nh].name = "x-amzn-query-mode";
  hh[nh++].value = "true";
  hh[nh].name = "X-Amz-Date";
  hh[nh++].value = sout.amz_date;
  if (c->token != NULL) {
    hh[nh].name = "X-Amz-Security-Token";
    hh[nh++].value = c->token;
  }
  hh[nh].name = "Authorization";
  hh[nh++].value = sout.authorization;
  hh[nh].name = "User-Agent";
  hh[nh++].value = USER_AGENT;

  memset(&op->http, 0, sizeof op->http);
  op->http.data = op;
  op->http.method = "POST";
  op->http.url = c->ep.url;
  op->http.headers = hh;
  op->http.nheaders = nh;
  op->http.body = op->body;
  op->http.body_len = op->body_len;
  op->http.timeout_ms = op->timeout_ms;
  op->state = ST_HTTP;
  rc = ob__http_request(c->http, &op->http, on_http);
  ob__sigv4_out_free(&sout);   /* the request copied the headers */
  if (rc == 0) {
    op->sent++;
    c->stats.attempts++;
  } else {
    detailf(op->req, "%s", ob__http_strerror(rc));
    op->state = ST_WAIT;   /* not in flight: finish() may close */
    finish(op, rc);
  }
}

static void on_timer(uv_timer_t* t) {
  op_t* op = t->data;
  if (op->state != ST_WAIT) return;
  if (op->canceled) {
    finish(op, OB_ECANCELED);
  } else if (op->pending_status != 0) {
    finish(op, op->pending_status);
  } else {
    op->c->stats.retries++;
    attempt(op);
  }
}

/* ---------------------------------------------------------------------------
** Answers.
*/
static ob__sqs_net_t net_of(int status) {
  switch (status) {
    case OB__HTTP_E_CONNECT_TIMEOUT: return OB__SQS_NET_CONNECT_TIMEOUT;
    case OB__HTTP_E_DEADLINE: return OB__SQS_NET_TIMEOUT;
    case OB__HTTP_E_CONNECT: return OB__SQS_NET_REFUSED;
    case OB__HTTP_E_DNS: return OB__SQS_NET_DNS;
    case OB__HTTP_E_RESET:
    case OB__HTTP_E_EOF:
    case OB__HTTP_E_STALE:
    case OB__HTTP_E_TLS_HANDSHAKE_EOF: return OB__SQS_NET_RESET;
    case OB__HTTP_E_IO: return OB__SQS_NET_PIPE;
    /* Certificates, protocol versions, broken framing, caps, bad URLs:
    ** the same answer again, never retried. */
    default: return OB__SQS_NET_TLS_FATAL;
  }
}

static int is_auth_error(const ob__sqs_error_t* e) {
  static const char* const codes[] = {
      "SignatureDoesNotMatch", "InvalidClientTokenId", "IncompleteSignature",
      "MissingAuthenticationToken", "AccessDenied", "AccessDeniedException",
      "ExpiredToken", "InvalidSecurity", "UnrecognizedClientException",
      "InvalidAccessKeyId", "NotAuthorized", "AuthFailure"};
  for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
    if (ob__sqs_error_is(e, codes[i])) return 1;
  return ob__sqs_is_clock_skew_error(e);
}

static int status_of_error(const ob__sqs_error_t* e,
                           ob__sqs_retry_class_t cls) {
  if (ob__sqs_error_is(e, "QueueDoesNotExist") ||
      ob__sqs_error_is(e, "NonExistentQueue"))
    return OB__SQS_E_NO_QUEUE;
  if (cls == OB__SQS_RETRY_THROTTLING) return OB__SQS_E_THROTTLED;
  if (is_auth_error(e)) return OB__SQS_E_AUTH;
  if (cls == OB__SQS_RETRY_TRANSIENT || e->http_status >= 500)
    return OB__SQS_E_UNAVAILABLE;
  return OB__SQS_E_SERVICE;
}

static void describe_error(ob__sqs_req_t* req) {
  const ob__sqs_error_t* e = &req->error;
  const char* name = e->type[0] ? e->type : e->code[0] ? e->code : "error";
  int show_query = e->query_code[0] && strcmp(e->query_code, name) != 0;
  detailf(req, "%s: %s (HTTP %d%s%s)", name,
          e->message[0] ? e->message : "(no message)", e->http_status,
          show_query ? ", " : "", show_query ? e->query_code : "");
}

/* 1 when the answer says the server is not the SQS JSON API: req->error
** is then the parsed answer and req->detail the sentence
** (ob__sqs_not_json_api). parsed: the answer already parsed, or NULL. */
static int not_json_api(op_t* op, const ob__http_response_t* res,
                        const ob__sqs_error_t* parsed) {
  ob__sqs_req_t* req = op->req;
  ob__sqs_error_t e;
  if (parsed != NULL)
    e = *parsed;
  else
    ob__sqs_parse_error(res->status, (const char*)res->body, res->body_len,
                        ob__http_header_get(res, "x-amzn-query-error"),
                        ob__http_header_get(res, "x-amzn-errortype"), &e);
  if (!ob__sqs_not_json_api(&e, ob__http_header_get(res, "content-type"),
                            ob__sqs_target(req->op), op->c->ep.url,
                            req->detail, sizeof req->detail))
    return 0;
  req->error = e;
  return 1;
}

static int check_md5(const char* got, const char* want, const char* field,
                     ob__sqs_diag_t* diag) {
  if (want[0] == '\0') return 0;
  if (got == NULL || strcasecmp(got, want) != 0) {
    diag->fault = OB__SQS_FAULT_MD5;
    snprintf(diag->field, sizeof diag->field, "%s", field);
    return OB_EIO;
  }
  return 0;
}

/* Parse a 2xx body into the request's result. */
static int parse_ok(op_t* op, const char* body, size_t len,
                    ob__sqs_diag_t* diag) {
  ob__sqs_req_t* req = op->req;
  int rc;

  switch (req->op) {
    case OB__SQS_SEND_MESSAGE:
      rc = ob__sqs_parse_send_message(body, len, NULL, &req->send, diag);
      if (rc == 0)
        rc = check_md5(req->send.md5_of_body, op->md5_body,
                       "MD5OfMessageBody", diag);
      if (rc == 0)
        rc = check_md5(req->send.md5_of_message_attributes, op->md5_attrs,
                       "MD5OfMessageAttributes", diag);
      if (rc < 0) ob__sqs_send_result_free(&req->send);
      return rc;
    case OB__SQS_SEND_MESSAGE_BATCH:
    case OB__SQS_DELETE_MESSAGE_BATCH:
    case OB__SQS_CHANGE_MESSAGE_VISIBILITY_BATCH:
      rc = ob__sqs_parse_batch(req->op, body, len, NULL,
                               (const char* const*)op->ids, op->nids,
                               &req->batch, diag);
      for (size_t i = 0; rc == 0 && op->batch_md5_body != NULL &&
                         i < req->batch.nok;
           i++) {
        const ob__sqs_batch_ok_t* ok = &req->batch.ok[i];
        for (size_t k = 0; k < op->nids; k++) {
          char field[64];
          if (strcmp(ok->id, op->ids[k]) != 0) continue;
          snprintf(field, sizeof field, "Successful[%zu].MD5OfMessageBody", i);
          rc = check_md5(ok->md5_of_body, op->batch_md5_body[k], field, diag);
          if (rc == 0) {
            snprintf(field, sizeof field,
                     "Successful[%zu].MD5OfMessageAttributes", i);
            rc = check_md5(ok->md5_of_message_attributes,
                           op->batch_md5_attrs[k], field, diag);
          }
          break;
        }
      }
      if (rc < 0) ob__sqs_batch_result_free(&req->batch);
      return rc;
    case OB__SQS_RECEIVE_MESSAGE:
      return ob__sqs_parse_receive_message(body, len, op->receive_flags,
                                           &req->receive, diag);
    case OB__SQS_DELETE_MESSAGE:
    case OB__SQS_CHANGE_MESSAGE_VISIBILITY:
      return ob__sqs_parse_empty(body, len, diag);
    case OB__SQS_GET_QUEUE_URL:
      return ob__sqs_parse_get_queue_url(body, len, &req->queue_url, diag);
    case OB__SQS_GET_QUEUE_ATTRIBUTES:
      return ob__sqs_parse_get_queue_attributes(body, len, &req->attrs, diag);
    default:
      return OB_EINVAL;
  }
}

static void on_http(ob__http_req_t* hreq, int status,
                    const ob__http_response_t* res) {
  op_t* op = hreq->data;
  ob__sqs_client_t* c = op->c;
  ob__sqs_req_t* req = op->req;
  ob__sqs_retry_class_t cls;
  ob__sqs_verdict_t v;
  int64_t now = c->clock->now_ms(c->clock->ctx);
  int64_t hint = -1;
  int64_t delay = 0;
  int final;
  int could_retry;

  op->state = ST_WAIT;   /* no HTTP request in flight from here on */
  req->http_status = res->status;
  memset(&req->error, 0, sizeof req->error);
  if (op->canceled || status == OB__HTTP_E_CANCELED) {
    detailf(req, "canceled");
    finish(op, OB_ECANCELED);
    return;
  }
  if (status == 0) {
    const char* rid = ob__http_header_get(res, "x-amzn-requestid");
    int corrected;
    if (rid == NULL) rid = ob__http_header_get(res, "x-amz-request-id");
    snprintf(req->request_id, sizeof req->request_id, "%s", rid ? rid : "");
    /* Every answer with a Date moves the clock offset (JS SDK rule). */
    corrected = ob__sqs_clock_update(&c->clock_offset_ms,
                                     ob__http_header_get(res, "date"),
                                     op->sent_ms, now,
                                     ob__http_header_get(res, "age") != NULL);
    if (corrected == 1) c->stats.skew_corrections++;
    if (res->status >= 200 && res->status < 300) {
      ob__sqs_diag_t diag;
      int rc;
      memset(&diag, 0, sizeof diag);
      rc = parse_ok(op, (const char*)res->body, res->body_len, &diag);
      if (rc == 0) {
        ob__sqs_retry_succeeded(&op->retry, &c->bucket);
        req->detail[0] = '\0';
        finish(op, 0);
        return;
      }
      if (rc == OB_EINVAL && diag.fault == OB__SQS_FAULT_BAD_JSON &&
          not_json_api(op, res, NULL)) {
        /* Not JSON at all (a login page, XML): not SQS answering. */
        finish(op, OB__SQS_E_NOT_JSON_API);
        return;
      }
      detailf(req, "%s response (HTTP %d): %s at %s",
              rc == OB_EIO ? "checksum mismatch in the"
                           : "unexpected",
              res->status, ob__sqs_fault_name(diag.fault),
              diag.field[0] ? diag.field : "(top level)");
      finish(op, rc == OB_EIO      ? OB__SQS_E_CHECKSUM
                 : rc == OB_ENOMEM ? OB_ENOMEM
                                   : OB__SQS_E_BAD_RESPONSE);
      return;
    }
    ob__sqs_parse_error(res->status, (const char*)res->body, res->body_len,
                        ob__http_header_get(res, "x-amzn-query-error"),
                        ob__http_header_get(res, "x-amzn-errortype"),
                        &req->error);
    cls = ob__sqs_classify(OB__SQS_NET_NONE, &req->error, corrected == 1);
    final = status_of_error(&req->error, cls);
    if ((final == OB__SQS_E_SERVICE || final == OB__SQS_E_UNAVAILABLE) &&
        not_json_api(op, res, &req->error)) {
      /* The same answer to every request until the endpoint is fixed:
      ** never retried, never charged to what was sent. */
      finish(op, OB__SQS_E_NOT_JSON_API);
      return;
    }
    describe_error(req);
    hint = ob__sqs_retry_hint_ms(ob__http_header_get(res, "x-amz-retry-after"),
                                 ob__http_header_get(res, "retry-after"), now);
  } else {
    cls = ob__sqs_classify(net_of(status), NULL, 0);
    final = status;
    detailf(req, "%s", res->detail && res->detail[0] ? res->detail
                                                      : ob__http_strerror(status));
  }

  could_retry = cls != OB__SQS_RETRY_NONE &&
                op->retry.attempt < op->retry.max_attempts &&
                !(cls == OB__SQS_RETRY_CLOCK_SKEW && op->retry.skew_retried);
  v = ob__sqs_retry_decide(&op->retry, &c->bucket, cls, hint, c->clock, &delay);
  if (could_retry && v != OB__SQS_RETRY_AFTER) {
    req->quota_exhausted = 1;
    c->stats.quota_refusals++;
    snprintf(req->detail + strlen(req->detail),
             sizeof req->detail - strlen(req->detail),
             "; retry quota exhausted");
  }
  if (v == OB__SQS_GIVE_UP) {
    finish(op, final);
    return;
  }
  /* Wait on the loop's timer: RETRY_AFTER sends again, GIVE_UP_AFTER (a
  ** long poll with an empty quota) reports the failure after the wait. */
  if (v == OB__SQS_GIVE_UP_AFTER) op->pending_status = final;
  uv_timer_start(&op->timer, on_timer, (uint64_t)(delay > 0 ? delay : 0), 0);
}

/* ---------------------------------------------------------------------------
** Submission.
*/
static int precheck(ob__sqs_client_t* c, ob__sqs_req_t* req, ob__sqs_cb cb) {
  if (c == NULL || req == NULL || cb == NULL) return OB_EINVAL;
  if (req->op_ != NULL) return OB_ESTATE;
  ob__sqs_req_cleanup(req);
  if (c->closing != CLIENT_OPEN) {
    detailf(req, "%s", ob__http_strerror(OB__HTTP_E_CLOSING));
    return OB__HTTP_E_CLOSING;
  }
  return 0;
}

static int build_failed(ob__sqs_req_t* req, int rc, const ob__sqs_diag_t* d) {
  detailf(req, "invalid request: %s%s%s", ob__sqs_fault_name(d->fault),
          d->field[0] ? " at " : "", d->field);
  return rc;
}

static op_t* op_new(ob__sqs_client_t* c, ob__sqs_req_t* req, ob__sqs_cb cb,
                    ob__sqs_op_t kind, char* body, size_t body_len) {
  op_t* op = calloc(1, sizeof *op);
  if (op == NULL) return NULL;
  op->c = c;
  op->req = req;
  op->cb = cb;
  op->body = body;
  op->body_len = body_len;
  op->timeout_ms = c->request_timeout_ms;
  req->op = kind;
  ob__sqs_retry_init(&op->retry, c->max_attempts,
                     kind == OB__SQS_RECEIVE_MESSAGE);
  return op;
}

/* Link op into the client and send the first attempt. Can't fail: from
** here on every outcome goes through the callback. */
static int start(op_t* op) {
  ob__sqs_client_t* c = op->c;
  uv_timer_init(c->loop, &op->timer);
  op->timer.data = op;
  op->next = c->ops;
  if (c->ops) c->ops->prev = op;
  c->ops = op;
  c->nops++;
  c->stats.calls++;
  op->req->op_ = op;
  attempt(op);
  return 0;
}

static int md5_attrs(const ob__sqs_send_t* m, char out[OB__SQS_MD5_BUFLEN]) {
  out[0] = '\0';
  if (m->nattrs == 0) return 0;
  return ob__sqs_md5_of_attributes(m->attrs, m->nattrs, out);
}

int ob__sqs_send_message(ob__sqs_client_t* c, ob__sqs_req_t* req,
                        const char* queue_url, const ob__sqs_send_t* msg,
                        ob__sqs_cb cb) {
  ob__sqs_diag_t d;
  char* body = NULL;
  size_t len = 0;
  op_t* op;
  int rc = precheck(c, req, cb);

  if (rc < 0) return rc;
  if (msg == NULL) return OB_EINVAL;
  memset(&d, 0, sizeof d);
  rc = ob__sqs_build_send_message(queue_url, msg, &body, &len, &d);
  if (rc < 0) return build_failed(req, rc, &d);
  op = op_new(c, req, cb, OB__SQS_SEND_MESSAGE, body, len);
  if (op == NULL) {
    free(body);
    return OB_ENOMEM;
  }
  if ((rc = ob__sqs_md5_hex(msg->body, msg->body_len, op->md5_body)) < 0 ||
      (rc = md5_attrs(msg, op->md5_attrs)) < 0) {
    op_free(op);
    return rc;
  }
  return start(op);
}

/* Keep the entry Ids (and, for sends, the expected MD5s) for the answer. */
static int keep_ids(op_t* op, size_t n, const char* (*id_of)(const void*, size_t),
                    const void* arr) {
  op->ids = calloc(n, sizeof *op->ids);
  if (op->ids == NULL) return OB_ENOMEM;
  op->nids = n;
  for (size_t i = 0; i < n; i++) {
    op->ids[i] = strdup(id_of(arr, i));
    if (op->ids[i] == NULL) return OB_ENOMEM;
  }
  return 0;
}

static const char* send_id(const void* arr, size_t i) {
  return ((const ob__sqs_send_t*)arr)[i].id;
}

static const char* handle_id(const void* arr, size_t i) {
  return ((const ob__sqs_handle_entry_t*)arr)[i].id;
}

int ob__sqs_send_message_batch(ob__sqs_client_t* c, ob__sqs_req_t* req,
                              const char* queue_url,
                              const ob__sqs_send_t* entries, size_t n,
                              ob__sqs_cb cb) {
  ob__sqs_diag_t d;
  char* body = NULL;
  size_t len = 0;
  op_t* op;
  int rc = precheck(c, req, cb);

  if (rc < 0) return rc;
  memset(&d, 0, sizeof d);
  rc = ob__sqs_build_send_message_batch(queue_url, entries, n, &body, &len, &d);
  if (rc < 0) return build_failed(req, rc, &d);
  op = op_new(c, req, cb, OB__SQS_SEND_MESSAGE_BATCH, body, len);
  if (op == NULL) {
    free(body);
    return OB_ENOMEM;
  }
  rc = keep_ids(op, n, send_id, entries);
  if (rc == 0) {
    op->batch_md5_body = calloc(n, sizeof *op->batch_md5_body);
    op->batch_md5_attrs = calloc(n, sizeof *op->batch_md5_attrs);
    if (op->batch_md5_body == NULL || op->batch_md5_attrs == NULL)
      rc = OB_ENOMEM;
  }
  for (size_t i = 0; rc == 0 && i < n; i++) {
    rc = ob__sqs_md5_hex(entries[i].body, entries[i].body_len,
                         op->batch_md5_body[i]);
    if (rc == 0) rc = md5_attrs(&entries[i], op->batch_md5_attrs[i]);
  }
  if (rc < 0) {
    op_free(op);
    return rc;
  }
  return start(op);
}

static int has_all_names(const ob__sqs_receive_t* p) {
  for (size_t i = 0; i < p->nmessage_attribute_names; i++)
    if (strcmp(p->message_attribute_names[i], "All") == 0 ||
        strcmp(p->message_attribute_names[i], ".*") == 0)
      return 1;
  return 0;
}

int ob__sqs_receive_message(ob__sqs_client_t* c, ob__sqs_req_t* req,
                           const ob__sqs_receive_t* params, ob__sqs_cb cb) {
  ob__sqs_diag_t d;
  char* body = NULL;
  size_t len = 0;
  op_t* op;
  int wait;
  int rc = precheck(c, req, cb);

  if (rc < 0) return rc;
  if (params == NULL) return OB_EINVAL;
  memset(&d, 0, sizeof d);
  rc = ob__sqs_build_receive_message(params, &body, &len, &d);
  if (rc < 0) return build_failed(req, rc, &d);
  op = op_new(c, req, cb, OB__SQS_RECEIVE_MESSAGE, body, len);
  if (op == NULL) {
    free(body);
    return OB_ENOMEM;
  }
  /* The server holds a long poll open up to WaitTimeSeconds (or the queue's
  ** default, at most 20 s, when omitted): the deadline must cover it. */
  wait = params->wait_time_seconds >= 0 ? params->wait_time_seconds
                                        : LONG_POLL_MAX_WAIT_S;
  op->timeout_ms = (uint64_t)wait * 1000u + c->request_timeout_ms;
  op->receive_flags = has_all_names(params) ? OB__SQS_VERIFY_ATTR_MD5 : 0;
  return start(op);
}

static int submit_simple(ob__sqs_client_t* c, ob__sqs_req_t* req, ob__sqs_cb cb,
                         ob__sqs_op_t kind, char* body, size_t len) {
  op_t* op = op_new(c, req, cb, kind, body, len);
  if (op == NULL) {
    free(body);
    return OB_ENOMEM;
  }
  return start(op);
}

int ob__sqs_delete_message(ob__sqs_client_t* c, ob__sqs_req_t* req,
                          const char* queue_url, const char* receipt_handle,
                          ob__sqs_cb cb) {
  ob__sqs_diag_t d;
  char* body = NULL;
  size_t len = 0;
  int rc = precheck(c, req, cb);

  if (rc < 0) return rc;
  memset(&d, 0, sizeof d);
  rc = ob__sqs_build_delete_message(queue_url, receipt_handle, &body, &len, &d);
  if (rc < 0) return build_failed(req, rc, &d);
  return submit_simple(c, req, cb, OB__SQS_DELETE_MESSAGE, body, len);
}

static int handle_batch(ob__sqs_client_t* c, ob__sqs_req_t* req,
                        const char* queue_url,
                        const ob__sqs_handle_entry_t* entries, size_t n,
                        ob__sqs_cb cb, ob__sqs_op_t kind) {
  ob__sqs_diag_t d;
  char* body = NULL;
  size_t len = 0;
  op_t* op;
  int rc = precheck(c, req, cb);

  if (rc < 0) return rc;
  memset(&d, 0, sizeof d);
  rc = kind == OB__SQS_DELETE_MESSAGE_BATCH
           ? ob__sqs_build_delete_message_batch(queue_url, entries, n, &body,
                                                &len, &d)
           : ob__sqs_build_change_visibility_batch(queue_url, entries, n,
                                                   &body, &len, &d);
  if (rc < 0) return build_failed(req, rc, &d);
  op = op_new(c, req, cb, kind, body, len);
  if (op == NULL) {
    free(body);
    return OB_ENOMEM;
  }
  if ((rc = keep_ids(op, n, handle_id, entries)) < 0) {
    op_free(op);
    return rc;
  }
  return start(op);
}

int ob__sqs_delete_message_batch(ob__sqs_client_t* c, ob__sqs_req_t* req,
                                const char* queue_url,
                                const ob__sqs_handle_entry_t* entries, size_t n,
                                ob__sqs_cb cb) {
  return handle_batch(c, req, queue_url, entries, n, cb,
                      OB__SQS_DELETE_MESSAGE_BATCH);
}

int ob__sqs_change_visibility(ob__sqs_client_t* c, ob__sqs_req_t* req,
                             const char* queue_url, const char* receipt_handle,
                             int visibility_timeout, ob__sqs_cb cb) {
  ob__sqs_diag_t d;
  char* body = NULL;
  size_t len = 0;
  int rc = precheck(c, req, cb);

  if (rc < 0) return rc;
  memset(&d, 0, sizeof d);
  rc = ob__sqs_build_change_visibility(queue_url, receipt_handle,
                                       visibility_timeout, &body, &len, &d);
  if (rc < 0) return build_failed(req, rc, &d);
  return submit_simple(c, req, cb, OB__SQS_CHANGE_MESSAGE_VISIBILITY, body,
                       len);
}

int ob__sqs_change_visibility_batch(ob__sqs_client_t* c, ob__sqs_req_t* req,
                                   const char* queue_url,
                                   const ob__sqs_handle_entry_t* entries,
                                   size_t n, ob__sqs_cb cb) {
  return handle_batch(c, req, queue_url, entries, n, cb,
                      OB__SQS_CHANGE_MESSAGE_VISIBILITY_BATCH);
}

int ob__sqs_get_queue_url(ob__sqs_client_t* c, ob__sqs_req_t* req,
                         const char* queue_name, const char* owner_account_id,
                         ob__sqs_cb cb) {
  ob__sqs_diag_t d;
  char* body = NULL;
  size_t len = 0;
  int rc = precheck(c, req, cb);

  if (rc < 0) return rc;
  memset(&d, 0, sizeof d);
  rc = ob__sqs_build_get_queue_url(queue_name, owner_account_id, &body, &len,
                                   &d);
  if (rc < 0) return build_failed(req, rc, &d);
  return submit_simple(c, req, cb, OB__SQS_GET_QUEUE_URL, body, len);
}

int ob__sqs_get_queue_attributes(ob__sqs_client_t* c, ob__sqs_req_t* req,
                                const char* queue_url,
                                const char* const* names, size_t n,
                                ob__sqs_cb cb) {
  ob__sqs_diag_t d;
  char* body = NULL;
  size_t len = 0;
  int rc = precheck(c, req, cb);

  if (rc < 0) return rc;
  memset(&d, 0, sizeof d);
  rc = ob__sqs_build_get_queue_attributes(queue_url, names, n, &body, &len,
                                          &d);
  if (rc < 0) return build_failed(req, rc, &d);
  return submit_simple(c, req, cb, OB__SQS_GET_QUEUE_ATTRIBUTES, body, len);
}

int ob__sqs_client_open_aws(ob__sqs_client_t** out, uv_loop_t* loop,
                            const ob__aws_config_t* aws,
                            const ob_clock_t* clock, char* errbuf,
                            size_t errlen) {
  ob__sqs_client_config_t cfg;
  ob__sqs_client_config_init(&cfg);
  ob__sqs_client_config_from_aws(&cfg, aws);
  cfg.clock = clock;
  return ob__sqs_client_open(out, loop, &cfg, errbuf, errlen);
}
