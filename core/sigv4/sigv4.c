/* SPDX-License-Identifier: Apache-2.0 */
/*
** AWS Signature Version 4, built as the four "tasks" of the AWS
** documentation, each a static function with its banner:
**   Task 1  canonical request      task1_canonical_request()
**   Task 2  string to sign         task2_string_to_sign()
**   Task 3  signing key, signature task3_signing_key(), task3_signature()
**   Task 4  add the signature      task4_authorization(), task4_presigned_query()
** https://docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html
**
** Where AWS's text leaves room (path normalisation, header whitespace,
** unsignable headers, query decoding) we do what @smithy/signature-v4 does,
** because that is what the service accepts from the JavaScript SDK and what
** tests/interop checks byte for byte.
*/
#include "core/sigv4/sigv4.h"

#include <stdlib.h>
#include <string.h>

#include <mbedtls/md.h>
#include <mbedtls/platform_util.h>

#include "core/util/secret.h"
#include "core/util/utc_time.h"
#include "oncebox.h"

#define ALGORITHM "AWS4-HMAC-SHA256"
#define EMPTY_SHA256 \
  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define MAX_PRESIGN_TTL 604800 /* one week, the service maximum */

/* ---------------------------------------------------------------------------
** A growable string with a sticky error: appends after a failed allocation
** are no-ops, so a builder checks sb.err once at the end instead of after
** every append.
*/
typedef struct sbuf_s {
  char* p;
  size_t len;
  size_t cap;
  int err;
} sbuf;

static void sb_reserve(sbuf* b, size_t extra) {
  size_t need, cap;
  char* np;
  if (b->err) return;
  if (extra > SIZE_MAX - b->len - 1) {
    b->err = OB_ENOMEM;
    return;
  }
  need = b->len + extra + 1;
  if (need <= b->cap) return;
  cap = b->cap ? b->cap : 256;
  while (cap < need) cap = cap > SIZE_MAX / 2 ? need : cap * 2;
  /* Not realloc: it would leave the old copy (a canonical request holds the
  ** session token) in freed memory, and so in a core file. */
  np = malloc(cap);
  if (np == NULL) {
    b->err = OB_ENOMEM;
    return;
  }
  if (b->p != NULL) {
    memcpy(np, b->p, b->len + 1);
    mbedtls_platform_zeroize(b->p, b->cap);
    free(b->p);
  }
  b->p = np;
  b->cap = cap;
}

static void sb_putn(sbuf* b, const void* s, size_t n) {
  sb_reserve(b, n);
  if (b->err) return;
  if (n) memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
}

static void sb_puts(sbuf* b, const char* s) {
  sb_putn(b, s, strlen(s));
}

static void sb_putc(sbuf* b, char c) {
  sb_putn(b, &c, 1);
}

/* Hand the string over to the caller (never NULL unless b->err). */
static char* sb_take(sbuf* b) {
  char* p;
  if (b->err) return NULL;
  if (b->p == NULL) {
    sb_reserve(b, 0);
    if (b->err) return NULL;
    b->p[0] = '\0';
  }
  p = b->p;
  b->p = NULL;
  b->len = b->cap = 0;
  return p;
}

static void sb_free(sbuf* b) {
  if (b->p != NULL) mbedtls_platform_zeroize(b->p, b->cap);
  free(b->p);
  b->p = NULL;
  b->len = b->cap = 0;
}

/* ---------------------------------------------------------------------------
** Hashing through mbedTLS's generic md layer; every return code checked.
*/
static int md_err(int rc) {
  if (rc == 0) return 0;
  if (rc == MBEDTLS_ERR_MD_ALLOC_FAILED) return OB_ENOMEM;
  if (rc == MBEDTLS_ERR_MD_BAD_INPUT_DATA) return OB_EINVAL;
  return OB_EIO;
}

static int sha256(const void* data, size_t len, uint8_t out[32]) {
  const mbedtls_md_info_t* md = mbedtls_md_info_from_type(MBEDTLS_MD_SHA256);
  /* mbedTLS wants a non-NULL pointer even for zero bytes. */
  if (md == NULL) return OB_EIO;
  return md_err(mbedtls_md(md, len ? data : (const void*)"", len, out));
}

/* mbedtls_md_hmac frees (and so zeroizes) its context, which holds the
** key-derived ipad/opad, before returning. */
static int hmac256(const uint8_t* key, size_t key_len, const void* msg,
                   size_t msg_len, uint8_t out[32]) {
  const mbedtls_md_info_t* md = mbedtls_md_info_from_type(MBEDTLS_MD_SHA256);
  if (md == NULL) return OB_EIO;
  return md_err(mbedtls_md_hmac(md, key, key_len,
                                msg_len ? msg : (const void*)"", msg_len, out));
}

