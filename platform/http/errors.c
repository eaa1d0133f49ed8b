/* Names and texts of the HTTP client's error codes (OB_HTTP_ERRNO_MAP). */
#include "platform/http/http_client.h"

const char* ob_http_strerror(int err) {
  switch (err) {
#define OB__HTTP_ERR_TEXT(name, code, text) case (code): return text;
    OB_HTTP_ERRNO_MAP(OB__HTTP_ERR_TEXT)
#undef OB__HTTP_ERR_TEXT
    default: return ob_strerror(err);
  }
}

const char* ob_http_err_name(int err) {
  switch (err) {
#define OB__HTTP_ERR_NAME(name, code, text) \
  case (code): return "OB_HTTP_E_" #name;
    OB_HTTP_ERRNO_MAP(OB__HTTP_ERR_NAME)
#undef OB__HTTP_ERR_NAME
    default: return ob_err_name(err);
  }
}
