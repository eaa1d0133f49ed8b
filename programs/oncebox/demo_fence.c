/* SPDX-License-Identifier: Apache-2.0 */
/* oncebox demo, part two: charging orders behind the fence, on the same
** database. The payment provider here is an in-process function that
** honours Idempotency-Key and counts the charges it really makes, so the
** demo needs no server; the same rules run over HTTPS against a provider
** simulator in tests/integration/fence/. The provider loses replies after
** charging, answers 503 and declines some cards, and the terminal restarts
** halfway, so every recovery path of docs/fence.md runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "programs/oncebox/cli.h"
#include "programs/oncebox/demo.h"

#define MAX_ORDERS 2000

typedef struct provider_s {
  uint64_t rng;
  int nkeys;
  char keys[MAX_ORDERS][OB_UUID_BUFLEN];
  char ids[MAX_ORDERS][24];
  int calls, lost, unavailable, declined, replays;
  char body[192];
} provider_t;

static uint64_t rnd(provider_t* p) {
  p->rng ^= p->rng << 13;
  p->rng ^= p->rng >> 7;
  p->rng ^= p->rng << 17;
  return p->rng;
}

/* The provider: a charge per new idempotency key, the original answer for a
** known one; 402 for an amount of 402 minor units. */
static int provider(void* arg, const ob_effect_call_t* c,
                    ob_effect_reply_t* r) {
  provider_t* p = arg;
  int i, roll = (int)(rnd(p) % 100);
  r->sent = 1;
  p->calls++;
  if (roll < 5) {  /* busy: nothing done */
    p->unavailable++;
    r->status = 503;
    snprintf(p->body, sizeof p->body, "{\"error\":{\"message\":\"busy\"}}");
  } else if (strstr(c->body, "\"amount_minor\":402,") != NULL) {
    p->declined++;
    r->status = 402;
    snprintf(p->body, sizeof p->body,
             "{\"error\":{\"code\":\"card_declined\",\"message\":\"Your card "
             "was declined.\"}}");
  } else {
    for (i = 0; i < p->nkeys; i++)
      if (strcmp(p->keys[i], c->idempotency_key) == 0) break;
    if (i < p->nkeys) {
      p->replays++;
    } else {
      if (p->nkeys == MAX_ORDERS) return OB_ENOMEM;
      i = p->nkeys++;
      snprintf(p->keys[i], sizeof p->keys[i], "%s", c->idempotency_key);
      snprintf(p->ids[i], sizeof p->ids[i], "ch_%06d", i + 1);
    }
    if (roll < 20) {  /* charged, and the reply is lost on the way back */
      p->lost++;
      r->status = OB_ENET;  /* no answer: the connection dropped */
      r->detail = "connection closed before the response was complete";
      return 0;
    }
    r->status = 200;
    snprintf(p->body, sizeof p->body, "{\"id\":\"%s\",\"status\":\"succeeded\"}",
             p->ids[i]);
  }
  r->body = p->body;
  r->body_len = strlen(p->body);
  return 0;
}

static ob_engine_t* open_till(const char* db_path, const ob_clock_t* clock) {
  ob_options_t o;
  ob_provider_options_t po;
  ob_engine_t* e = NULL;
  char err[512];
  ob_options_init(&o);
  o.db_path = db_path;
  o.batch_size = 16;
  o.log_level = OB_LOG_ERROR;
  o.log_record = ob__cli_log_record;
  o.clock = clock;
  if (ob_open(&e, &o, err, sizeof err) < 0) {
    fprintf(stderr, "demo: cannot open %s: %s\n", db_path, err);
    return NULL;
  }
  ob_provider_options_init(&po);
  po.name = OB_CHARGE_PROVIDER;
  po.lookup_path = OB_CHARGE_LOOKUP_PATH;
  po.retry.delay_ms = 0;  /* the demo does not wait out backoffs */
  po.retry.jitter = 0;
  po.retry.max_retries = 20;
  if (ob_provider_register(e, &po) < 0 || ob_register_charge_order(e) < 0) {
    ob_close(e);
    return NULL;
  }
  return e;
}