static void hex_lower(const uint8_t* in, size_t n, char* out) {
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++) {
    out[2 * i] = digits[in[i] >> 4];
    out[2 * i + 1] = digits[in[i] & 15];
  }
  out[2 * n] = '\0';
}

static int sha256_hex(const void* data, size_t len,
                      char out[OB__SIGV4_HEX_BUFLEN]) {
  uint8_t d[32];
  int rc = sha256(data, len, d);
  if (rc == 0) hex_lower(d, 32, out);
  return rc;
}

/* ---------------------------------------------------------------------------
** Character classes and encodings.
*/
static int is_alnum(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9');
}

/* RFC 3986 unreserved: never percent-encoded by SigV4. */
static int is_unreserved(unsigned char c) {
  return is_alnum(c) || c == '-' || c == '.' || c == '_' || c == '~';
}

/* RFC 7230 tchar: what a header name may contain. */
static int is_tchar(unsigned char c) {
  return is_alnum(c) || (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static char lower(char c) {
  return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

static int eq_nocase(const char* a, const char* b) {
  while (*a && *b && lower(*a) == lower(*b)) a++, b++;
  return *a == '\0' && *b == '\0';
}

/* Percent-encode every byte but the unreserved ones (and '/' if
** keep_slash); upper-case hex as SigV4 requires. */
static void sb_put_uri(sbuf* b, const char* s, size_t n, int keep_slash) {
  static const char digits[] = "0123456789ABCDEF";
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (is_unreserved(c) || (keep_slash && c == '/')) {
      sb_putc(b, (char)c);
    } else {
      char e[3] = {'%', digits[c >> 4], digits[c & 15]};
      sb_putn(b, e, 3);
    }
  }
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Percent-decode s[0..n) into b. An escape that is not two hex digits stays
** a literal '%' (it will be re-encoded as %25). '+' is not a space: AWS
** query strings encode spaces as %20. */
static void sb_put_decoded(sbuf* b, const char* s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '%' && i + 2 < n && hexval(s[i + 1]) >= 0 &&
        hexval(s[i + 2]) >= 0) {
      sb_putc(b, (char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2])));
      i += 2;
    } else {
      sb_putc(b, s[i]);
    }
  }
}

/* ---------------------------------------------------------------------------
** Dates: core/util/utc_time.c, pure arithmetic on int64 (no TZ, locale,
** gmtime's static buffer or 32-bit time_t).
*/
int ob__sigv4_amz_date(int64_t t, char out[17]) {
  ob__utc_t u;
  int64_t v[6];
  static const int width[6] = {4, 2, 2, 2, 2, 2};
  char* o = out;
  if (t < 0 || ob__utc_from_unix(t, &u) != 0) return OB_EINVAL;
  v[0] = u.year;
  v[1] = u.month;
  v[2] = u.day;
  v[3] = u.hour;
  v[4] = u.minute;
  v[5] = u.second;
  for (int i = 0; i < 6; i++) {
    for (int k = width[i] - 1; k >= 0; k--) {
      o[k] = (char)('0' + v[i] % 10);
      v[i] /= 10;
    }
    o += width[i];
    if (i == 2) *o++ = 'T';
  }
  *o++ = 'Z';
  *o = '\0';
  return 0;
}

/* ---------------------------------------------------------------------------
** Input validation.
*/
static int valid_scope_part(const char* s) {
  if (s == NULL || *s == '\0') return 0;
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (!is_alnum(c) && c != '-' && c != '_' && c != '.') return 0;
  }
  return 1;
}

static int valid_key_id(const char* s) {
  if (s == NULL || *s == '\0') return 0;
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c <= 0x20 || c >= 0x7f || c == '/' || c == ',') return 0;
  }
  return 1;
}

/* Printable ASCII (session tokens are base64). */
static int valid_token(const char* s) {
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c < 0x20 || c >= 0x7f) return 0;
  }
  return 1;
}

static int valid_method(const char* s) {
  if (s == NULL || *s == '\0') return 0;
  for (; *s; s++)
    if (!is_tchar((unsigned char)*s)) return 0;
  return 1;
}

/* Path and query may hold anything the canonical form can encode, but no
** control character: those would end or split the request line. */
static int no_ctl(const char* s) {
  for (; s && *s; s++)
    if ((unsigned char)*s < 0x20 || *s == 0x7f) return 0;
  return 1;
}

static int valid_header_name(const char* s) {
  if (s == NULL || *s == '\0') return 0;
  for (; *s; s++)
    if (!is_tchar((unsigned char)*s)) return 0;
  return 1;
}

/* Field value bytes: VCHAR, obs-text, SP, HT; CR/LF only as an obsolete
** line fold (followed by SP or HT). A bare CR/LF would let a value smuggle
** another header past the HTTP layer, so it is refused here too. */
static int valid_header_value(const char* s) {
  if (s == NULL) return 0;
  for (size_t i = 0; s[i]; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '\r' && s[i + 1] == '\n') c = (unsigned char)s[++i];
    if (c == '\r' || c == '\n') {
      if (s[i + 1] != ' ' && s[i + 1] != '\t') return 0;
    } else if ((c < 0x20 && c != '\t') || c == 0x7f) {
      return 0;
    }
  }
  return 1;
}

