/* SPDX-License-Identifier: Apache-2.0 */
/*
** Fuzz target: the configuration file's parser (programs/oncebox/config_parse.c),
** against a schema with every value type, a sub-sectioned section and a
** word value.
**
** Input: the file's bytes.
**
** Properties, beyond "no crash, no read past n, no sanitizer report":
**   - the result is 0 or OB_EINVAL; OB_EINVAL comes with "fuzz.conf:LINE: "
**     and a reason, LINE within the text's lines;
**   - every value handed over is in its key's range, on a line of the text,
**     and a string is NUL-terminated with no NUL inside;
**   - the verdict is the same with no error buffer and with a tiny one.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/include/oncebox.h"
#include "programs/oncebox/config_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

static const char* const choices[] = {"text", "json", NULL};
static const ob_cfg_key_t keys[] = {
    {"s", OB_CFG_STRING, 0, 0, 0, 0, NULL, 0, NULL, 0},
    {"b", OB_CFG_BOOL, 0, 0, 0, 0, NULL, 0, NULL, 1},
    {"i", OB_CFG_INT, -5, 10000, 0, 0, NULL, 0, NULL, 2},
    {"z", OB_CFG_SIZE, 0, INT64_MAX, 0, 0, "auto", -1, NULL, 3},
    {"d", OB_CFG_DURATION, 1, 86400000, 0, 0, NULL, 0, NULL, 4},
    {"n", OB_CFG_NUMBER, 0, 0, -1.0, 100.0, NULL, 0, NULL, 5},
    {"e", OB_CFG_ENUM, 0, 0, 0, 0, NULL, 0, choices, 6},
};
static const ob_cfg_section_t sections[] = {
    {"a", 0, keys, sizeof keys / sizeof keys[0]},
    {"retry", 1, keys, sizeof keys / sizeof keys[0]},
};
static const ob_cfg_schema_t schema = {sections, 2, "hint"};

typedef struct ctx_s {
  const uint8_t* data;
  size_t size;
  long lines;
} ctx_t;

static void fail(const char* what) {
  fprintf(stderr, "fuzz_config: property violated: %s\n", what);
  abort();
}

static int check(void* c, const ob_cfg_value_t* v, char* why, size_t whylen) {
  ctx_t* ctx = c;
  const ob_cfg_key_t* k = v->key;
  (void)why;
  (void)whylen;
  if (v->line < 1 || v->line > ctx->lines) fail("value line outside the text");
  if (v->sub == NULL || strlen(v->sub) > OB_CFG_MAX_SUB) fail("sub");
  switch (k->type) {
    case OB_CFG_STRING:
      if (v->s == NULL || strlen(v->s) != v->len) fail("string length");
      if (v->len > OB_CFG_MAX_LINE) fail("string longer than a line");
      break;
    case OB_CFG_BOOL:
      if (v->i != 0 && v->i != 1) fail("bool");
      break;
    case OB_CFG_ENUM:
      if (v->i < 0 || v->i > 1) fail("enum index");
      break;
    case OB_CFG_NUMBER:
      if (!(v->d >= k->dmin && v->d <= k->dmax)) fail("number range");
      break;
    default:
      if ((v->i < k->min || v->i > k->max) &&
          !(k->word != NULL && v->i == k->word_value))
        fail("integer range");
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ctx_t ctx;
  char err[512], tiny[8];
  const char* text = (const char*)data;
  long line;
  char* end;
  int rc;
  ctx.data = data;
  ctx.size = size;
  ctx.lines = 1;
  for (size_t i = 0; i < size; i++) ctx.lines += data[i] == '\n';
  rc = ob__cfg_parse("fuzz.conf", text, size, &schema, check, &ctx, err,
                     sizeof err);
  if (rc != 0 && rc != OB_EINVAL) fail("return value");
  if (rc == OB_EINVAL) {
    if (strncmp(err, "fuzz.conf:", 10) != 0) fail("error names no file");
    line = strtol(err + 10, &end, 10);
    if (line < 1 || line > ctx.lines || strncmp(end, ": ", 2) != 0 ||
        end[2] == '\0')
      fail("error names no line of the text, or no reason");
  }
  if (ob__cfg_parse("fuzz.conf", text, size, &schema, check, &ctx, NULL, 0) !=
          rc ||
      ob__cfg_parse("fuzz.conf", text, size, &schema, check, &ctx, tiny,
                    sizeof tiny) != rc)
    fail("verdict depends on the error buffer");
  return 0;
}
