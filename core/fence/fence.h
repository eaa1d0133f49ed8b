/* SPDX-License-Identifier: Apache-2.0 */
/* The fence, engine side: what a performer (platform/effects over HTTPS,
** or ob_effects_perform in-process) needs to drive effects. Not API.
**
** A performer loops: ob__effect_take() a few due effects under a lease,
** make each call (or lookup) outside any transaction, then
** ob__effect_settle() the answer. Everything that decides (call, lookup or
** park; which answer means what; the backoff) lives in core and is driven
** by the engine clock, so it is unit-tested with a fake clock. */
#ifndef OB_CORE_FENCE_H
#define OB_CORE_FENCE_H

#include <stddef.h>
#include <stdint.h>

#include "oncebox.h"

/* What a provider's answer means (ob__fence_classify). */
typedef enum {
  OB__ANSWER_CONFIRMED = 1, /* 2xx: done, reference from the body's "id" */
  OB__ANSWER_FAILED = 2,    /* 4xx but 408/409/425/429: refused, final */
  OB__ANSWER_UNKNOWN = 3,   /* 5xx, 429, 408/409/425, no answer after the
                            ** request may have reached the provider */
  OB__ANSWER_NOT_SENT = 4,  /* no byte reached the provider, or it refused
                            ** the credentials (401/403): nothing changed */
  OB__ANSWER_ABSENT = 5,    /* a lookup: the provider never saw the key */
  OB__ANSWER_IN_FLIGHT = 6, /* 409 (or Stripe's idempotency_key_in_use):
                            ** the provider still processes the first
                            ** request with this key: ask again later with
                            ** the same key, no attempt spent */
  OB__ANSWER_CONFLICT = 7,  /* 422, or 400 with an idempotency error: the
                            ** provider holds a different request under
                            ** this key: a person decides, never a new key */
  OB__ANSWER_REPLAYED_ERROR = 8 /* a 5xx the provider saved for this key and
                            ** replays (Idempotent-Replayed): repeating
                            ** cannot change it: a person decides */
} ob__fence_answer_t;

/* One effect in hand. Strings are malloc'd; free with ob__effect_job_free. */
typedef struct ob__effect_job_s {
  char* key;
  char* idempotency_key;
  char* provider;
  char* method;
  char* path;
  char* body;
  size_t body_len;
  char* lookup_path;   /* the provider's for this lookup; NULL: none */
  char* lookup_reference;  /* the effect's business reference, or NULL */
  char* currency;      /* the effect's amount and currency (the running */
  int64_t amount;      /* totals of docs/offline.md); NULL and 0: none */
  int lookup;          /* the action now: 0 make the call, 1 look the key
                       ** up, 2 look the business reference up */
  char token[OB_UUID_BUFLEN];      /* the lease */
  ob_effect_state_t state;  /* OB_EFFECT_PENDING or _UNKNOWN when taken */
  int attempts;        /* failed attempts so far */
  int lookups_made;    /* lookups answered "absent" before this call */
  int fresh;           /* certainly never sent before this attempt */
  int first_call;      /* no call was handed out before this job: a call it
                       ** makes records the effect's first */
  ob__fence_answer_t outcome;  /* after ob__effect_settle: the answer seen */
} ob__effect_job_t;

/* The call as ob_effect_call_t (pointers into job). */
void ob__effect_job_call(const ob__effect_job_t* job, ob_effect_call_t* call);
void ob__effect_job_free(ob__effect_job_t* job);

/*
** Take up to max due effects of `provider` (NULL: every registered one)
** under a lease of the provider's lease_ms. An effect that may have been
** sent to a provider with neither idempotency keys nor a lookup is parked
** here (its waiting messages move to the failure store) and not returned.
** Returns the number of jobs filled (free each), or a negative code.
*/
int ob__effect_take(ob_engine_t* e, const char* provider, int max,
                    ob__effect_job_t* jobs);

/*
** Record the answer to job in one transaction; a confirmed or failed
** outcome re-runs the messages waiting on the effect in that same
** transaction (res, may be NULL, receives their counters: kick the relay
** when res->handled > 0). Returns:
**   0   recorded (or the lease was lost to another process: nothing to do);
**   1   a lookup found no trace of the key: the call must be made now,
**       job->lookup is 0 and the lease is kept: perform it and settle again;
**   < 0 nothing recorded (storage error): the lease expires and the effect
**       is taken again later.
*/
int ob__effect_settle(ob_engine_t* e, ob__effect_job_t* job,
                      const ob_effect_reply_t* reply, ob_batch_result_t* res);

/* Give the lease back without an answer (shutdown, a call canceled before
** it was sent). The effect keeps its state; it is due again now. */
int ob__effect_release(ob_engine_t* e, const ob__effect_job_t* job);

/* When the next open, unparked effect of provider (NULL: any) is due, on
** the engine clock. OB_ENOTFOUND when there is none. */
int ob__effect_next_due(ob_engine_t* e, const char* provider, int64_t* at);

/* ---- rules (fence_policy.c): pure functions -------------------------------- */

