/* SPDX-License-Identifier: Apache-2.0 */
/*
** JSON plumbing for the SQS codec: UTF-8 checks, the streaming writer used
** for request bodies, the guarded parse of responses, and result pools.
*/
#include "core/sqs/sqs_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mbedtls/base64.h>

#include "core/util/errbuf.h"
#include "oncebox.h"

int ob__sqs_fail(ob__sqs_diag_t* diag, int rc, ob__sqs_fault_t fault,
                 const char* fmt, ...) {
  if (diag != NULL) {
    va_list ap;
    diag->fault = fault;
    va_start(ap, fmt);
    ob__errbuf_vset(diag->field, sizeof diag->field, 0, fmt, ap);
    va_end(ap);
  }
  return rc;
}

const char* ob__sqs_fault_name(ob__sqs_fault_t f) {
  switch (f) {
    case OB__SQS_FAULT_NONE: return "NONE";
    case OB__SQS_FAULT_ARG: return "ARG";
    case OB__SQS_FAULT_TEXT: return "TEXT";
    case OB__SQS_FAULT_NAME: return "NAME";
    case OB__SQS_FAULT_DUPLICATE: return "DUPLICATE";
    case OB__SQS_FAULT_TOO_BIG: return "TOO_BIG";
    case OB__SQS_FAULT_TOO_MANY: return "TOO_MANY";
    case OB__SQS_FAULT_BAD_JSON: return "BAD_JSON";
    case OB__SQS_FAULT_TOO_DEEP: return "TOO_DEEP";
    case OB__SQS_FAULT_WRONG_TYPE: return "WRONG_TYPE";
    case OB__SQS_FAULT_MISSING: return "MISSING";
    case OB__SQS_FAULT_BAD_VALUE: return "BAD_VALUE";
    case OB__SQS_FAULT_MD5: return "MD5";
  }
  return "UNKNOWN";
}

