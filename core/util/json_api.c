/* SPDX-License-Identifier: Apache-2.0 */
/* The strict JSON readers and writer of the public API (oncebox.h,
** "Reading and writing message bodies"): thin doors onto core/util's own,
** so a module judges its messages by the rules the engine judges by. */
#include <stdio.h>
#include <string.h>

#include "core/util/amount.h"
#include "core/util/json_check.h"
#include "core/util/json_write.h"
#include "oncebox.h"

static int reject(char* reason, size_t reason_len, const char* what,
                  const char* name) {
  if (reason != NULL && reason_len > 0)
    snprintf(reason, reason_len, "%s%s", what, name ? name : "");
  return -1;
}

int ob_json_fields(const char* body, size_t len, const char* const* names,
                   size_t n, const char** vals, char* reason,
                   size_t reason_len) {
  int dup;
  if (vals != NULL)
    for (size_t i = 0; i < n; i++) vals[i] = NULL;
  if (body == NULL || !ob__json_valid(body, len))
    return reject(reason, reason_len, "body is not valid JSON", NULL);
  if (*ob__json_skip_ws(body) != '{')
    return reject(reason, reason_len, "body is not a JSON object", NULL);
  if (names == NULL || vals == NULL || n > 64)
    return reject(reason, reason_len, "no field names to look for", NULL);
  dup = ob__json_members(body, len, names, (int)n, vals, NULL);
  if (dup >= 0)
    return reject(reason, reason_len, "duplicate field ", names[dup]);
  if (reason != NULL && reason_len > 0) reason[0] = '\0';
  return 0;
}

long ob_json_string(const char* v, char* buf, size_t cap) {
  if (v == NULL || *v != '"' || buf == NULL || cap == 0) return -1;
  return (long)ob__json_str_decode(v, buf, cap);
}

const char* ob_json_amount(const char* v, int64_t* out) {
  if (v == NULL || out == NULL) return "amountInMinorUnits must be an integer";
  return ob__amount_parse(v, out);
}

size_t ob_json_quote(char* buf, size_t cap, const char* s, size_t len) {
  size_t need = 0, n = 0;
  if (s == NULL) s = "";
  ob__json_put_str(NULL, &need, s, len);
  if (buf != NULL && cap > need) {
    ob__json_put_str(buf, &n, s, len);
    buf[n] = '\0';
  }
  return need;
}
