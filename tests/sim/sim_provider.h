/* SPDX-License-Identifier: Apache-2.0 */
/*
** The simulated payment provider of tests/sim (docs/simulator.md, "Not
** modelled yet": the provider and the fence). A sim_service_fn the world
** routes by host (sim_net_route), answering what platform/effects sends
** for the ChargeOrder module (oncebox_charge.h):
**
**   POST /v1/charges                  Idempotency-Key: <uuid>, body
**        {"order_id":s,"amount_minor":n,"currency":"EUR"}
**        -> 200 {"id":"ch_...","object":"charge",...}
**   GET  /v1/charges?idempotency_key=K           (OB_CHARGE_LOOKUP_PATH)
**        -> 200 the charge made under K, or 404
**   GET  /v1/charges/search?query=metadata['order_id']:'O'
**        (the provider's reference_lookup_path, Stripe's Search API)
**        -> 200 {"object":"search_result","data":[charges of order O]}
**
** The base URL must have no path (https://SIM_PROVIDER_HOST). Idempotency
** follows Stripe's published rules and draft-ietf-httpapi-idempotency-key-
** header; sim_provider.c says which rule comes from where and what is not
** modelled. Deterministic: its own rng stream, the world's true time
** (sim_true_ms), no global state.
*/
#ifndef OB_TESTS_SIM_PROVIDER_H
#define OB_TESTS_SIM_PROVIDER_H

#include <stddef.h>
#include <stdint.h>

/* sim.h's include guard ends before its oracle and world sections (as of
** this writing), so a second include redefines them: include it once. */
#ifndef OB_TESTS_SIM_H
#include "tests/sim/sim.h"
#endif

/* Suggested route and provider description for the world. */
#define SIM_PROVIDER_HOST "api.psp.example"
#define SIM_PROVIDER_BASE_URL "https://" SIM_PROVIDER_HOST
#define SIM_PROVIDER_SEARCH_PATH \
  "/v1/charges/search?query=metadata['order_id']:'{reference}'"

typedef struct sim_provider_config_s {
  int64_t retention_ms;   /* a key is forgotten once at least this old (true
                          ** time since its first request): 24 h, Stripe's */
  int64_t in_flight_ms;   /* the first request with a key "still runs" this
                          ** long after it arrived: a repeat inside the
                          ** window gets 409, and lookups and searches do not
                          ** see its charge yet: 2000 */
  int64_t search_lag_ms;  /* a charge shows in search this long after it is
                          ** done (Stripe: usually under a minute): 0 */
  unsigned err_before_per_mille; /* 500/503 without acting, any request: 0 */
  unsigned err_after_per_mille;  /* a new charge is made, then 500 is
                          ** answered AND saved under the key: 0 */
} sim_provider_config_t;

typedef struct sim_provider_stats_s {
  int64_t requests;       /* every request served */
  int64_t calls;          /* POST /v1/charges */
  int64_t charges;        /* charges created */
  int64_t orders;         /* distinct orders charged */
  int64_t orders_charged_twice; /* orders with more than one charge */
  int64_t replays;        /* saved answers replayed (Idempotent-Replayed) */
  int64_t replayed_5xx;   /* of which saved 500s */
  int64_t in_flight_409;
  int64_t conflicts_422;  /* a key reused with another payload */
  int64_t invalid_400;    /* no key, a bad key, a bad body */
  int64_t errors_before;  /* 500/503 without acting */
  int64_t errors_after;   /* charged, then 500 (saved) */
  int64_t pruned;         /* keys forgotten past the retention */
  int64_t reused_after_prune; /* new requests with a key that was forgotten:
                          ** each made a fresh charge (the danger 0013 is
                          ** about) */
  int64_t lookups;        /* GET /v1/charges?idempotency_key= */
  int64_t searches;       /* GET /v1/charges/search */
  int64_t not_found;      /* 404s (unknown route, lookups that found none) */
} sim_provider_stats_t;

typedef struct sim_provider_s sim_provider_t;

/* The defaults above. */
void sim_provider_config_init(sim_provider_config_t* c);
/* A provider with no charges and no keys; c NULL: the defaults. Its rng is
** stream 13 of seed. NULL when out of memory. */
sim_provider_t* sim_provider_new(uint64_t seed, const sim_provider_config_t* c);
void sim_provider_free(sim_provider_t* p);
/* The world changes the provider's weather at any time. */
void sim_provider_set_faults(sim_provider_t* p, unsigned err_before_per_mille,
                             unsigned err_after_per_mille);
void sim_provider_set_in_flight(sim_provider_t* p, int64_t in_flight_ms);

/* The service (sim_service_fn): ctx is the sim_provider_t. */
int sim_provider_service(void* ctx, const sim_http_req_t* req,
                         sim_http_res_t* res);

/* The invariant "one charge at the provider per order": the number of
** orders charged more than once; the first offender (order, its charges
** and the keys that made them) in why (may be NULL). */
int sim_provider_check(const sim_provider_t* p, char* why, size_t n);

void sim_provider_stats(const sim_provider_t* p, sim_provider_stats_t* s);
/* Charges made for order_id (0: none). */
int sim_provider_charges_of(const sim_provider_t* p, const char* order_id);
/* The id of the first charge of order_id, or NULL. Valid until free. */
const char* sim_provider_first_charge(const sim_provider_t* p,
                                      const char* order_id);
/* Every charge, in the order made: fn per charge. Returns the count. */
size_t sim_provider_each_charge(const sim_provider_t* p,
                                void (*fn)(void* arg, const char* charge_id,
                                           const char* order_id,
                                           int64_t amount_minor,
                                           const char* currency),
                                void* arg);

#endif