/* Never signed: hop-by-hop or rewritten by proxies. The @smithy list
** (ALWAYS_UNSIGNABLE_HEADERS plus proxy-* and sec-*); aws-c-auth skips a
** similar set. Signing one of them makes a request fail behind a proxy. */
static int unsignable(const char* lname) {
  static const char* const names[] = {
      "authorization", "cache-control", "connection", "expect",
      "from", "keep-alive", "max-forwards", "pragma", "referer", "te",
      "trailer", "transfer-encoding", "upgrade", "user-agent",
      "x-amzn-trace-id"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(lname, names[i]) == 0) return 1;
  return strncmp(lname, "proxy-", 6) == 0 || strncmp(lname, "sec-", 4) == 0;
}

/* ---------------------------------------------------------------------------
** Canonical pieces.
*/

/* A header or query entry: name and canonical value, both malloc'd;
** `order` keeps duplicates in their original order through qsort. */
typedef struct kv_s {
  char* k;
  char* v;
  size_t order;
} kv_t;

typedef struct kvlist_s {
  kv_t* a;
  size_t n;
  size_t cap;
} kvlist_t;

static void kv_free(kvlist_t* l) {
  for (size_t i = 0; i < l->n; i++) {
    ob__free_secret(l->a[i].k);
    ob__free_secret(l->a[i].v); /* x-amz-security-token's value is the token */
  }
  free(l->a);
  l->a = NULL;
  l->n = l->cap = 0;
}

/* Takes ownership of k and v (frees them on failure). */
static int kv_add(kvlist_t* l, char* k, char* v) {
  if (k == NULL || v == NULL) goto fail;
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 16;
    kv_t* na;
    if (cap > SIZE_MAX / sizeof *na) goto fail;
    na = realloc(l->a, cap * sizeof *na);
    if (na == NULL) goto fail;
    l->a = na;
    l->cap = cap;
  }
  l->a[l->n].k = k;
  l->a[l->n].v = v;
  l->a[l->n].order = l->n;
  l->n++;
  return 0;
fail:
  ob__free_secret(k);
  ob__free_secret(v);
  return OB_ENOMEM;
}

static char* dup_n(const char* s, size_t n) {
  char* p = malloc(n + 1);
  if (p == NULL) return NULL;
  memcpy(p, s, n);
  p[n] = '\0';
  return p;
}

static char* dup_lower(const char* s) {
  size_t n = strlen(s);
  char* p = dup_n(s, n);
  if (p != NULL)
    for (size_t i = 0; i < n; i++) p[i] = lower(p[i]);
  return p;
}

/* Header value: trim, and turn each run of SP/HT/CR/LF (folded lines
** included) into one space. Same result as @smithy's
** replace(/[\r\n]/g," ").replace(/[ \t]+/g," ").replace(/^ | $/g,""). */
static char* canonical_header_value(const char* s) {
  size_t n = strlen(s), o = 0;
  int pending_space = 0;
  char* p = malloc(n + 1);
  if (p == NULL) return NULL;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      pending_space = o > 0;
      continue;
    }
    if (pending_space) p[o++] = ' ';
    pending_space = 0;
    p[o++] = c;
  }
  p[o] = '\0';
  return p;
}

static int kv_cmp(const void* a, const void* b) {
  const kv_t* x = a;
  const kv_t* y = b;
  int c = strcmp(x->k, y->k);
  if (c == 0) c = (x->order > y->order) - (x->order < y->order);
  return c;
}

/* Query pairs sort by encoded key, then by encoded value (the order of
** repeated keys does not matter to AWS, only bytes do). */
static int kv_cmp_query(const void* a, const void* b) {
  const kv_t* x = a;
  const kv_t* y = b;
  int c = strcmp(x->k, y->k);
  if (c == 0) c = strcmp(x->v, y->v);
  return c;
}

