/* SPDX-License-Identifier: Apache-2.0 */
/* Cleaning what peers send back (peer_text.h). */
#include "core/util/peer_text.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/util/secret.h"

#define MAX_HELD 64
#define MIN_HELD 6

static const char REDACTED[] = "[redacted]";

static struct {
  char* value;
  size_t len;
  int refs;
} held[MAX_HELD];
static pthread_mutex_t held_lock = PTHREAD_MUTEX_INITIALIZER;

/* The token of "Bearer x" / "Basic x", else v itself. */
static const char* token_of(const char* v) {
  if (strncasecmp(v, "Bearer ", 7) == 0) return v + 7;
  if (strncasecmp(v, "Basic ", 6) == 0) return v + 6;
  return v;
}

static int hold_one(const char* v) {
  size_t n = strlen(v);
  int free_slot = -1;
  if (n < MIN_HELD) return 0;
  for (int i = 0; i < MAX_HELD; i++) {
    if (held[i].value != NULL && held[i].len == n &&
        memcmp(held[i].value, v, n) == 0) {
      held[i].refs++;
      return 0;
    }
    if (held[i].value == NULL && free_slot < 0) free_slot = i;
  }
  if (free_slot < 0) return -1;
  held[free_slot].value = malloc(n + 1);
  if (held[free_slot].value == NULL) return -1;
  memcpy(held[free_slot].value, v, n + 1);
  held[free_slot].len = n;
  held[free_slot].refs = 1;
  return 0;
}

static void forget_one(const char* v) {
  size_t n = strlen(v);
  for (int i = 0; i < MAX_HELD; i++) {
    if (held[i].value == NULL || held[i].len != n ||
        memcmp(held[i].value, v, n) != 0)
      continue;
    if (--held[i].refs == 0) {
      ob__free_secret(held[i].value);
      held[i].value = NULL;
      held[i].len = 0;
    }
    return;
  }
}

int ob__secret_hold(const char* value) {
  int rc;
  if (value == NULL) return 0;
  pthread_mutex_lock(&held_lock);
  rc = hold_one(value);
  if (rc == 0 && token_of(value) != value) rc = hold_one(token_of(value));
  pthread_mutex_unlock(&held_lock);
  return rc;
}

void ob__secret_forget(const char* value) {
  if (value == NULL) return;
  pthread_mutex_lock(&held_lock);
  forget_one(value);
  if (token_of(value) != value) forget_one(token_of(value));
  pthread_mutex_unlock(&held_lock);
}

/* Fields whose value is a credential whatever it is: the request headers a
** gateway may echo, and the AWS configuration's names. Matched without
** case, followed by ':' or '=' (optionally quoted, as in JSON). */
static const char* const secret_fields[] = {
    "authorization",         "proxy-authorization", "x-amz-security-token",
    "x-amz-signature",       "signature",           "aws_secret_access_key",
    "aws_session_token",     "x-api-key",           "api-key",
    "api_key",               "password",            "cookie",
};

typedef struct out_s {
  char* p;
  size_t n, cap;
  int oom;
} out_t;

static void put(out_t* o, const char* s, size_t n) {
  if (o->oom) return;
  if (o->n + n + 1 > o->cap) {
    size_t cap = (o->n + n + 1) * 2;
    char* p = realloc(o->p, cap);
    if (p == NULL) {
      o->oom = 1;
      return;
    }
    o->p = p;
    o->cap = cap;
  }
  memcpy(o->p + o->n, s, n);
  o->n += n;
  o->p[o->n] = '\0';
}

static int token_char(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
         (c >= '0' && c <= '9') || strchr("-._~+/=%", c) != NULL;
}

/* At in[i]: a secret field's name and separator? Returns the bytes up to
** its value (0: no), and *quoted when the value is a quoted string. */
static size_t field_prefix(const char* in, size_t n, size_t i, int* quoted) {
  for (size_t k = 0; k < sizeof secret_fields / sizeof secret_fields[0];
       k++) {
    size_t len = strlen(secret_fields[k]), j;
    if (n - i < len || strncasecmp(in + i, secret_fields[k], len) != 0)
      continue;
    /* A whole name: not the tail of a longer one. */
    if (i > 0 && (token_char((unsigned char)in[i - 1]) && in[i - 1] != '/'))
      continue;
    j = i + len;
    if (j < n && in[j] == '"') j++;
    while (j < n && in[j] == ' ') j++;
    if (j >= n || (in[j] != ':' && in[j] != '=')) continue;
    j++;
    while (j < n && in[j] == ' ') j++;
    *quoted = j < n && in[j] == '"';
    if (*quoted) j++;
    return j - i;
  }
  return 0;
}

