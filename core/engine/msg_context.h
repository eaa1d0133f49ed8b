/* SPDX-License-Identifier: Apache-2.0 */
/* oncebox internal: what a message's headers say about it beyond its body:
** its W3C trace context and the media type of its body. Handlers see them
** in ob_message_t; events they emit carry a child of the trace context. */
#ifndef OB_CORE_ENGINE_MSG_CONTEXT_H
#define OB_CORE_ENGINE_MSG_CONTEXT_H

#include "core/util/trace_context.h"

/* Header names: CloudEvents' own attribute names (the distributed-tracing
** extension and datacontenttype), so an event keeps them when it waits in
** the local queue, and a local message is given them the same way. */
#define OB__HDR_TRACEPARENT "traceparent"
#define OB__HDR_TRACESTATE "tracestate"
#define OB__HDR_CONTENT_TYPE "datacontenttype"

typedef struct ob__msg_context_s {
  char traceparent[OB__TRACEPARENT_LEN + 1];  /* "" when none or invalid */
  char tracestate[OB__TRACESTATE_MAX + 1];    /* "" when none, invalid, or
                                              ** without a traceparent */
  char* content_type;                         /* malloc'd, NULL when none */
} ob__msg_context_t;

/*
** Read them from headers (a JSON object text, or NULL). An invalid trace
** context is dropped, never an error: tracing must not cost a message.
** Returns 0, or OB_ENOMEM (c is then empty). Free with
** ob__msg_context_free.
*/
int ob__msg_context_read(ob__msg_context_t* c, const char* headers);
void ob__msg_context_free(ob__msg_context_t* c);

#endif