/* Canonical URI: optional normalisation, then one URI encoding with '/'
** kept. Normalisation follows @smithy getCanonicalPath: split on '/', drop
** empty and "." segments, ".." pops, keep the leading slash and a trailing
** slash if the path had one and something is left. */
static void canonical_uri(sbuf* b, const char* path, int normalize) {
  size_t n = strlen(path);
  if (!normalize) {
    sb_put_uri(b, path, n, 1);
    return;
  }
  {
    /* Segment boundaries, as (start, len) pairs; at most n/2+1 of them. */
    size_t* seg = malloc((n / 2 + 2) * 2 * sizeof *seg);
    size_t nseg = 0, i = 0;
    if (seg == NULL) {
      b->err = OB_ENOMEM;
      return;
    }
    while (i <= n) {
      size_t j = i;
      while (j < n && path[j] != '/') j++;
      if (j - i == 0 || (j - i == 1 && path[i] == '.')) {
        /* skip */
      } else if (j - i == 2 && path[i] == '.' && path[i + 1] == '.') {
        if (nseg) nseg--;
      } else {
        seg[2 * nseg] = i;
        seg[2 * nseg + 1] = j - i;
        nseg++;
      }
      i = j + 1;
    }
    sb_putc(b, '/');  /* paths always start with '/' (checked) */
    for (i = 0; i < nseg; i++) {
      if (i) sb_putc(b, '/');
      sb_put_uri(b, path + seg[2 * i], seg[2 * i + 1], 0);
    }
    if (nseg && path[n - 1] == '/') sb_putc(b, '/');
    free(seg);
  }
}

/* Encode s[0..n) after percent-decoding it; a malloc'd string or NULL. */
static char* reencode(const char* s, size_t n) {
  sbuf dec = {0}, enc = {0};
  char* r;
  sb_put_decoded(&dec, s, n);
  if (dec.err) {
    sb_free(&dec);
    return NULL;
  }
  sb_put_uri(&enc, dec.p ? dec.p : "", dec.len, 0);
  sb_free(&dec);
  r = sb_take(&enc);
  sb_free(&enc);
  return r;
}

static char* encode(const char* s) {
  sbuf enc = {0};
  char* r;
  sb_put_uri(&enc, s, strlen(s), 0);
  r = sb_take(&enc);
  sb_free(&enc);
  return r;
}

static int is_presign_param(const char* k, size_t n) {
  static const char* const names[] = {
      "x-amz-algorithm", "x-amz-credential", "x-amz-date", "x-amz-expires",
      "x-amz-signedheaders", "x-amz-security-token", "x-amz-signature"};
  char buf[32];
  if (n >= sizeof buf) return 0;
  for (size_t i = 0; i < n; i++) buf[i] = lower(k[i]);
  buf[n] = '\0';
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(buf, names[i]) == 0) return 1;
  return 0;
}

/* Split the raw query into canonical (key, value) pairs. X-Amz-Signature is
** never part of what is signed; in presign mode the other X-Amz-* presign
** parameters are the signer's and are refused. */
static int parse_query(kvlist_t* l, const char* q, int presign) {
  size_t i = 0, n = q ? strlen(q) : 0;
  while (i < n) {
    size_t j = i, eq;
    char *k, *v;
    while (j < n && q[j] != '&') j++;
    eq = i;
    while (eq < j && q[eq] != '=') eq++;
    if (j > i) {
      char* dk = NULL;
      {
        sbuf d = {0};
        sb_put_decoded(&d, q + i, eq - i);
        if (d.err) return OB_ENOMEM;
        dk = sb_take(&d);
        sb_free(&d);
        if (dk == NULL) return OB_ENOMEM;
      }
      if (eq_nocase(dk, "x-amz-signature")) {
        free(dk);
        i = j + 1;
        continue;
      }
      if (presign && is_presign_param(dk, strlen(dk))) {
        free(dk);
        return OB_EINVAL;
      }
      free(dk);
      k = reencode(q + i, eq - i);
      v = eq < j ? reencode(q + eq + 1, j - eq - 1) : dup_n("", 0);
      if (kv_add(l, k, v) != 0) return OB_ENOMEM;
    }
    i = j + 1;
  }
  return 0;
}

/* ---------------------------------------------------------------------------
** The signing state shared by the tasks of one call.
*/
typedef struct signer_s {
  const ob__sigv4_request_t* req;
  const ob__aws_creds_t* creds;
  const ob__sigv4_params_t* p;
  ob__sigv4_out_t* out;
  int presign;
  int has_token;
  int sign_token;         /* the token is part of what is signed */
  int add_sha256_header;  /* header variant with sign_body, none given */
  sbuf scope;             /* 20150830/us-east-1/service/aws4_request */
  kvlist_t headers;       /* canonical, sorted, combined */
  kvlist_t query;         /* canonical, sorted */
} signer_t;

