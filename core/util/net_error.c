/* SPDX-License-Identifier: Apache-2.0 */
/* The network layers' codes: names, the public mapping, the one
** classification every worker uses (see net_error.h). */
#include "core/util/net_error.h"

const char* ob__net_strerror(int err) {
  switch (err) {
#define OB__NET_TEXT(name, code, text) case (code): return text;
    OB__HTTP_ERRNO_MAP(OB__NET_TEXT)
    OB__SQS_ERRNO_MAP(OB__NET_TEXT)
#undef OB__NET_TEXT
    default: return ob_strerror(err);
  }
}

const char* ob__net_err_name(int err) {
  switch (err) {
#define OB__HTTP_NAME(name, code, text) case (code): return "OB__HTTP_E_" #name;
    OB__HTTP_ERRNO_MAP(OB__HTTP_NAME)
#undef OB__HTTP_NAME
#define OB__SQS_NAME(name, code, text) case (code): return "OB__SQS_E_" #name;
    OB__SQS_ERRNO_MAP(OB__SQS_NAME)
#undef OB__SQS_NAME
    default: return ob_err_name(err);
  }
}

static int is_public(int code) {
  switch (code) {
#define OB__PUBLIC_CASE(name, c, text) case (c):
    OB_ERRNO_MAP(OB__PUBLIC_CASE)
#undef OB__PUBLIC_CASE
      return 1;
    default:
      return 0;
  }
}

int ob__err_public(int code) {
  switch (code) {
    case OB__HTTP_E_TLS_HOSTNAME:
    case OB__HTTP_E_TLS_EXPIRED:
    case OB__HTTP_E_TLS_FUTURE:
    case OB__HTTP_E_TLS_UNTRUSTED:
    case OB__HTTP_E_TLS_CERT:
    case OB__HTTP_E_TLS_PROTOCOL:
    case OB__HTTP_E_TLS:
    case OB__HTTP_E_TLS_NO_HOSTNAME:
    case OB__HTTP_E_TLS_CA:
      return OB_ETLS;
    case OB__HTTP_E_TLS_HANDSHAKE_EOF:
    case OB__HTTP_E_CONNECT:
    case OB__HTTP_E_DNS:
    case OB__HTTP_E_RESET:
    case OB__HTTP_E_EOF:
    case OB__HTTP_E_STALE:
    case OB__HTTP_E_IO:
      return OB_ENET;
    case OB__HTTP_E_CONNECT_TIMEOUT:
    case OB__HTTP_E_DEADLINE:
      return OB_ETIMEDOUT;
    case OB__HTTP_E_HEADER_TOO_BIG:
    case OB__HTTP_E_BODY_TOO_BIG:
    case OB__HTTP_E_BAD_CONTENT_LENGTH:
    case OB__HTTP_E_BAD_FRAMING:
    case OB__HTTP_E_BAD_CHUNK:
    case OB__HTTP_E_BAD_RESPONSE:
    case OB__SQS_E_CHECKSUM:
    case OB__SQS_E_BAD_RESPONSE:
    case OB__SQS_E_NOT_JSON_API:
      return OB_EPROTO;
    case OB__HTTP_E_CANCELED:
      return OB_ECANCELED;
    case OB__HTTP_E_CLOSING:
      return OB_ESTATE;
    case OB__HTTP_E_URL:
    case OB__HTTP_E_PLAIN_HTTP:
      return OB_EINVAL;
    case OB__SQS_E_SERVICE:
      return OB_EREMOTE;
    case OB__SQS_E_THROTTLED:
    case OB__SQS_E_UNAVAILABLE:
      return OB_EUNAVAIL;
    case OB__SQS_E_AUTH:
      return OB_EAUTH;
    case OB__SQS_E_NO_QUEUE:
      return OB_ENOTFOUND;
    default:
      break;
  }
  return code >= 0 || is_public(code) ? code : OB_EINVAL;
}

ob__net_class_t ob__net_classify(int code) {
  switch (code) {
    case 0:
      return OB__NET_OK;
    /* Detailed codes first: they say more than their public group. A
    ** handshake cut short is the network; a TLS error after it is the
    ** peer's; a certificate or version refusal is configuration. */
    case OB__HTTP_E_TLS_HANDSHAKE_EOF:
      return OB__NET_TRANSIENT;
    case OB__HTTP_E_TLS:
      return OB__NET_PEER;
    case OB__HTTP_E_CLOSING:
      return OB__NET_CANCELED;
    /* A server that answers, but not as the SQS JSON API (it speaks only
    ** the query protocol, lacks the operation, is not SQS at all): the
    ** same answer every time until the endpoint is fixed, and nothing to
    ** do with the request (docs/decisions/0014-not-the-sqs-json-api.md). */
    case OB__SQS_E_NOT_JSON_API:
      return OB__NET_CONFIG;
    default:
      break;
  }
  switch (ob__err_public(code)) {
    case OB_ENET:
    case OB_ETIMEDOUT:
    case OB_EUNAVAIL:
      return OB__NET_TRANSIENT;
    case OB_ETLS:
    case OB_ENOTFOUND:
    case OB_EINVAL:
      return OB__NET_CONFIG;
    case OB_EAUTH:
      return OB__NET_AUTH;
    case OB_EREMOTE:
    case OB_EPROTO:
      return OB__NET_PEER;
    case OB_ECANCELED:
      return OB__NET_CANCELED;
    default:
      return OB__NET_LOCAL;
  }
}

const char* ob__net_class_name(ob__net_class_t c) {
  switch (c) {
    case OB__NET_OK: return "ok";
    case OB__NET_TRANSIENT: return "transient";
    case OB__NET_CONFIG: return "configuration";
    case OB__NET_AUTH: return "authentication";
    case OB__NET_PEER: return "refused by the peer";
    case OB__NET_CANCELED: return "canceled";
    case OB__NET_LOCAL: return "local";
  }
  return "unknown";
}
