/* SPDX-License-Identifier: Apache-2.0 */
/* What a received message carries besides its body, as the JSON its
** handler and the failure store see (sqs.h, ob__sqs_headers_json). */
#include <string.h>

#include "core/sqs/sqs_int.h"

int ob__sqs_headers_json(const ob__sqs_message_t* m, char** out) {
  ob__jw_t w;
  size_t len;
  memset(&w, 0, sizeof w);
  *out = NULL;
  ob__jw_begin_object(&w);
  if (m->message_id != NULL) {
    ob__jw_key(&w, "sqsMessageId");
    ob__jw_cstring(&w, m->message_id);
  }
  if (m->nattributes > 0) {
    ob__jw_key(&w, "sqsAttributes");
    ob__jw_begin_object(&w);
    for (size_t i = 0; i < m->nattributes; i++) {
      ob__jw_key(&w, m->attributes[i].name);
      ob__jw_cstring(&w, m->attributes[i].value);
    }
    ob__jw_end_object(&w);
  }
  if (m->nmessage_attributes > 0) {
    /* As ReceiveMessage gives them, so a person can send them again. */
    ob__jw_key(&w, "sqsMessageAttributes");
    ob__jw_begin_object(&w);
    for (size_t i = 0; i < m->nmessage_attributes; i++) {
      const ob__sqs_attr_t* a = &m->message_attributes[i];
      ob__jw_key(&w, a->name);
      ob__jw_begin_object(&w);
      ob__jw_key(&w, "DataType");
      ob__jw_cstring(&w, a->data_type);
      if (strncmp(a->data_type, "Binary", 6) == 0) {
        ob__jw_key(&w, "BinaryValue");
        ob__jw_base64(&w, a->value, a->value_len);
      } else {
        ob__jw_key(&w, "StringValue");
        ob__jw_string(&w, a->value, a->value_len);
      }
      ob__jw_end_object(&w);
    }
    ob__jw_end_object(&w);
  }
  ob__jw_end_object(&w);
  return ob__jw_finish(&w, out, &len);
}