/* Collect, canonicalise, sort and combine the headers; fill the payload
** hash from a caller's x-amz-content-sha256 if there is one. */
static int collect_headers(signer_t* s) {
  const ob__sigv4_request_t* r = s->req;
  kvlist_t raw = {0};
  int rc = 0, have_host = 0, have_sha = 0;
  for (size_t i = 0; i < r->nheaders; i++) {
    const ob__sigv4_header_t* h = &r->headers[i];
    char* lname;
    if (!valid_header_name(h->name) || !valid_header_value(h->value)) {
      rc = OB_EINVAL;
      goto fail;
    }
    lname = dup_lower(h->name);
    if (lname == NULL) {
      rc = OB_ENOMEM;
      goto fail;
    }
    if (strcmp(lname, "x-amz-date") == 0 ||
        strcmp(lname, "authorization") == 0 ||
        strcmp(lname, "x-amz-security-token") == 0) {
      free(lname);
      rc = OB_EINVAL;
      goto fail;
    }
    if (strcmp(lname, "host") == 0) have_host = 1;
    if (strcmp(lname, "x-amz-content-sha256") == 0) {
      /* Signed as given and used as the payload hash, like the SDKs do
      ** (this is how UNSIGNED-PAYLOAD is requested). */
      char* v = canonical_header_value(h->value);
      if (v == NULL) {
        free(lname);
        rc = OB_ENOMEM;
        goto fail;
      }
      if (have_sha || *v == '\0' || strlen(v) >= sizeof s->out->payload_hash) {
        free(v);
        free(lname);
        rc = OB_EINVAL;
        goto fail;
      }
      memcpy(s->out->payload_hash, v, strlen(v) + 1);
      free(v);
      have_sha = 1;
    }
    if (unsignable(lname)) {
      free(lname);
      continue;
    }
    if ((rc = kv_add(&raw, lname, canonical_header_value(h->value))) != 0)
      goto fail;
  }
  if (!have_host) {
    rc = OB_EINVAL;
    goto fail;
  }
  if (!have_sha) {
    rc = sha256_hex(r->body, r->body_len, s->out->payload_hash);
    if (rc != 0) goto fail;
    s->add_sha256_header = !s->presign && s->p->sign_body;
  }
  if (!s->presign) {
    rc = kv_add(&raw, dup_n("x-amz-date", 10), dup_n(s->out->amz_date, 16));
    if (rc == 0 && s->sign_token)
      rc = kv_add(&raw, dup_n("x-amz-security-token", 20),
                  dup_n(s->creds->session_token,
                        strlen(s->creds->session_token)));
    if (rc == 0 && s->add_sha256_header)
      rc = kv_add(&raw, dup_n("x-amz-content-sha256", 20),
                  dup_n(s->out->payload_hash, 64));
    if (rc != 0) goto fail;
  }
  if (raw.n) qsort(raw.a, raw.n, sizeof raw.a[0], kv_cmp);

  /* Combine repeated names in their original order with ','. */
  for (size_t i = 0; i < raw.n;) {
    size_t j = i + 1;
    sbuf v = {0};
    sb_puts(&v, raw.a[i].v);
    while (j < raw.n && strcmp(raw.a[j].k, raw.a[i].k) == 0) {
      sb_putc(&v, ',');
      sb_puts(&v, raw.a[j].v);
      j++;
    }
    rc = kv_add(&s->headers, dup_n(raw.a[i].k, strlen(raw.a[i].k)),
                sb_take(&v));
    sb_free(&v);
    if (rc != 0) goto fail;
    i = j;
  }
  kv_free(&raw);
  return 0;
fail:
  kv_free(&raw);
  return rc;
}

static char* signed_header_list(const signer_t* s) {
  sbuf b = {0};
  char* r;
  for (size_t i = 0; i < s->headers.n; i++) {
    if (i) sb_putc(&b, ';');
    sb_puts(&b, s->headers.a[i].k);
  }
  r = sb_take(&b);
  sb_free(&b);
  return r;
}

/* X-Amz-Expires as decimal (1..604800, checked by the caller). */
static void fmt_expires(int64_t e, char out[24]) {
  char tmp[24];
  size_t k = sizeof tmp - 1;
  tmp[k] = '\0';
  do {
    tmp[--k] = (char)('0' + e % 10);
    e /= 10;
  } while (e > 0 && k > 0);
  memcpy(out, tmp + k, sizeof tmp - k);
}

static int collect_query(signer_t* s) {
  int rc = parse_query(&s->query, s->req->query, s->presign);
  if (rc != 0) return rc;
  if (s->presign) {
    char expires[24];
    sbuf cred = {0};
    fmt_expires(s->p->expires_s, expires);
    sb_puts(&cred, s->creds->access_key_id);
    sb_putc(&cred, '/');
    sb_puts(&cred, s->scope.p);
    if (cred.err) return OB_ENOMEM;
    rc = kv_add(&s->query, encode("X-Amz-Algorithm"), encode(ALGORITHM));
    if (rc == 0)
      rc = kv_add(&s->query, encode("X-Amz-Credential"), encode(cred.p));
    sb_free(&cred);
    if (rc == 0)
      rc = kv_add(&s->query, encode("X-Amz-Date"), encode(s->out->amz_date));
    if (rc == 0)
      rc = kv_add(&s->query, encode("X-Amz-Expires"), encode(expires));
    if (rc == 0 && s->sign_token)
      rc = kv_add(&s->query, encode("X-Amz-Security-Token"),
                  encode(s->creds->session_token));
    if (rc == 0)
      rc = kv_add(&s->query, encode("X-Amz-SignedHeaders"),
                  encode(s->out->signed_headers));
    if (rc != 0) return rc;
  }
  if (s->query.n)
    qsort(s->query.a, s->query.n, sizeof s->query.a[0], kv_cmp_query);
  return 0;
}

