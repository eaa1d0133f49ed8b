/* SPDX-License-Identifier: Apache-2.0 */
/*
** Fuzz target: one line of `oncebox enqueue --ndjson`
** (core/util/ndjson_envelope.c).
**
** Input: the line, without its newline.
**
** Properties, beyond "no crash, no read past len, no sanitizer report":
**   - 0, or -1 with a non-empty reason and *out zeroed (OB_ENOMEM is not
**     expected here);
**   - accepted => the line is valid JSON and holds no NUL byte; cJSON (a
**     second, independent parser) reads it as an object with string "id"
**     and "type" equal to ours, a UUID id, a type of 1..128 bytes without
**     NUL;
**   - nothing re-serialised: a non-string body and the headers are valid
**     JSON that cJSON finds equal (cJSON_Compare) to its own reading of
**     the member, and they are a substring of the line; a string body
**     equals cJSON's decoded string when it has no NUL (cJSON stops there);
**   - a duplicate or unknown member is never accepted (counted with cJSON).
*/
#define _GNU_SOURCE /* memmem */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/include/oncebox.h"
#include "core/util/json_check.h"
#include "core/util/ndjson_envelope.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

static void fail(const char* what, const char* line, size_t len) {
  fprintf(stderr, "fuzz_ndjson_envelope: property violated: %s: '%.*s'\n",
          what, (int)(len > 300 ? 300 : len), line);
  abort();
}

static int is_zero(const ob__ndjson_envelope_t* e) {
  static const ob__ndjson_envelope_t zero;
  return memcmp(e, &zero, sizeof zero) == 0;
}

/* The member's value as cJSON reads it from our bytes equals cJSON's item. */
static void same_json(const char* ours, size_t n, const cJSON* theirs,
                      const char* what, const char* line, size_t len) {
  cJSON* mine;
  if (!ob__json_valid(ours, n)) fail(what, line, len);
  if (memmem(line, len, ours, n) == NULL) fail(what, line, len);
  mine = cJSON_ParseWithLength(ours, n);
  if (mine == NULL) fail(what, line, len);
  /* cJSON_Compare finds inf != inf (1e999 parses to inf): then compare
  ** what cJSON prints for both. */
  if (!cJSON_Compare(mine, theirs, 1)) {
    char* a = cJSON_PrintUnformatted(mine);
    char* b = cJSON_PrintUnformatted(theirs);
    if (a == NULL || b == NULL || strcmp(a, b) != 0) fail(what, line, len);
    free(a);
    free(b);
  }
  cJSON_Delete(mine);
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  /* A private copy of exactly size bytes: ASan sees any read past it. */
  char* line = malloc(size ? size : 1);
  ob__ndjson_envelope_t env;
  const char* why = NULL;
  int rc;
  cJSON *doc, *item;
  int members = 0;
  if (line == NULL) return 0;
  if (size) memcpy(line, data, size);

  rc = ob__ndjson_envelope_parse(line, size, &env, &why);
  if (rc == -1) {
    if (why == NULL || why[0] == '\0') fail("rejected without a reason", line, size);
    if (!is_zero(&env)) fail("out not zeroed on failure", line, size);
    free(line);
    return 0;
  }
  if (rc != 0) fail("return value", line, size);
  if (why != NULL) fail("accepted with a reason", line, size);
  if (memchr(line, '\0', size) != NULL) fail("accepted a NUL byte", line, size);
  if (!ob__json_valid(line, size)) fail("accepted invalid JSON", line, size);

  doc = cJSON_ParseWithLength(line, size);
  if (doc == NULL || !cJSON_IsObject(doc)) fail("cJSON: not an object", line, size);
  cJSON_ArrayForEach(item, doc) members++;
  if (members != 3 + (env.queue != NULL) + (env.headers != NULL))
    fail("a duplicate or unknown member accepted", line, size);

  item = cJSON_GetObjectItemCaseSensitive(doc, "id");
  if (!cJSON_IsString(item) || strcmp(item->valuestring, env.id) != 0 ||
      !ob_uuid_valid(env.id))
    fail("id", line, size);
  item = cJSON_GetObjectItemCaseSensitive(doc, "type");
  if (!cJSON_IsString(item) || strcmp(item->valuestring, env.type) != 0 ||
      strlen(env.type) == 0 || strlen(env.type) > 128)
    fail("type", line, size);
  item = cJSON_GetObjectItemCaseSensitive(doc, "queue");
  if ((item == NULL) != (env.queue == NULL) ||
      (item != NULL && (!cJSON_IsString(item) ||
                        strcmp(item->valuestring, env.queue) != 0)))
    fail("queue", line, size);
  item = cJSON_GetObjectItemCaseSensitive(doc, "headers");
  if ((item == NULL) != (env.headers == NULL)) fail("headers presence", line, size);
  if (item != NULL) {
    if (!cJSON_IsObject(item)) fail("headers not an object", line, size);
    same_json(env.headers, strlen(env.headers), item, "headers", line, size);
  }
  item = cJSON_GetObjectItemCaseSensitive(doc, "body");
  if (item == NULL || env.body == NULL) fail("body presence", line, size);
  if (env.body[env.body_len] != '\0') fail("body not NUL-terminated", line, size);
  if (cJSON_IsString(item)) {
    if (memchr(env.body, '\0', env.body_len) == NULL &&
        (strlen(item->valuestring) != env.body_len ||
         memcmp(item->valuestring, env.body, env.body_len) != 0))
      fail("string body differs from cJSON's", line, size);
  } else {
    same_json(env.body, env.body_len, item, "body", line, size);
  }
  cJSON_Delete(doc);
  ob__ndjson_envelope_free(&env);
  if (!is_zero(&env)) fail("free does not zero", line, size);
  free(line);
  return 0;
}
