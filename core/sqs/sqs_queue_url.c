/* SPDX-License-Identifier: Apache-2.0 */
/* What a configured SQS queue URL may be. */
#include <string.h>

#include "core/sqs/sqs.h"

const char* ob__sqs_queue_url_problem(const char* url) {
  const char *auth, *end;
  if (url == NULL || url[0] == '\0') return "is empty";
  if (strncmp(url, "https://", 8) == 0)
    auth = url + 8;
  else if (strncmp(url, "http://", 7) == 0)
    auth = url + 7;
  else
    return "must be an http(s):// SQS queue URL";
  /* It travels in request bodies and log lines: a newline would forge a log
  ** line, and a length cap keeps it out of every buffer's way. */
  if (strlen(url) > OB__SQS_QUEUE_URL_MAX)
    return "is longer than 2048 bytes";
  for (const char* p = url; *p; p++)
    if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f)
      return "must be printable ASCII without spaces";
  /* user:password@ would be logged with the URL; SQS never takes it. */
  end = auth + strcspn(auth, "/?#");
  if (memchr(auth, '@', (size_t)(end - auth)) != NULL)
    return "must not carry user information (user:password@): SQS "
           "authenticates with signed requests";
  if (end == auth) return "has no host";
  return NULL;
}