/*
** Task 1: Create a canonical request
** ==================================
** https://docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html#create-canonical-request
**
**   CanonicalRequest =
**     HTTPMethod + '\n' +
**     CanonicalURI + '\n' +
**     CanonicalQueryString + '\n' +
**     CanonicalHeaders + '\n' +     (each "lowercase-name:trimmed-value\n")
**     SignedHeaders + '\n' +        ("name1;name2;...", sorted)
**     HexEncode(Hash(RequestPayload))
*/
static int task1_canonical_request(signer_t* s) {
  sbuf b = {0};
  const char* path = s->req->path && *s->req->path ? s->req->path : "/";
  sb_puts(&b, s->req->method);
  sb_putc(&b, '\n');
  canonical_uri(&b, path, s->p->normalize);
  sb_putc(&b, '\n');
  for (size_t i = 0; i < s->query.n; i++) {
    if (i) sb_putc(&b, '&');
    sb_puts(&b, s->query.a[i].k);
    sb_putc(&b, '=');
    sb_puts(&b, s->query.a[i].v);
  }
  sb_putc(&b, '\n');
  for (size_t i = 0; i < s->headers.n; i++) {
    sb_puts(&b, s->headers.a[i].k);
    sb_putc(&b, ':');
    sb_puts(&b, s->headers.a[i].v);
    sb_putc(&b, '\n');
  }
  sb_putc(&b, '\n');
  sb_puts(&b, s->out->signed_headers);
  sb_putc(&b, '\n');
  sb_puts(&b, s->out->payload_hash);
  if (b.err) {
    sb_free(&b);
    return b.err;
  }
  s->out->canonical_request = sb_take(&b);
  return 0;
}

/*
** Task 2: Create a string to sign
** ===============================
** https://docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html#create-string-to-sign
**
**   StringToSign =
**     "AWS4-HMAC-SHA256" + '\n' +
**     RequestDateTime + '\n' +          (YYYYMMDDTHHMMSSZ)
**     CredentialScope + '\n' +          (YYYYMMDD/region/service/aws4_request)
**     HexEncode(Hash(CanonicalRequest))
*/
static int task2_string_to_sign(signer_t* s) {
  sbuf b = {0};
  char h[OB__SIGV4_HEX_BUFLEN];
  int rc = sha256_hex(s->out->canonical_request,
                      strlen(s->out->canonical_request), h);
  if (rc != 0) return rc;
  sb_puts(&b, ALGORITHM "\n");
  sb_puts(&b, s->out->amz_date);
  sb_putc(&b, '\n');
  sb_puts(&b, s->scope.p);
  sb_putc(&b, '\n');
  sb_puts(&b, h);
  if (b.err) {
    sb_free(&b);
    return b.err;
  }
  s->out->string_to_sign = sb_take(&b);
  return 0;
}

/*
** Task 3a: Derive the signing key
** ===============================
** https://docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html#derive-signing-key
**
**   kDate    = HMAC("AWS4" + SecretAccessKey, Date)
**   kRegion  = HMAC(kDate, Region)
**   kService = HMAC(kRegion, Service)
**   kSigning = HMAC(kService, "aws4_request")
**
** "AWS4"+secret and every intermediate key are wiped before returning, on
** success and on failure; on failure `out` is wiped too.
*/
static int derive_signing_key(const ob__aws_creds_t* c, const char* date,
                              const char* region, const char* service,
                              uint8_t out[32]) {
  size_t slen = strlen(c->secret_access_key);
  uint8_t* k0 = NULL;
  uint8_t ka[32], kb[32];
  int rc;
  k0 = malloc(slen + 4);
  if (k0 == NULL) {
    rc = OB_ENOMEM;
    goto done;
  }
  memcpy(k0, "AWS4", 4);
  memcpy(k0 + 4, c->secret_access_key, slen);
  if ((rc = hmac256(k0, slen + 4, date, strlen(date), ka)) != 0) goto done;
  if ((rc = hmac256(ka, 32, region, strlen(region), kb)) != 0) goto done;
  if ((rc = hmac256(kb, 32, service, strlen(service), ka)) != 0) goto done;
  rc = hmac256(ka, 32, "aws4_request", 12, out);
done:
  if (k0 != NULL) {
    mbedtls_platform_zeroize(k0, slen + 4);
    free(k0);
  }
  mbedtls_platform_zeroize(ka, sizeof ka);
  mbedtls_platform_zeroize(kb, sizeof kb);
  if (rc != 0) mbedtls_platform_zeroize(out, 32);
  return rc;
}

