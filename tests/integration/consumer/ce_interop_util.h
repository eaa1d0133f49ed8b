/* SPDX-License-Identifier: Apache-2.0 */
/* CloudEvents interop for the consumer tests: events built, serialized
** (structured mode) and sent by the official CloudEvents SDK for JavaScript
** with the AWS SDK (tests/interop/ce_send.mjs), and events read back and
** judged by them (tests/interop/ce_check.mjs). Both run as node processes
** against the test server (sq_server_start) at srv->endpoint, sqs.test
** resolved to 127.0.0.1 by the scripts, trusting srv->ca_file, with
** credentials SQ_AKID / SQ_SECRET (no session token), region SQ_REGION; the
** AWS_* variables of the test process do not reach them. The spec fields,
** the output lines and the checks are documented at the top of each
** script. */
#ifndef OB_TEST_CE_INTEROP_UTIL_H
#define OB_TEST_CE_INTEROP_UTIL_H

#include <stddef.h>

#include "tests/integration/sqs/sqs_test_util.h"

/* NULL if sq_skip_reason() is NULL and tests/interop/node_modules has
** cloudevents, @aws-sdk/client-sqs and @smithy/node-http-handler; else a
** static "skipped: ..." reason for the test to print. */
const char* ci_skip_reason(void);

/* Run ce_send.mjs with specs_json (a JSON array of specs) on stdin: one SQS
** message per spec, in order, SendMessageBatch by 10. ids (may be NULL)
** receives the SQS MessageId of spec i in ids[i] for i < n. Returns the
** number sent (the script's "DONE <n>"); -1 if the script failed (a spec
** refused by the script or the CloudEvents SDK: nothing was sent; an SQS
** error: the batches before it were sent), with its output printed. */
int ci_send(const sq_server_t* srv, const char* queue_url,
            const char* specs_json, char (*ids)[80], size_t n);

/* ci_check_ex flags. CI_CHECK_KEEP: do not delete; the messages read are
** made visible again at the end (ChangeMessageVisibility 0). */
#define CI_CHECK_KEEP 1u

/* Run ce_check.mjs: receive until count messages were read (never more) or
** timeout_ms passed, deleting each (unless CI_CHECK_KEEP). *lines gets a
** malloc'd array of the JSON lines, one malloc'd NUL-terminated string per
** message in receive order (free with ci_lines_free; NULL when none or on
** failure); *invalid (may be NULL) how many of them are "valid":false.
** Returns how many were read (< count when the time ran out: the caller
** asserts), -1 on a transport failure or bad output (printed). */
int ci_check_ex(const sq_server_t* srv, const char* queue_url, int count,
                int timeout_ms, unsigned flags, char*** lines, int* invalid);
/* ci_check_ex with flags 0. */
int ci_check(const sq_server_t* srv, const char* queue_url, int count,
             int timeout_ms, char*** lines, int* invalid);
/* Free what ci_check returned (n: its return value; NULL / n <= 0 fine). */
void ci_lines_free(char** lines, int n);

#endif