int ob__sqs_utf8_ok(const char* str, size_t n, int sqs_text) {
  const unsigned char* s = (const unsigned char*)str;
  size_t i = 0;
  while (i < n) {
    uint32_t cp;
    unsigned char c = s[i];
    size_t k;
    if (c < 0x80) {
      cp = c;
      k = 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
      cp = c & 0x1F;
      k = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      cp = c & 0x0F;
      k = 3;
    } else if (c >= 0xF0 && c <= 0xF4) {
      cp = c & 0x07;
      k = 4;
    } else {
      return 0;  /* continuation byte, overlong lead C0/C1, F5.. */
    }
    if (n - i < k) return 0;
    for (size_t j = 1; j < k; j++) {
      if ((s[i + j] & 0xC0) != 0x80) return 0;
      cp = (cp << 6) | (s[i + j] & 0x3F);
    }
    /* Overlongs, surrogates, beyond U+10FFFF. */
    if ((k == 3 && cp < 0x800) || (k == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
      return 0;
    if (sqs_text &&
        !(cp == 0x9 || cp == 0xA || cp == 0xD || (cp >= 0x20 && cp <= 0xD7FF) ||
          (cp >= 0xE000 && cp <= 0xFFFD) || cp >= 0x10000))
      return 0;
    if (!sqs_text && cp == 0) return 0;  /* would end a C string early */
    i += k;
  }
  return 1;
}

/* ---------------------------------------------------------------------------
** Writer.
*/
static void jw_reserve(ob__jw_t* w, size_t extra) {
  size_t need, cap;
  char* np;
  if (w->err) return;
  if (extra > SIZE_MAX - w->len - 1) {
    w->err = OB_ENOMEM;
    return;
  }
  need = w->len + extra + 1;
  if (need <= w->cap) return;
  cap = w->cap ? w->cap : 512;
  while (cap < need) cap = cap > SIZE_MAX / 2 ? need : cap * 2;
  np = realloc(w->p, cap);
  if (np == NULL) {
    w->err = OB_ENOMEM;
    return;
  }
  w->p = np;
  w->cap = cap;
}

static void jw_put(ob__jw_t* w, const char* s, size_t n) {
  jw_reserve(w, n);
  if (w->err) return;
  memcpy(w->p + w->len, s, n);
  w->len += n;
  w->p[w->len] = '\0';
}

static void jw_comma(ob__jw_t* w) {
  if (w->need_comma) jw_put(w, ",", 1);
  w->need_comma = 0;
}

void ob__jw_begin_object(ob__jw_t* w) {
  jw_comma(w);
  jw_put(w, "{", 1);
}

void ob__jw_end_object(ob__jw_t* w) {
  jw_put(w, "}", 1);
  w->need_comma = 1;
}

void ob__jw_begin_array(ob__jw_t* w) {
  jw_comma(w);
  jw_put(w, "[", 1);
}

void ob__jw_end_array(ob__jw_t* w) {
  jw_put(w, "]", 1);
  w->need_comma = 1;
}

/* Escape only what JSON requires ('"', '\\', C0 controls); everything else,
** UTF-8 included, goes through as is: shortest text, and what SQS hashes is
** the unescaped string anyway. */
static void jw_quoted(ob__jw_t* w, const char* s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  size_t run = 0;
  if (!ob__sqs_utf8_ok(s, n, 0)) {
    if (!w->err) w->err = OB_EINVAL;
    return;
  }
  jw_reserve(w, n + 2);
  jw_put(w, "\"", 1);
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    const char* esc = NULL;
    char u[6];
    size_t elen = 2;
    if (c == '"') esc = "\\\"";
    else if (c == '\\') esc = "\\\\";
    else if (c == '\n') esc = "\\n";
    else if (c == '\r') esc = "\\r";
    else if (c == '\t') esc = "\\t";
    else if (c == '\b') esc = "\\b";
    else if (c == '\f') esc = "\\f";
    else if (c < 0x20) {
      u[0] = '\\'; u[1] = 'u'; u[2] = '0'; u[3] = '0';
      u[4] = hex[c >> 4]; u[5] = hex[c & 15];
      esc = u;
      elen = 6;
    }
    if (esc == NULL) {
      run++;
      continue;
    }
    jw_put(w, s + i - run, run);
    run = 0;
    jw_put(w, esc, elen);
  }
  jw_put(w, s + n - run, run);
  jw_put(w, "\"", 1);
}

void ob__jw_key(ob__jw_t* w, const char* key) {
  jw_comma(w);
  jw_quoted(w, key, strlen(key));
  jw_put(w, ":", 1);
  w->need_comma = 0;
}

void ob__jw_string(ob__jw_t* w, const char* s, size_t n) {
  jw_comma(w);
  jw_quoted(w, s, n);
  w->need_comma = 1;
}

void ob__jw_cstring(ob__jw_t* w, const char* s) {
  ob__jw_string(w, s, strlen(s));
}

void ob__jw_int(ob__jw_t* w, int64_t v) {
  char b[24];
  int n = snprintf(b, sizeof b, "%lld", (long long)v);
  jw_comma(w);
  jw_put(w, b, (size_t)n);
  w->need_comma = 1;
}

void ob__jw_base64(ob__jw_t* w, const void* bytes, size_t n) {
  size_t need, olen = 0;
  int rc;
  jw_comma(w);
  if (n > (SIZE_MAX - 8) / 4 * 3) {
    if (!w->err) w->err = OB_ENOMEM;
    return;
  }
  need = (n + 2) / 3 * 4 + 1;  /* mbedTLS writes a NUL too */
  jw_put(w, "\"", 1);
  jw_reserve(w, need + 1);
  if (w->err) return;
  rc = mbedtls_base64_encode((unsigned char*)w->p + w->len, w->cap - w->len,
                             &olen, bytes, n);
  if (rc != 0) {
    w->err = OB_EIO;
    return;
  }
  w->len += olen;
  jw_put(w, "\"", 1);
  w->need_comma = 1;
}

int ob__jw_finish(ob__jw_t* w, char** out, size_t* out_len) {
  *out = NULL;
  if (out_len) *out_len = 0;
  if (w->err || w->p == NULL) {
    int rc = w->err ? w->err : OB_ENOMEM;
    free(w->p);
    memset(w, 0, sizeof *w);
    return rc;
  }
  *out = w->p;
  if (out_len) *out_len = w->len;
  memset(w, 0, sizeof *w);
  return 0;
}

/* ---------------------------------------------------------------------------
** Reading.
*/

/* Maximum nesting of [ and { outside strings; stops early past `limit`. */
static int json_depth_over(const char* s, size_t n, int limit) {
  int depth = 0, in_str = 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (in_str) {
      if (c == '\\') i++;
      else if (c == '"') in_str = 0;
      continue;
    }
    if (c == '"') in_str = 1;
    else if (c == '{' || c == '[') {
      if (++depth > limit) return 1;
    } else if (c == '}' || c == ']') {
      depth--;
    }
  }
  return 0;
}