/* Task 3a through the cache. The cache id is a keyed one-way function of
** everything kSigning depends on, so neither the secret nor anything that
** reveals it is stored. */
static int task3_signing_key(signer_t* s, ob__sigv4_cache_t* cache,
                             uint8_t key[32]) {
  sbuf idm = {0};
  uint8_t id[32];
  size_t victim = 0;
  int rc;
  if (cache == NULL)
    return derive_signing_key(s->creds, s->out->date, s->p->region,
                              s->p->service, key);
  sb_puts(&idm, s->creds->access_key_id);
  sb_putc(&idm, '\n');
  sb_puts(&idm, s->out->date);
  sb_putc(&idm, '\n');
  sb_puts(&idm, s->p->region);
  sb_putc(&idm, '\n');
  sb_puts(&idm, s->p->service);
  if (idm.err) {
    sb_free(&idm);
    return OB_ENOMEM;
  }
  rc = hmac256((const uint8_t*)s->creds->secret_access_key,
               strlen(s->creds->secret_access_key), idm.p, idm.len, id);
  sb_free(&idm);
  if (rc != 0) goto done;
  for (size_t i = 0; i < OB__SIGV4_CACHE_SLOTS; i++) {
    if (memcmp(cache->slot[i].id, id, sizeof id) == 0) {
      memcpy(key, cache->slot[i].key, 32);
      cache->slot[i].used = ++cache->tick;
      cache->hits++;
      goto done;
    }
    if (cache->slot[i].used < cache->slot[victim].used) victim = i;
  }
  rc = derive_signing_key(s->creds, s->out->date, s->p->region, s->p->service,
                          key);
  if (rc != 0) goto done;
  cache->misses++;
  mbedtls_platform_zeroize(cache->slot[victim].key, 32);
  memcpy(cache->slot[victim].id, id, sizeof id);
  memcpy(cache->slot[victim].key, key, 32);
  cache->slot[victim].used = ++cache->tick;
done:
  mbedtls_platform_zeroize(id, sizeof id);
  return rc;
}

/*
** Task 3b: Calculate the signature
** ================================
** https://docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html#calculate-signature
**
**   signature = HexEncode(HMAC(kSigning, StringToSign))
*/
static int task3_signature(signer_t* s, ob__sigv4_cache_t* cache) {
  uint8_t key[32], mac[32];
  int rc = task3_signing_key(s, cache, key);
  if (rc == 0)
    rc = hmac256(key, sizeof key, s->out->string_to_sign,
                 strlen(s->out->string_to_sign), mac);
  if (rc == 0) hex_lower(mac, sizeof mac, s->out->signature);
  mbedtls_platform_zeroize(key, sizeof key);
  return rc;
}

/*
** Task 4: Add the signature to the request
** ========================================
** https://docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html#add-signature-to-request
**
**   Authorization: AWS4-HMAC-SHA256 Credential=AKID/scope,
**                  SignedHeaders=h1;h2, Signature=hex
** or, presigned, the query parameters X-Amz-Algorithm, X-Amz-Credential,
** X-Amz-Date, X-Amz-SignedHeaders, X-Amz-Expires [, X-Amz-Security-Token],
** X-Amz-Signature (the order of the suite's *-signed-request.txt files).
*/
static int task4_authorization(signer_t* s) {
  sbuf b = {0};
  sb_puts(&b, ALGORITHM " Credential=");
  sb_puts(&b, s->creds->access_key_id);
  sb_putc(&b, '/');
  sb_puts(&b, s->scope.p);
  sb_puts(&b, ", SignedHeaders=");
  sb_puts(&b, s->out->signed_headers);
  sb_puts(&b, ", Signature=");
  sb_puts(&b, s->out->signature);
  if (b.err) {
    sb_free(&b);
    return b.err;
  }
  s->out->authorization = sb_take(&b);
  return 0;
}

static int task4_presigned_query(signer_t* s) {
  sbuf b = {0};
  char expires[24];
  fmt_expires(s->p->expires_s, expires);
  sb_puts(&b, "X-Amz-Algorithm=" ALGORITHM "&X-Amz-Credential=");
  sb_put_uri(&b, s->creds->access_key_id, strlen(s->creds->access_key_id), 0);
  sb_puts(&b, "%2F");
  sb_put_uri(&b, s->scope.p, s->scope.len, 0);
  sb_puts(&b, "&X-Amz-Date=");
  sb_puts(&b, s->out->amz_date);
  sb_puts(&b, "&X-Amz-SignedHeaders=");
  sb_put_uri(&b, s->out->signed_headers, strlen(s->out->signed_headers), 0);
  sb_puts(&b, "&X-Amz-Expires=");
  sb_puts(&b, expires);
  if (s->has_token) {
    /* Signed or not (omit_session_token), the token travels. */
    sb_puts(&b, "&X-Amz-Security-Token=");
    sb_put_uri(&b, s->creds->session_token, strlen(s->creds->session_token),
               0);
  }
  sb_puts(&b, "&X-Amz-Signature=");
  sb_puts(&b, s->out->signature);
  if (b.err) {
    sb_free(&b);
    return b.err;
  }
  s->out->presigned_query = sb_take(&b);
  return 0;
}

