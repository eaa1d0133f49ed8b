/* SPDX-License-Identifier: Apache-2.0 */
/* Shared internals of core/sqs (not for other modules). */
#ifndef OB_CORE_SQS_INT_H
#define OB_CORE_SQS_INT_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "core/sqs/sqs.h"

#if defined(__GNUC__)
#define OB__PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define OB__PRINTF(f, a)
#endif

/* Record a fault in diag (may be NULL) and return rc. */
int ob__sqs_fail(ob__sqs_diag_t* diag, int rc, ob__sqs_fault_t fault,
                 const char* fmt, ...) OB__PRINTF(4, 5);

/* 1 if s[0..n) is well-formed UTF-8 (no overlongs, no surrogates, <=
** U+10FFFF); with sqs_text also only the characters SQS accepts in message
** text: #x9 #xA #xD #x20-#xD7FF #xE000-#xFFFD #x10000-#x10FFFF. */
int ob__sqs_utf8_ok(const char* s, size_t n, int sqs_text);

/* ---------------------------------------------------------------------------
** Streaming JSON writer with a sticky error (checked once at the end).
** Commas are placed automatically: a value or key after a value gets one.
*/
typedef struct ob__jw_s {
  char* p;
  size_t len;
  size_t cap;
  int err;          /* 0, OB_ENOMEM, or OB_EINVAL (invalid UTF-8) */
  int need_comma;
} ob__jw_t;

void ob__jw_begin_object(ob__jw_t* w);
void ob__jw_end_object(ob__jw_t* w);
void ob__jw_begin_array(ob__jw_t* w);
void ob__jw_end_array(ob__jw_t* w);
void ob__jw_key(ob__jw_t* w, const char* key);
/* A JSON string from UTF-8 bytes; invalid UTF-8 sets err = OB_EINVAL. */
void ob__jw_string(ob__jw_t* w, const char* s, size_t n);
void ob__jw_cstring(ob__jw_t* w, const char* s);
void ob__jw_int(ob__jw_t* w, int64_t v);
/* A JSON string holding the base64 of bytes. */
void ob__jw_base64(ob__jw_t* w, const void* bytes, size_t n);
/* Hand the text over (*out, *out_len) or free it and return w->err. */
int ob__jw_finish(ob__jw_t* w, char** out, size_t* out_len);

/* ---------------------------------------------------------------------------
** Reading responses.
*/

/* Parse body[0..len) as one JSON object: size cap, depth pre-scan (cJSON's
** own limit is 1000, far beyond what SQS sends), nothing but whitespace
** after the value. *root_out is the tree (cJSON_Delete). */
int ob__sqs_json_object(const char* body, size_t len, cJSON** root_out,
                        ob__sqs_diag_t* diag);

/* Owner of everything a parse result points to: the tree and a list of
** blocks (arrays, decoded binary values). */
/* The base type of a message attribute's DataType ("String", "Number" or
** "Binary", each with an optional ".label"). */
typedef enum {
  OB__SQS_DT_INVALID = 0,
  OB__SQS_DT_STRING,
  OB__SQS_DT_NUMBER,
  OB__SQS_DT_BINARY
} ob__sqs_data_type_t;

typedef struct ob__sqs_pool_s {
  cJSON* root;
  void** blocks;
  size_t nblocks;
  size_t cap;
} ob__sqs_pool_t;

ob__sqs_pool_t* ob__sqs_pool_new(void);
/* calloc(n, size) owned by the pool; NULL on failure (and for n == 0 a
** valid non-NULL block). */
void* ob__sqs_pool_alloc(ob__sqs_pool_t* p, size_t n, size_t size);
void ob__sqs_pool_free(ob__sqs_pool_t* p);

/* MD5 comparison of a response's hex digest with ours: case-insensitive,
** exact length. */
int ob__sqs_md5_equal(const char* theirs, const char* ours);

#endif