/* Handle and perform until nothing is left; returns < 0 on failure. */
static int settle_all(ob_engine_t* e, provider_t* p, int max_rounds) {
  for (int round = 0; round < max_rounds; round++) {
    ob_batch_result_t r;
    ob_stats_t st;
    size_t settled;
    int rc = ob_run_once(e, &r);
    if (rc < 0) return rc;
    if (r.claimed > 0) continue;
    rc = ob_effects_perform(e, provider, p, 64, &settled);
    if (rc < 0) return rc;
    if ((rc = ob_stats(e, &st)) < 0) return rc;
    if (st.queue_ready + st.queue_delayed == 0 && st.effects_pending == 0 &&
        st.effects_unknown == 0)
      return 0;
  }
  return OB_ETIMEDOUT;
}

int ob__cli_demo_fence(const char* db_path, uint64_t seed, int orders,
                       demo_expect_fn expect, void* ctx, int* failed_rows,
                       int* handled) {
  static provider_t p;
  ob_engine_t* e;
  ob_stats_t st;
  ob_charge_stats_t cs;
  int deliveries = 0, declined = 0, declined_deliveries = 0, rc;
  uint64_t rng = seed | 1;

  memset(&p, 0, sizeof p);
  p.rng = seed * 2654435761u + 1;
  if (orders > MAX_ORDERS) orders = MAX_ORDERS;
  printf("\n7. Charging orders behind the fence (docs/fence.md)\n"
         "   %d ChargeOrder messages, some delivered twice; an in-process "
         "provider that\n   honours Idempotency-Key loses 15%% of its replies "
         "after charging, answers\n   503 to 5%% of calls and declines "
         "amounts of 402; the till restarts halfway.\n", orders);
  e = open_till(db_path, NULL);
  if (e == NULL) return OB_EIO;
  for (int i = 0; i < orders; i++) {
    char id[OB_UUID_BUFLEN], body[160];
    ob_envelope_t env;
    int copies;
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    copies = rng % 4 == 0 ? 2 : 1;
    snprintf(id, sizeof id, "0190c4e2-7a10-7d3e-9c1f-%012d", i + 1);
    snprintf(body, sizeof body,
             "{\"orderId\":\"till3-%05d\",\"amountInMinorUnits\":%d,"
             "\"currency\":\"EUR\"}", i + 1, i % 50 == 7 ? 402 : 450 + i % 900);
    declined += i % 50 == 7;
    if (i % 50 == 7) declined_deliveries += copies;
    memset(&env, 0, sizeof env);
    env.id = id;
    env.type = OB_CHARGE_MESSAGE_TYPE;
    env.body = body;
    env.body_len = strlen(body);
    for (int k = 0; k < copies; k++, deliveries++)
      if ((rc = ob_enqueue(e, &env)) < 0) goto out;
  }
  /* Claim every fence, make half the calls, then restart: the other claims
  ** are no longer known to be unsent, so the idempotency key decides. */
  for (;;) {
    ob_batch_result_t r;
    if ((rc = ob_run_once(e, &r)) < 0) goto out;
    if (r.claimed == 0) break;
  }
  {
    size_t settled;
    if ((rc = ob_effects_perform(e, provider, &p, (size_t)orders / 2,
                                 &settled)) < 0)
      goto out;
  }
  ob_close(e);
  printf("   restart: %d calls made so far; the till comes back\n", p.calls);
  e = open_till(db_path, NULL);
  if (e == NULL) return OB_EIO;
  if ((rc = settle_all(e, &p, 10000)) < 0) goto out;
  if ((rc = ob_stats(e, &st)) < 0 || (rc = ob_charge_stats(e, &cs)) < 0)
    goto out;
  printf("   %d deliveries, %d provider calls: %d replies lost, %d answered "
         "503, %d answered again from a saved key\n", deliveries, p.calls, p.lost,
         p.unavailable, p.replays);
  expect(ctx, "cards charged by the provider (one per order)",
         orders - declined, p.nkeys);
  expect(ctx, "charges recorded, one per order", orders - declined,
         cs.charges);
  expect(ctx, "effects still pending or unknown", 0,
         st.effects_pending + st.effects_unknown);
  expect(ctx, "declined cards, failed with the provider's reason", declined,
         st.effects_failed);
  expect(ctx, "provider successes recorded without a fence", 0,
         cs.unfenced_successes);
  /* Each delivery of a declined order fails on its own (a failure leaves
  ** no dedup record, so a fixed replay could still run). */
  *failed_rows = declined_deliveries;
  *handled = orders - declined;
  rc = 0;
out:
  if (rc < 0)
    fprintf(stderr, "demo: charging failed: %s: %s\n", ob_strerror(rc),
            ob_errmsg(e));
  ob_close(e);
  return rc;
}