static int redact_into(const char* in, size_t n, out_t* o) {
  size_t i = 0;
  pthread_mutex_lock(&held_lock);
  while (i < n) {
    size_t pre;
    int quoted = 0, hit = 0;
    for (int k = 0; k < MAX_HELD && !hit; k++) {
      if (held[k].value == NULL || n - i < held[k].len ||
          memcmp(in + i, held[k].value, held[k].len) != 0)
        continue;
      put(o, REDACTED, sizeof REDACTED - 1);
      i += held[k].len;
      hit = 1;
    }
    if (hit) continue;
    if ((pre = field_prefix(in, n, i, &quoted)) > 0) {
      size_t j = i + pre;
      put(o, in + i, pre);
      if (quoted) {
        while (j < n && in[j] != '"') j += (in[j] == '\\' && j + 1 < n) ? 2 : 1;
      } else {
        while (j < n && strchr("\r\n&,;\"}", in[j]) == NULL) j++;
      }
      if (j > i + pre) put(o, REDACTED, sizeof REDACTED - 1);
      i = j;
      continue;
    }
    if ((n - i > 7 && strncasecmp(in + i, "Bearer ", 7) == 0) ||
        (n - i > 6 && strncasecmp(in + i, "Basic ", 6) == 0)) {
      size_t j = i + (in[i + 1] == 'e' || in[i + 1] == 'E' ? 7 : 6);
      size_t t = j;
      while (t < n && token_char((unsigned char)in[t])) t++;
      if (t - j >= 4) {
        put(o, in + i, j - i);
        put(o, REDACTED, sizeof REDACTED - 1);
        i = t;
        continue;
      }
    }
    put(o, in + i, 1);
    i++;
  }
  pthread_mutex_unlock(&held_lock);
  return o->oom ? -1 : 0;
}

char* ob__peer_redact(const char* in, size_t n, size_t* out_len) {
  out_t o = {NULL, 0, 0, 0};
  put(&o, "", 0);
  if (in != NULL && redact_into(in, n, &o) != 0) {
    free(o.p);
    return NULL;
  }
  if (o.oom) {
    free(o.p);
    return NULL;
  }
  if (out_len) *out_len = o.n;
  return o.p;
}

/* Length of a valid UTF-8 sequence at s (not a C1 control), else 0. */
static size_t utf8_ok(const unsigned char* s, size_t n) {
  unsigned c = s[0], cp;
  size_t len;
  if (c < 0xc2) return 0;
  if (c < 0xe0) len = 2, cp = c & 0x1f;
  else if (c < 0xf0) len = 3, cp = c & 0x0f;
  else if (c < 0xf5) len = 4, cp = c & 0x07;
  else return 0;
  if (n < len) return 0;
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (s[i] & 0x3f);
  }
  if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
      (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
    return 0;
  if (cp >= 0x80 && cp <= 0x9f) return 0;  /* C1 controls: ESC's twins */
  return len;
}

char* ob__peer_text(const char* in, size_t n, char* out, size_t outlen) {
  size_t rn = 0, o = 0;
  char* r;
  if (outlen == 0) return out;
  out[0] = '\0';
  if (in == NULL) return out;
  r = ob__peer_redact(in, n, &rn);
  if (r == NULL) {
    /* Out of memory: say nothing rather than something unredacted. */
    snprintf(out, outlen, "(peer text dropped: out of memory)");
    return out;
  }
  for (size_t i = 0; i < rn;) {
    const unsigned char* s = (const unsigned char*)r + i;
    size_t len = 1;
    if (*s >= 0x20 && *s < 0x7f) {
      if (o + 1 >= outlen) break;
      out[o++] = (char)*s;
    } else if (*s >= 0x80 && (len = utf8_ok(s, rn - i)) > 0) {
      if (o + len >= outlen) break;
      memcpy(out + o, s, len);
      o += len;
    } else {
      len = 1;
      if (o + 4 >= outlen) break;
      snprintf(out + o, 5, "\\x%02x", *s);
      o += 4;
    }
    i += len;
  }
  out[o] = '\0';
  ob__free_secret(r);
  return out;
}
