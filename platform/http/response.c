/* SPDX-License-Identifier: Apache-2.0 */
/*
** HTTP/1.1 response parsing with llhttp, bounded: header bytes and count,
** body bytes, interim (1xx) responses. llhttp already rejects the framing
** attacks that matter for a client (verified against Debian 12's 8.1 and
** Debian 13's 9.2 in tests/unit/test_http_parser.c):
**   Content-Length overflow, sign or junk  -> HPE_INVALID_CONTENT_LENGTH
**   Content-Length twice (even equal)      -> HPE_UNEXPECTED_CONTENT_LENGTH
**   Content-Length with Transfer-Encoding  -> HPE_UNEXPECTED_CONTENT_LENGTH
**   bad or overflowing chunk size          -> HPE_INVALID_CHUNK_SIZE
** The CL+TE check is repeated in on_headers_complete, in case a future
** llhttp becomes lenient for responses.
*/
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/errbuf.h"
#include "platform/http/http_int.h"

static ob__http_parser_t* P(llhttp_t* l) {
  return l->data;
}

/* Record the first error; the callback then returns -1 / HPE_USER. */
__attribute__((format(printf, 3, 4))) static int fail(ob__http_parser_t* p,
                                                      int code,
                                                      const char* fmt, ...) {
  if (p->err == 0) {
    va_list ap;
    p->err = code;
    va_start(ap, fmt);
    ob__errbuf_vset(p->detail, sizeof p->detail, 0, fmt, ap);
    va_end(ap);
  }
  return HPE_USER;
}

static int add_head_bytes(ob__http_parser_t* p, size_t n) {
  p->head_bytes += n;
  if (p->head_bytes > p->lim.max_header_bytes)
    return fail(p, OB__HTTP_E_HEADER_TOO_BIG,
                "response header section exceeds %zu bytes",
                p->lim.max_header_bytes);
  return 0;
}

static int arena_append(ob__http_parser_t* p, const char* at, size_t n) {
  if (n == 0) return 0;  /* hbuf may still be NULL: no memcpy(NULL, .., 0) */
  if (p->hlen + n > p->hcap) {
    size_t cap = p->hcap ? p->hcap : 1024;
    char* b;
    while (cap < p->hlen + n) cap *= 2;
    b = realloc(p->hbuf, cap);
    if (b == NULL) return fail(p, OB_ENOMEM, "out of memory");
    p->hbuf = b;
    p->hcap = cap;
  }
  memcpy(p->hbuf + p->hlen, at, n);
  p->hlen += n;
  return 0;
}

static int on_message_begin(llhttp_t* l) {
  ob__http_parser_t* p = P(l);
  /* "HTTP/1.1 200 " and CRLF: the parts of the status line without a
  ** callback of their own. */
  return add_head_bytes(p, 15) ? -1 : 0;
}

static int on_status(llhttp_t* l, const char* at, size_t n) {
  (void)at;
  return add_head_bytes(P(l), n);
}

/* RFC 9110 token characters. Debian's llhttp is built non-strict and lets
** e.g. spaces into field names; we do not. */
static int tchar(unsigned char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
         (ch >= '0' && ch <= '9') ||
         (ch != 0 && strchr("!#$%&'*+-.^_`|~", ch) != NULL);
}

