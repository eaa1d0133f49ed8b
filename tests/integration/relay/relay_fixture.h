/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the relay tests: an engine that reads its AWS configuration
** from the environment, pointed at the test server (sqs_server.mjs). */
#ifndef OB_RELAY_FIXTURE_H
#define OB_RELAY_FIXTURE_H

#include "tests/integration/engine_fixture.h"
#include "tests/integration/sqs/sqs_test_util.h"
#include "oncebox_payout.h"

/* The AWS variables a terminal would have, for the test credentials, with
** nothing else from the environment leaking in. */
static inline void rf_setenv(const sq_server_t* srv) {
  setenv("AWS_ACCESS_KEY_ID", SQ_AKID, 1);
  setenv("AWS_SECRET_ACCESS_KEY", SQ_SECRET, 1);
  setenv("AWS_REGION", SQ_REGION, 1);
  setenv("AWS_CA_BUNDLE", srv->ca_file, 1);
  unsetenv("AWS_PROFILE");
  unsetenv("AWS_SESSION_TOKEN");
  unsetenv("ONCEBOX_OUTBOX_QUEUE_URL");
  unsetenv("ONCEBOX_SOURCE");
}

/* A suite's group setup: its own SQS server named name, started unless
** skip (the suite's reason, NULL to run) says why not, which is printed;
** then the AWS environment that points at it. 0, or -1 when it would not
** start. rf_group_stop stops what rf_group_start started. */
static inline int rf_group_start(sq_server_t* srv, const char* name,
                                 const char* skip) {
  if (skip != NULL) {
    printf("%s\n", skip);
    return 0;
  }
  if (sq_server_start(srv, name, NULL) != 0) return -1;
  rf_setenv(srv);
  return 0;
}

static inline void rf_group_stop(sq_server_t* srv, const char* skip) {
  if (skip == NULL) sq_server_stop(srv);
}

/* https://localhost:PORT (the test certificate names localhost); port 1:
** nothing listens, the terminal is offline. */
static inline void rf_set_endpoint(int port) {
  char url[64];
  snprintf(url, sizeof url, "https://localhost:%d", port);
  setenv("AWS_ENDPOINT_URL_SQS", url, 1);
}

/* A fresh engine with the payout module; real clock (the relay's timers
** are real). */
static inline fixture_t* rf_terminal(void) {
  fixture_t* f = fx_new(8);
  ob_close(f->e);
  f->e = NULL;
  f->opts.clock = NULL;
  f->opts.poll_interval_ms = 20;
  fx_open(f);
  assert_int_equal(ob_register_payout(f->e), 0);
  return f;
}

/* The relay with short backoffs (50..200 ms) so tests run fast. */
static inline int rf_enable(fixture_t* f, const char* queue_url,
                            const char* source, int park_after, int ordered) {
  ob_relay_options_t o;
  char err[256];
  ob_relay_options_init(&o);
  o.queue_url = queue_url;
  o.source = source;
  o.park_after = park_after;
  o.ordered = ordered;
  o.backoff_base_ms = 50;
  o.backoff_cap_ms = 200;
  o.probe.base_ms = 50;
  o.probe.cap_ms = 200;
  int rc = ob_relay_enable(f->e, &o, err, sizeof err);
  if (rc != 0) print_message("ob_relay_enable: %s (%s)\n", err, ob_err_name(rc));
  return rc;
}

static inline void rf_enqueue_payments(fixture_t* f, int from, int n) {
  char id[OB_UUID_BUFLEN], body[256];
  for (int i = from; i < from + n; i++)
    assert_int_equal(fx_enqueue(f, OB_PAYOUT_MESSAGE_TYPE, fx_event(i, id),
                                fx_payment(i, body)),
                     0);
}

#endif
