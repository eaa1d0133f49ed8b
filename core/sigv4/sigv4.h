/* SPDX-License-Identifier: Apache-2.0 */
/*
** AWS Signature Version 4 (HMAC-SHA256), header and presigned-query variants.
**
** Internal to oncebox (prefix ob__): not API. Pure and deterministic: the
** signing time is a parameter, nothing here reads a clock, touches a file or
** the network. The only state is the optional signing-key cache below, owned
** by the caller.
**
** Reference: https://docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html
** Checked against the 38 cases of the AWS SigV4 test suite (aws-c-auth copy,
** read by tests/unit/test_sigv4.c from $OB_SHARED_DIR/testdata/sigv4) and
** against @smithy/signature-v4 (tests/interop).
**
** Secrets: the secret access key is read during a call and never copied into
** anything that outlives the call; every buffer that held it or a key derived
** from it is wiped with mbedtls_platform_zeroize before it is released. The
** cache keeps only derived signing keys (day/region/service scoped, which is
** what AWS designed them for) and a one-way fingerprint of the credentials.
**
** Threading: no globals. A cache must not be used by two threads at once.
*/
#ifndef OB_CORE_SIGV4_H
#define OB_CORE_SIGV4_H

#include <stddef.h>
#include <stdint.h>

/* Credentials, borrowed for the duration of one call. */
typedef struct ob__aws_creds_s {
  const char* access_key_id;      /* required; printable ASCII, no '/' ',' */
  const char* secret_access_key;  /* required, non-empty */
  const char* session_token;      /* NULL or "": long-term credentials */
} ob__aws_creds_t;

/* One request header, NUL-terminated. The value may be an obsolete folded
** value (CRLF or LF followed by SP/HT); any other CR or LF is refused. */
typedef struct ob__sigv4_header_s {
  const char* name;
  const char* value;
} ob__sigv4_header_t;

/* The request to sign. Read during the call only. */
typedef struct ob__sigv4_request_s {
  const char* method;   /* "POST"; required */
  /* Path exactly as it goes on the request line (before '?'; no control
  ** characters, here or in the query). It is
  ** normalised if params.normalize and then URI-encoded once more (AWS's
  ** "double encoding" rule for every service but S3). NULL or "" is "/". */
  const char* path;
  /* Query string without '?' (NULL or "" for none). Each key and value is
  ** percent-decoded (an invalid escape stays a literal '%'; '+' is a literal
  ** '+') and re-encoded canonically, so raw UTF-8 and %XX forms sign alike. */
  const char* query;
  /* Must contain Host. Names x-amz-date, authorization and
  ** x-amz-security-token are refused: the signer owns them. A caller-supplied
  ** x-amz-content-sha256 is signed and used as the payload hash (e.g.
  ** "UNSIGNED-PAYLOAD"). Hop-by-hop headers (user-agent, connection,
  ** transfer-encoding, expect, proxy-*, sec-*, ... the @smithy list) are
  ** never signed. Duplicate names are combined in order with ','. */
  const ob__sigv4_header_t* headers;
  size_t nheaders;
  const void* body;     /* may be NULL when body_len is 0 */
  size_t body_len;
} ob__sigv4_request_t;

typedef struct ob__sigv4_params_s {
  const char* region;   /* "eu-west-1"; [A-Za-z0-9._-]+ */
  const char* service;  /* "sqs"; [A-Za-z0-9._-]+ */
  int64_t time_s;       /* signing time, Unix seconds UTC, 0..253402300799 */
  /* 1 (default): remove "." and ".." segments and collapse "//" (all
  ** services but S3). 0: S3 rule, the path is only encoded. */
  int normalize;
  /* Header variant: add x-amz-content-sha256 = hex(SHA-256(body)) and sign
  ** it (what the AWS SDKs do by default). Ignored by presign. */
  int sign_body;
  /* 1: do not sign the session token: X-Amz-Security-Token is still sent but
  ** added after signing (header variant: not in SignedHeaders; presign: not
  ** in the canonical query, appended before X-Amz-Signature). */
  int omit_session_token;
  int64_t expires_s;    /* presign only: X-Amz-Expires, 1..604800 */
} ob__sigv4_params_t;

/* Defaults: normalize 1, sign_body 0, omit_session_token 0, expires_s 3600,
** region/service NULL, time_s 0. This function can't fail. */
void ob__sigv4_params_init(ob__sigv4_params_t* p);