static int on_header_field(llhttp_t* l, const char* at, size_t n) {
  ob__http_parser_t* p = P(l);
  int rc;

  for (size_t i = 0; i < n; i++)
    if (!tchar((unsigned char)at[i]))
      return fail(p, OB__HTTP_E_BAD_RESPONSE,
                  "invalid character 0x%02x in a header field name",
                  (unsigned char)at[i]);

  if (p->hstate != OB__HSTATE_NAME) {  /* a new field starts */
    if ((rc = add_head_bytes(p, 4)) != 0) return rc;  /* ": " CRLF */
    if (p->headers_done) {
      p->hstate = OB__HSTATE_NAME;  /* trailer: counted, not kept */
    } else {
      if (p->nhdrs >= p->lim.max_headers)
        return fail(p, OB__HTTP_E_HEADER_TOO_BIG,
                    "more than %zu response header fields",
                    p->lim.max_headers);
      if (p->nhdrs == p->hdrs_cap) {
        size_t cap = p->hdrs_cap ? p->hdrs_cap * 2 : 16;
        ob__http_hdr_t* h = realloc(p->hdrs, cap * sizeof *h);
        if (h == NULL) return fail(p, OB_ENOMEM, "out of memory");
        p->hdrs = h;
        p->hdrs_cap = cap;
      }
      p->hdrs[p->nhdrs].name_off = p->hlen;
      p->hdrs[p->nhdrs].value_off = p->hlen;
      p->hstate = OB__HSTATE_NAME;
    }
  }
  if ((rc = add_head_bytes(p, n)) != 0) return rc;
  return p->headers_done ? 0 : arena_append(p, at, n);
}

static int on_header_field_complete(llhttp_t* l) {
  ob__http_parser_t* p = P(l);
  /* A field name is a token of at least one character (RFC 9110 5.1); a
  ** line like ":a" gives no name bytes at all. Found by fuzzing. */
  if (p->hstate != OB__HSTATE_NAME ||
      (!p->headers_done && p->hlen == p->hdrs[p->nhdrs].name_off))
    return fail(p, OB__HTTP_E_BAD_RESPONSE, "empty header name");
  p->hstate = OB__HSTATE_VALUE;
  if (p->headers_done) return 0;
  if (arena_append(p, "", 1) != 0) return -1;
  p->hdrs[p->nhdrs].value_off = p->hlen;
  return 0;
}

static int on_header_value(llhttp_t* l, const char* at, size_t n) {
  ob__http_parser_t* p = P(l);
  int rc;
  if ((rc = add_head_bytes(p, n)) != 0) return rc;
  return p->headers_done ? 0 : arena_append(p, at, n);
}

static int on_header_value_complete(llhttp_t* l) {
  ob__http_parser_t* p = P(l);
  p->hstate = OB__HSTATE_BETWEEN;
  if (p->headers_done) return 0;
  if (arena_append(p, "", 1) != 0) return -1;
  p->nhdrs++;
  return 0;
}

static int on_headers_complete(llhttp_t* l) {
  ob__http_parser_t* p = P(l);
  int status = llhttp_get_status_code(l);

  p->status = status;
  if (status < 100 || status > 999) {  /* llhttp accepts "20" */
    fail(p, OB__HTTP_E_BAD_RESPONSE, "invalid status code %d", status);
    return -1;
  }
  if (status >= 100 && status < 200) {
    if (status == 101) {
      fail(p, OB__HTTP_E_BAD_RESPONSE,
           "unexpected %d Switching Protocols", status);
      return -1;
    }
    p->is_interim = 1;  /* skipped: the final response follows */
    return 0;
  }
  if ((l->flags & F_CONTENT_LENGTH) && (l->flags & F_TRANSFER_ENCODING)) {
    fail(p, OB__HTTP_E_BAD_FRAMING,
         "Content-Length with Transfer-Encoding");
    return -1;
  }
  p->headers_done = 1;
  if (p->head_request) return 1;  /* no body, whatever the headers say */
  if ((l->flags & F_CONTENT_LENGTH) &&
      l->content_length > p->lim.max_body_bytes) {
    fail(p, OB__HTTP_E_BODY_TOO_BIG,
         "Content-Length exceeds the %zu-byte body limit",
         p->lim.max_body_bytes);
    return -1;
  }
  if ((l->flags & F_CONTENT_LENGTH) && l->content_length > 0) {
    /* Known size within the cap: one allocation. */
    free(p->body);
    p->body_len = 0;
    p->body = malloc((size_t)l->content_length + 1);
    if (p->body == NULL) {
      fail(p, OB_ENOMEM, "out of memory");
      return -1;
    }
    p->body_cap = (size_t)l->content_length;
  }
  return 0;
}

