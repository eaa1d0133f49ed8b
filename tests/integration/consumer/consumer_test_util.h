/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers of the SQS consumer tests (consumer, consumer_until_idle): the
** CloudEvent bodies they send, SQS calls from the test's side (through the
** same TLS terminator the engines use), and the AWS environment the engines
** and the oncebox binary read. */
#ifndef OB_TEST_CONSUMER_UTIL_H
#define OB_TEST_CONSUMER_UTIL_H

#include <stddef.h>

#include <uv.h>

#include "oncebox.h"
#include "tests/integration/sqs/sqs_test_util.h"

/* A valid PaymentCaptured payload for payment n (buf: 256 bytes). */
const char* ct_payment(int n, char buf[256]);
/* Event id n. */
const char* ct_event_id(int n, char buf[OB_UUID_BUFLEN]);
/* A structured-mode CloudEvent (malloc'd). */
char* ct_cloudevent(const char* id, const char* type, const char* source,
                    const char* data);
/* The PaymentCaptured CloudEvent of payment n, event id n (malloc'd). */
char* ct_payment_event(int n);

/* An SQS client of the test's own, on its own loop. */
typedef struct ct_sqs_s {
  uv_loop_t loop;
  ob__sqs_client_t* c;
} ct_sqs_t;

void ct_sqs_open(const sq_server_t* srv, ct_sqs_t* s);
void ct_sqs_close(ct_sqs_t* s);

/* A new queue named consumer-PID-N with these CreateQueue attributes (JSON,
** NULL: none); returns its URL (malloc'd). */
char* ct_new_queue(const sq_server_t* srv, const char* attrs);
/* SendMessageBatch the bodies (any number); ids (may be NULL) receives each
** SQS MessageId. */
void ct_send_bodies(const sq_server_t* srv, const char* url,
                    char* const* bodies, size_t n, char (*ids)[80]);
/* Send one body and free it. */
void ct_send_one(const sq_server_t* srv, const char* url, char* body);
/* Messages in the queue: visible + in flight (not visible) + delayed; the
** first two also in *visible, *hidden if not NULL. */
long ct_queue_depth(const sq_server_t* srv, const char* url, long* visible,
                    long* hidden);

/* HOME (an empty one: no ~/.aws) and the AWS variables for srv: the
** engines and the oncebox binary are configured only through them. */
void ct_set_env(const sq_server_t* srv, const char* home);

#endif