/* The idempotency key of an effect key: a UUID (version 8) made from
** SHA-256("oncebox/fence/v1" NUL key). Stable across retries, restarts,
** replays and devices. Returns 0, or OB_EIO if hashing failed. */
int ob__fence_idempotency_key(const char* key, char out[OB_UUID_BUFLEN]);

typedef enum {
  OB__FENCE_CALL = 1,    /* make (or repeat, with the same key) the call */
  OB__FENCE_LOOKUP = 2,  /* ask the provider whether it saw the key */
  OB__FENCE_PARK = 3,    /* nothing safe to do: a person decides */
  OB__FENCE_PARK_KEY_EXPIRED = 4, /* the provider may have forgotten the
                         ** key: a repeat could act again, a lookup by
                         ** key could say "never seen": a person decides */
  OB__FENCE_LOOKUP_REFERENCE = 5  /* ask the provider what it did for the
                         ** effect's business reference, whatever the key */
} ob__fence_action_t;

/* What is known about an open effect when it is taken. */
typedef struct ob__fence_facts_s {
  int fresh;             /* claimed by this process and never handed to a
                         ** performer: certainly not sent yet */
  int idempotency_keys;  /* the provider honours Idempotency-Key */
  int has_lookup;        /* the provider can look a key up */
  int has_reference_lookup;  /* the provider can look the effect's business
                         ** reference up (and the effect has one) */
  int64_t key_age_ms;    /* since a call with the key may first have
                         ** reached the provider */
  int64_t key_retention_ms;  /* how long the provider keeps keys; 0:
                         ** forever */
} ob__fence_facts_t;

/* What to do with an open effect. */
ob__fence_action_t ob__fence_next_action(const ob__fence_facts_t* f);

/* The age past which a key is no longer used: the retention minus a
** safety margin of an eighth (21 h of Stripe's 24 h), for clocks, a call
** in flight and the provider's own pruning schedule. */
int64_t ob__fence_key_deadline_ms(int64_t key_retention_ms);

/* Classify a reply to a call (lookup 0), a lookup by key (1) or by
** reference (2: 404 or no entry: ABSENT; one entry: CONFIRMED; more:
** CONFLICT). */
ob__fence_answer_t ob__fence_classify(int lookup,
                                      const ob_effect_reply_t* reply);

/* The provider's reference: the top-level "id" string of a JSON body,
** copied into out (NUL-terminated, truncated to outlen - 1). 0 if found,
** -1 if not (out is then ""). */
int ob__fence_reference(const char* body, size_t len, char* out,
                        size_t outlen);

/* The provider's reference in a lookup by reference's answer: the "id" of
** the only entry of a top-level "data" array, or the top-level "id".
** Returns the number of entries found (0, 1, 2 for "more"), or -1 when the
** body is not such an answer. */
int ob__fence_found(const char* body, size_t len, char* out, size_t outlen);

/* A one-line reason for a refusal or an error answer: "402 card_declined:
** Your card was declined." from {"error":{"code","message"}} or
** {"message"}, else the status and the first bytes of the body (control
** characters replaced). Always NUL-terminated. */
void ob__fence_reason(const ob_effect_reply_t* reply, char* out,
                      size_t outlen);

/* Three upper-case letters (provider.c). */
int ob__currency_valid(const char* c);

/* Whether req (a new claim) may be recorded now: 0 yes (online, no amount
** or no limit for it), 1 yes (offline, within the limits), OB_EOFFLINE
** with the reason in why, or a storage error. lock: while offline, take
** the provider and currency's lock before reading the totals (the claim's
** own transaction, provider.c's after_handler). Reads the database in the
** open transaction (provider.c). */
struct ob__provider_s;
int ob__offline_admit(ob_engine_t* e, const struct ob__provider_s* p,
                      const ob_effect_request_t* req, int lock, char* why,
                      size_t whylen);

/* ---- offline limits (fence_policy.c): pure functions (docs/offline.md) -- */

/* What an attempt's answer says of its provider's link: 1 offline (no
** HTTP answer: not sent, a timeout, a lost or malformed reply; or the
** credentials refused, 401/403), 0 online (any other HTTP answer, 5xx
** included: the provider is reachable), -1 nothing (a cancel at
** shutdown). */
int ob__fence_link_answer(const ob_effect_reply_t* reply);

/* The limit of currency among a provider's (NULL: none listed). */
const ob_offline_limit_t* ob__offline_limit_find(const ob_offline_limit_t* l,
                                                 size_t n,
                                                 const char* currency);

/* May a new effect of amount (minor units) in currency be stored while its
** provider is offline, with count effects totalling total already stored
** in that currency? limit NULL: the currency has none, and unlisted
** (OB_OFFLINE_NO_LIMIT or OB_OFFLINE_REFUSE) decides. 0 accepted, or
** OB_EOFFLINE with the limit it would pass in why (always
** NUL-terminated). */
int ob__offline_check(const ob_offline_limit_t* limit, int unlisted,
                      const char* currency, int64_t amount, int64_t count,
                      int64_t total, char* why, size_t whylen);

#endif
