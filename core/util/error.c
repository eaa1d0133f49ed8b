/* SPDX-License-Identifier: Apache-2.0 */
/* Error names and texts, version, small public utilities. */
#include "oncebox.h"

#include "core/util/uuid.h"

const char* ob_version(void) {
  return OB_VERSION_STRING;
}

/* Both tables come from OB_ERRNO_MAP, so a new code can't be forgotten. */
const char* ob_strerror(int err) {
  switch (err) {
    case OB_OK: return "success";
#define OB__ERR_TEXT(name, code, text) case (code): return text;
    OB_ERRNO_MAP(OB__ERR_TEXT)
#undef OB__ERR_TEXT
    default: return "unknown error";
  }
}

const char* ob_err_name(int err) {
  switch (err) {
    case OB_OK: return "OB_OK";
#define OB__ERR_NAME(name, code, text) case (code): return "OB_" #name;
    OB_ERRNO_MAP(OB__ERR_NAME)
#undef OB__ERR_NAME
    default: return "OB_UNKNOWN";
  }
}

int ob_uuid_valid(const char* s) {
  uint8_t b[16];
  return ob__uuid_parse(s, b) == 0;
}

void ob_retry_policy_init(ob_retry_policy_t* p) {
  if (p == NULL) return;
  p->max_retries = 3;
  p->delay_ms = 1000;
  p->multiplier = 2.0;
  p->max_delay_ms = 0;
  p->jitter = 0.1;
}
