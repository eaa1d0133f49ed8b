/* SPDX-License-Identifier: Apache-2.0 */
/*
** SQS message checksums (docs/sqs-protocol.md, "Checksums").
**
** MD5OfMessageBody / MD5OfBody: hex MD5 of the body's UTF-8 bytes.
** MD5OfMessageAttributes: the encoding of the AWS SDK for Java v2
** MessageMD5ChecksumInterceptor, checked against its vector and fauxqs:
**   for each attribute, sorted by name:
**     u32be(len name) name u32be(len type) type
**     then 1 u32be(len) value     (String, Number: the UTF-8 text)
**       or 2 u32be(len) bytes     (Binary: the decoded bytes)
** MD5 is only an integrity check against transport corruption here, which
** is all SQS uses it for.
*/
#include <stdlib.h>
#include <string.h>

#include <mbedtls/md.h>

#include "core/sqs/sqs_int.h"
#include "oncebox.h"

static void hex_lower(const unsigned char* in, size_t n, char* out) {
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++) {
    out[2 * i] = digits[in[i] >> 4];
    out[2 * i + 1] = digits[in[i] & 15];
  }
  out[2 * n] = '\0';
}

static int md_err(int rc) {
  if (rc == 0) return 0;
  if (rc == MBEDTLS_ERR_MD_ALLOC_FAILED) return OB_ENOMEM;
  return OB_EIO;
}

int ob__sqs_md5_hex(const void* data, size_t len,
                    char out[OB__SQS_MD5_BUFLEN]) {
  const mbedtls_md_info_t* md = mbedtls_md_info_from_type(MBEDTLS_MD_MD5);
  unsigned char d[16];
  int rc;
  out[0] = '\0';
  if (md == NULL) return OB_EIO;  /* mbedTLS built without MD5 */
  rc = md_err(mbedtls_md(md, len ? data : (const void*)"", len, d));
  if (rc == 0) hex_lower(d, sizeof d, out);
  return rc;
}

/* 1 String/Number, 2 Binary, 0 unknown: the transport type byte. */
static int transport_type(const char* data_type) {
  size_t n = 0;
  if (data_type == NULL) return 0;
  while (data_type[n] && data_type[n] != '.') n++;
  if ((n == 6 && memcmp(data_type, "String", 6) == 0) ||
      (n == 6 && memcmp(data_type, "Number", 6) == 0))
    return 1;
  if (n == 6 && memcmp(data_type, "Binary", 6) == 0) return 2;
  return 0;
}

static int by_name(const void* a, const void* b) {
  const ob__sqs_attr_t* x = *(const ob__sqs_attr_t* const*)a;
  const ob__sqs_attr_t* y = *(const ob__sqs_attr_t* const*)b;
  return strcmp(x->name, y->name);
}

static int update_len(mbedtls_md_context_t* ctx, const void* p, size_t n) {
  unsigned char be[4];
  int rc;
  if (n > UINT32_MAX) return MBEDTLS_ERR_MD_BAD_INPUT_DATA;
  be[0] = (unsigned char)(n >> 24);
  be[1] = (unsigned char)(n >> 16);
  be[2] = (unsigned char)(n >> 8);
  be[3] = (unsigned char)n;
  rc = mbedtls_md_update(ctx, be, 4);
  if (rc == 0 && n) rc = mbedtls_md_update(ctx, p, n);
  return rc;
}

int ob__sqs_md5_of_attributes(const ob__sqs_attr_t* attrs, size_t n,
                              char out[OB__SQS_MD5_BUFLEN]) {
  const mbedtls_md_info_t* md = mbedtls_md_info_from_type(MBEDTLS_MD_MD5);
  const ob__sqs_attr_t** sorted = NULL;
  mbedtls_md_context_t ctx;
  unsigned char d[16];
  int rc = 0;
  out[0] = '\0';
  if (n == 0) return 0;
  if (attrs == NULL) return OB_EINVAL;
  if (md == NULL) return OB_EIO;
  for (size_t i = 0; i < n; i++)
    if (attrs[i].name == NULL || transport_type(attrs[i].data_type) == 0 ||
        (attrs[i].value == NULL && attrs[i].value_len))
      return OB_EINVAL;
  sorted = malloc(n * sizeof *sorted);
  if (sorted == NULL) return OB_ENOMEM;
  for (size_t i = 0; i < n; i++) sorted[i] = &attrs[i];
  qsort(sorted, n, sizeof *sorted, by_name);

  mbedtls_md_init(&ctx);
  rc = mbedtls_md_setup(&ctx, md, 0);
  if (rc == 0) rc = mbedtls_md_starts(&ctx);
  for (size_t i = 0; rc == 0 && i < n; i++) {
    const ob__sqs_attr_t* a = sorted[i];
    unsigned char tt = (unsigned char)transport_type(a->data_type);
    rc = update_len(&ctx, a->name, strlen(a->name));
    if (rc == 0) rc = update_len(&ctx, a->data_type, strlen(a->data_type));
    if (rc == 0) rc = mbedtls_md_update(&ctx, &tt, 1);
    if (rc == 0) rc = update_len(&ctx, a->value, a->value_len);
  }
  if (rc == 0) rc = mbedtls_md_finish(&ctx, d);
  mbedtls_md_free(&ctx);
  free(sorted);
  if (rc != 0) return rc == MBEDTLS_ERR_MD_BAD_INPUT_DATA ? OB_EINVAL : md_err(rc);
  hex_lower(d, sizeof d, out);
  return 0;
}
