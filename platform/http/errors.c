/* Names and texts of the HTTP client's error codes (OB__HTTP_ERRNO_MAP). */
#include "platform/http/http_client.h"

const char* ob__http_strerror(int err) {
  switch (err) {
#define OB__HTTP_ERR_TEXT(name, code, text) case (code): return text;
    OB__HTTP_ERRNO_MAP(OB__HTTP_ERR_TEXT)
#undef OB__HTTP_ERR_TEXT
    default: return ob_strerror(err);
  }
}

const char* ob__http_err_name(int err) {
  switch (err) {
#define OB__HTTP_ERR_NAME(name, code, text) \
  case (code): return "OB__HTTP_E_" #name;
    OB__HTTP_ERRNO_MAP(OB__HTTP_ERR_NAME)
#undef OB__HTTP_ERR_NAME
    default: return ob_err_name(err);
  }
}