static int on_body(llhttp_t* l, const char* at, size_t n) {
  ob__http_parser_t* p = P(l);

  if (n > p->lim.max_body_bytes - p->body_len)
    return fail(p, OB__HTTP_E_BODY_TOO_BIG,
                "response body exceeds %zu bytes", p->lim.max_body_bytes);
  if (p->body_len + n > p->body_cap) {
    size_t cap = p->body_cap ? p->body_cap : 4096;
    uint8_t* b;
    while (cap < p->body_len + n) cap *= 2;
    if (cap > p->lim.max_body_bytes) cap = p->lim.max_body_bytes;
    b = realloc(p->body, cap + 1);
    if (b == NULL) return fail(p, OB_ENOMEM, "out of memory");
    p->body = b;
    p->body_cap = cap;
  }
  memcpy(p->body + p->body_len, at, n);
  p->body_len += n;
  return 0;
}

static int on_message_complete(llhttp_t* l) {
  ob__http_parser_t* p = P(l);

  if (p->is_interim) {
    if (++p->interim_count > OB__HTTP_MAX_INTERIM) {
      fail(p, OB__HTTP_E_BAD_RESPONSE, "more than %d interim 1xx responses",
           OB__HTTP_MAX_INTERIM);
      return -1;
    }
    p->is_interim = 0;
    /* A 1xx has no body (RFC 9110 15.2); whatever llhttp framed as one is
    ** dropped, and must not leak into, or be overwritten by, the final
    ** response's body. Found by fuzzing. */
    free(p->body);
    p->body = NULL;
    p->body_len = 0;
    p->body_cap = 0;
    p->hlen = 0;
    p->nhdrs = 0;
    p->hstate = OB__HSTATE_BETWEEN;
    p->head_bytes = 0;
    p->status = 0;
    return 0;
  }
  p->complete = 1;
  p->keep_alive = llhttp_should_keep_alive(l);
  return HPE_PAUSED;  /* stop at the end: what follows is not ours */
}

static const llhttp_settings_t k_settings = {
  .on_message_begin = on_message_begin,
  .on_status = on_status,
  .on_header_field = on_header_field,
  .on_header_value = on_header_value,
  .on_header_field_complete = on_header_field_complete,
  .on_header_value_complete = on_header_value_complete,
  .on_headers_complete = on_headers_complete,
  .on_body = on_body,
  .on_message_complete = on_message_complete,
};

void ob__http_parser_init(ob__http_parser_t* p, const ob__http_limits_t* lim,
                          int head_request) {
  memset(p, 0, sizeof *p);
  p->lim = *lim;
  p->head_request = head_request;
  llhttp_init(&p->llh, HTTP_RESPONSE, &k_settings);
  p->llh.data = p;
}

static int map_llhttp(ob__http_parser_t* p, llhttp_errno_t e) {
  const char* reason = llhttp_get_error_reason(&p->llh);
  int code;

  if (p->err) return p->err;  /* our own callback failed */
  switch (e) {
    case HPE_INVALID_CONTENT_LENGTH:
    case HPE_UNEXPECTED_CONTENT_LENGTH:
      /* A Content-Length after a Transfer-Encoding is framing, whichever
      ** code the version says it with: llhttp 8 HPE_UNEXPECTED_CONTENT_LENGTH,
      ** llhttp 9 HPE_INVALID_CONTENT_LENGTH ("Transfer-Encoding can't be
      ** present with Content-Length"). */
      code = ((p->llh.flags & F_TRANSFER_ENCODING) ||
              (reason && strstr(reason, "Transfer-Encoding")))
                 ? OB__HTTP_E_BAD_FRAMING
                 : OB__HTTP_E_BAD_CONTENT_LENGTH;
      break;
    case HPE_INVALID_TRANSFER_ENCODING:
      code = OB__HTTP_E_BAD_FRAMING;
      break;
    case HPE_INVALID_CHUNK_SIZE:
      code = OB__HTTP_E_BAD_CHUNK;
      break;
    default:
      code = OB__HTTP_E_BAD_RESPONSE;
      break;
  }
  p->err = code;
  snprintf(p->detail, sizeof p->detail, "bad response: %s (%s)",
           reason ? reason : "?", llhttp_errno_name(e));
  return code;
}