/* ---------------------------------------------------------------------------
** Entry points.
*/
void ob__sigv4_params_init(ob__sigv4_params_t* p) {
  memset(p, 0, sizeof *p);
  p->normalize = 1;
  p->expires_s = 3600;
}

void ob__sigv4_out_free(ob__sigv4_out_t* out) {
  if (out == NULL) return;
  ob__free_secret(out->canonical_request);
  ob__free_secret(out->string_to_sign);
  ob__free_secret(out->signed_headers);
  ob__free_secret(out->authorization);
  ob__free_secret(out->presigned_query);
  memset(out, 0, sizeof *out);
}

void ob__sigv4_cache_init(ob__sigv4_cache_t* c) {
  memset(c, 0, sizeof *c);
}

void ob__sigv4_cache_clear(ob__sigv4_cache_t* c) {
  if (c == NULL) return;
  mbedtls_platform_zeroize(c, sizeof *c);
}

static int sign_common(const ob__sigv4_request_t* req,
                       const ob__aws_creds_t* creds,
                       const ob__sigv4_params_t* p, ob__sigv4_cache_t* cache,
                       ob__sigv4_out_t* out, int presign) {
  signer_t s;
  int rc;
  if (out == NULL) return OB_EINVAL;
  memset(out, 0, sizeof *out);
  memset(&s, 0, sizeof s);
  if (req == NULL || creds == NULL || p == NULL) return OB_EINVAL;
  s.req = req;
  s.creds = creds;
  s.p = p;
  s.out = out;
  s.presign = presign;

  rc = OB_EINVAL;
  if (!valid_method(req->method) || !valid_scope_part(p->region) ||
      !valid_scope_part(p->service) || !valid_key_id(creds->access_key_id) ||
      creds->secret_access_key == NULL || *creds->secret_access_key == '\0' ||
      (req->nheaders && req->headers == NULL) ||
      (req->body_len && req->body == NULL))
    goto fail;
  if (req->path && *req->path && req->path[0] != '/') goto fail;
  if (!no_ctl(req->path) || !no_ctl(req->query)) goto fail;
  if (presign && (p->expires_s < 1 || p->expires_s > MAX_PRESIGN_TTL))
    goto fail;
  s.has_token = creds->session_token && *creds->session_token;
  if (s.has_token && !valid_token(creds->session_token)) goto fail;
  s.sign_token = s.has_token && !p->omit_session_token;
  if ((rc = ob__sigv4_amz_date(p->time_s, out->amz_date)) != 0) goto fail;
  memcpy(out->date, out->amz_date, 8);
  out->date[8] = '\0';

  sb_puts(&s.scope, out->date);
  sb_putc(&s.scope, '/');
  sb_puts(&s.scope, p->region);
  sb_putc(&s.scope, '/');
  sb_puts(&s.scope, p->service);
  sb_puts(&s.scope, "/aws4_request");
  rc = OB_ENOMEM;
  if (s.scope.err) goto fail;

  if ((rc = collect_headers(&s)) != 0) goto fail;
  rc = OB_ENOMEM;
  if ((out->signed_headers = signed_header_list(&s)) == NULL) goto fail;
  if ((rc = collect_query(&s)) != 0) goto fail;
  if ((rc = task1_canonical_request(&s)) != 0) goto fail;
  if ((rc = task2_string_to_sign(&s)) != 0) goto fail;
  if ((rc = task3_signature(&s, cache)) != 0) goto fail;
  rc = presign ? task4_presigned_query(&s) : task4_authorization(&s);
  if (rc != 0) goto fail;
  sb_free(&s.scope);
  kv_free(&s.headers);
  kv_free(&s.query);
  return 0;
fail:
  sb_free(&s.scope);
  kv_free(&s.headers);
  kv_free(&s.query);
  ob__sigv4_out_free(out);
  return rc;
}

int ob__sigv4_sign(const ob__sigv4_request_t* req, const ob__aws_creds_t* creds,
                   const ob__sigv4_params_t* params, ob__sigv4_cache_t* cache,
                   ob__sigv4_out_t* out) {
  return sign_common(req, creds, params, cache, out, 0);
}

int ob__sigv4_presign(const ob__sigv4_request_t* req,
                      const ob__aws_creds_t* creds,
                      const ob__sigv4_params_t* params,
                      ob__sigv4_cache_t* cache, ob__sigv4_out_t* out) {
  return sign_common(req, creds, params, cache, out, 1);
}