int ob__sqs_json_object(const char* body, size_t len, cJSON** root_out,
                        ob__sqs_diag_t* diag) {
  const char* end = NULL;
  cJSON* root;
  *root_out = NULL;
  if (body == NULL && len) return ob__sqs_fail(diag, OB_EINVAL, OB__SQS_FAULT_ARG, "body");
  if (len > OB__SQS_MAX_RESPONSE_BYTES)
    return ob__sqs_fail(diag, OB_ETOOBIG, OB__SQS_FAULT_TOO_BIG, "response");
  if (len == 0)
    return ob__sqs_fail(diag, OB_EINVAL, OB__SQS_FAULT_BAD_JSON, "response");
  if (json_depth_over(body, len, OB__SQS_MAX_JSON_DEPTH))
    return ob__sqs_fail(diag, OB_ETOOBIG, OB__SQS_FAULT_TOO_DEEP, "response");
  root = cJSON_ParseWithLengthOpts(body, len, &end, 0);
  if (root == NULL) {
    /* cJSON reports allocation failure and syntax errors alike. */
    return ob__sqs_fail(diag, OB_EINVAL, OB__SQS_FAULT_BAD_JSON, "response");
  }
  while (end < body + len &&
         (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n'))
    end++;
  if (end != body + len) {
    cJSON_Delete(root);
    return ob__sqs_fail(diag, OB_EINVAL, OB__SQS_FAULT_BAD_JSON,
                        "trailing data");
  }
  if (!cJSON_IsObject(root)) {
    cJSON_Delete(root);
    return ob__sqs_fail(diag, OB_EINVAL, OB__SQS_FAULT_BAD_JSON,
                        "not an object");
  }
  *root_out = root;
  return 0;
}

ob__sqs_pool_t* ob__sqs_pool_new(void) {
  return calloc(1, sizeof(ob__sqs_pool_t));
}

void* ob__sqs_pool_alloc(ob__sqs_pool_t* p, size_t n, size_t size) {
  void* b;
  if (p->nblocks == p->cap) {
    size_t cap = p->cap ? p->cap * 2 : 8;
    void** nb = realloc(p->blocks, cap * sizeof *nb);
    if (nb == NULL) return NULL;
    p->blocks = nb;
    p->cap = cap;
  }
  b = calloc(n ? n : 1, size ? size : 1);
  if (b == NULL) return NULL;
  p->blocks[p->nblocks++] = b;
  return b;
}

void ob__sqs_pool_free(ob__sqs_pool_t* p) {
  if (p == NULL) return;
  for (size_t i = 0; i < p->nblocks; i++) free(p->blocks[i]);
  free(p->blocks);
  cJSON_Delete(p->root);
  free(p);
}

int ob__sqs_md5_equal(const char* theirs, const char* ours) {
  size_t i;
  if (theirs == NULL) return 0;
  for (i = 0; i < 32; i++) {
    char a = theirs[i], b = ours[i];
    if (a >= 'A' && a <= 'F') a = (char)(a - 'A' + 'a');
    if (a != b) return 0;
  }
  return theirs[32] == '\0';
}