int ob__http_parser_feed(ob__http_parser_t* p, const char* data, size_t len,
                         size_t* used) {
  llhttp_errno_t e;

  *used = 0;
  if (p->err) return p->err;
  if (p->complete) return 1;
  if (len == 0) return 0;
  p->started = 1;
  e = llhttp_execute(&p->llh, data, len);
  if (e == HPE_OK) {
    /* llhttp skips whitespace without callbacks; bound the raw head too. */
    if (!p->headers_done) {
      p->raw_head += len;
      if (p->raw_head > 2 * p->lim.max_header_bytes + 1024) {
        fail(p, OB__HTTP_E_HEADER_TOO_BIG,
             "response header section exceeds %zu bytes",
             p->lim.max_header_bytes);
        return p->err;
      }
    }
    *used = len;
    return 0;
  }
  if (e == HPE_PAUSED && p->complete) {
    const char* pos = llhttp_get_error_pos(&p->llh);
    *used = (pos != NULL && pos >= data && pos <= data + len)
                ? (size_t)(pos - data)
                : len;
    return 1;
  }
  return map_llhttp(p, e);
}

int ob__http_parser_eof(ob__http_parser_t* p) {
  llhttp_errno_t e;

  if (p->err) return p->err;
  if (p->complete) return 1;
  if (!p->started) {
    p->err = OB__HTTP_E_EOF;
    snprintf(p->detail, sizeof p->detail,
             "connection closed before any response byte");
    return p->err;
  }
  e = llhttp_finish(&p->llh);
  if ((e == HPE_OK || e == HPE_PAUSED) && p->complete) return 1;
  if (p->err) return p->err;
  p->err = OB__HTTP_E_EOF;
  snprintf(p->detail, sizeof p->detail,
           "connection closed %s (%s)",
           p->headers_done ? "in the middle of the response body"
                           : "in the middle of the response header",
           e == HPE_OK ? "no final response" : llhttp_errno_name(e));
  return p->err;
}

int ob__http_parser_response(ob__http_parser_t* p, ob__http_response_t* res) {
  static const uint8_t empty[1] = {0};

  res->status = p->status;
  res->headers = NULL;
  res->nheaders = 0;
  res->body = empty;
  res->body_len = 0;
  if (p->headers_done && p->nhdrs > 0) {
    if (p->view == NULL) {
      p->view = malloc(p->nhdrs * sizeof *p->view);
      if (p->view == NULL) return OB_ENOMEM;
    }
    for (size_t i = 0; i < p->nhdrs; i++) {
      p->view[i].name = p->hbuf + p->hdrs[i].name_off;
      p->view[i].value = p->hbuf + p->hdrs[i].value_off;
    }
    res->headers = p->view;
    res->nheaders = p->nhdrs;
  }
  if (p->body != NULL) {
    p->body[p->body_len] = 0;  /* room reserved by every allocation */
    res->body = p->body;
    res->body_len = p->body_len;
  }
  return 0;
}

void ob__http_parser_free(ob__http_parser_t* p) {
  free(p->hbuf);
  free(p->hdrs);
  free(p->body);
  free(p->view);
  p->hbuf = NULL;
  p->hdrs = NULL;
  p->body = NULL;
  p->view = NULL;
}