/*
** Result of a signing call. On success the caller must send, in addition to
** its own headers:
**   header variant:  X-Amz-Date: amz_date
**                    X-Amz-Security-Token: <token>       (if a token was given,
**                                                       signed or not)
**                    x-amz-content-sha256: payload_hash (if sign_body)
**                    Authorization: authorization
**   presign variant: the request target becomes path + "?" + query + "&" +
**                    presigned_query (or path + "?" + presigned_query).
** The strings are malloc'd and owned by the result: release them with
** ob__sigv4_out_free(). On failure every pointer is NULL.
*/
/* The buffer of a lowercase hex SHA-256: 64 digits and the NUL. */
#define OB__SIGV4_HEX_BUFLEN 65

typedef struct ob__sigv4_out_s {
  char amz_date[17];       /* "20150830T123600Z" */
  char date[9];            /* "20150830" */
  /* hex SHA-256 of the body, or the caller's x-amz-content-sha256 value */
  char payload_hash[OB__SIGV4_HEX_BUFLEN];
  char signature[OB__SIGV4_HEX_BUFLEN]; /* lowercase hex */
  char* canonical_request; /* Task 1, for debugging SignatureDoesNotMatch */
  char* string_to_sign;    /* Task 2 */
  char* signed_headers;    /* "content-type;host;x-amz-date;x-amz-target" */
  char* authorization;     /* header variant only, else NULL */
  char* presigned_query;   /* presign variant only, else NULL */
} ob__sigv4_out_t;

/* Free the strings of *out and zero it. NULL and a zeroed or already freed
** result are fine. This function can't fail. */
void ob__sigv4_out_free(ob__sigv4_out_t* out);

/*
** Signing-key cache. kSigning depends only on (secret, day, region,
** service); deriving it costs four HMACs. Entries are keyed by
** HMAC-SHA256(secret, access_key_id | day | region | service), so rotating
** the secret behind an unchanged key id can never reuse a stale key, and the
** secret itself is never stored. Embed it anywhere; init before use; clear
** wipes it (call when credentials are discarded, and before freeing it).
*/
#define OB__SIGV4_CACHE_SLOTS 4

typedef struct ob__sigv4_cache_s {
  struct {
    uint8_t id[32];      /* fingerprint as above; all zero = empty slot */
    uint8_t key[32];     /* kSigning */
    uint64_t used;       /* LRU stamp */
  } slot[OB__SIGV4_CACHE_SLOTS];
  uint64_t tick;
  uint64_t hits;         /* statistics, for tests */
  uint64_t misses;
} ob__sigv4_cache_t;

/* Empty the cache. These functions can't fail. */
void ob__sigv4_cache_init(ob__sigv4_cache_t* c);
/* Wipe every derived key (mbedtls_platform_zeroize) and empty the cache. */
void ob__sigv4_cache_clear(ob__sigv4_cache_t* c);

/*
** Sign req with an Authorization header (header variant).
** cache may be NULL (no caching). *out is always initialised first.
** Returns 0, or:
**   OB_EINVAL  a missing/invalid field: no Host header, a refused header
**              name, a malformed header value, a control character in the
**              path or query, an invalid method, region, service, key id
**              or token, a time out of range;
**   OB_ENOMEM  allocation failed;
**   OB_EIO     mbedTLS refused to hash (not built with SHA-256, hardware
**              accelerator failure).
** On error nothing needs freeing.
*/
int ob__sigv4_sign(const ob__sigv4_request_t* req, const ob__aws_creds_t* creds,
                   const ob__sigv4_params_t* params, ob__sigv4_cache_t* cache,
                   ob__sigv4_out_t* out);

/* Presigned-URL variant (query parameters X-Amz-*; X-Amz-Expires =
** params->expires_s). Same contract as ob__sigv4_sign; OB_EINVAL also for
** expires_s outside 1..604800. Headers are signed as they are (no
** x-amz-date header; x-amz-* headers are not hoisted into the query). */
int ob__sigv4_presign(const ob__sigv4_request_t* req,
                      const ob__aws_creds_t* creds,
                      const ob__sigv4_params_t* params,
                      ob__sigv4_cache_t* cache, ob__sigv4_out_t* out);

/* Format time_s as "YYYYMMDDTHHMMSSZ" (17 bytes with NUL). Returns 0 or
** OB_EINVAL when time_s is outside 0..253402300799 (years 1970..9999). */
int ob__sigv4_amz_date(int64_t time_s, char out[17]);

#endif
