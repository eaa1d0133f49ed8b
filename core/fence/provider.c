/* SPDX-License-Identifier: Apache-2.0 */
/* Effect providers: their capabilities; the set of fresh claims (keys
** claimed by this process and certainly not sent yet); and the fence's hook
** on the engine (engine_int.h, ob__fence_hook_t), installed the first time
** the fence is used, through which the engine writes a handler's claim or
** wait and keeps the fresh set in step with its commits. The hook lives
** here, with the state it keeps, so that effect_tx.c and effect_drive.c
** call down into this file and nothing in core/fence is called back. */
#include <stdlib.h>
#include <string.h>

#include "core/engine/engine_int.h"
#include "core/fence/fence.h"
#include "core/util/errbuf.h"
#include "core/util/link.h"
#include "core/util/retry.h"

/* The component of this file's log records (ob__log). */
#undef OB__LOG_COMPONENT
#define OB__LOG_COMPONENT "fence"

void ob_provider_options_init(ob_provider_options_t* o) {
  memset(o, 0, sizeof *o);
  o->idempotency_keys = 1;
  o->timeout_ms = 30000;
  o->max_in_flight = 4;
  o->lease_ms = 120000;
  o->key_retention_ms = 24LL * 3600 * 1000;
  ob_retry_policy_init(&o->retry);
  ob__probe_options_init(&o->probe, 60000);
}

static int printable(const char* s, size_t max) {
  size_t n = s ? strlen(s) : 0;
  if (n == 0 || n > max) return 0;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] > 0x7e) return 0;
  return 1;
}

int ob_provider_register(ob_engine_t* e, const ob_provider_options_t* o) {
  ob__provider_t* p;
  if (e == NULL || o == NULL) return OB_EINVAL;
  if (!printable(o->name, 64))
    return ob__db_seterr(&e->db, OB_EINVAL,
                         "provider name must be 1..64 printable characters");
  if (o->lookup_path != NULL &&
      (o->lookup_path[0] != '/' || !printable(o->lookup_path, 1024)))
    return ob__db_seterr(&e->db, OB_EINVAL,
                         "provider lookup_path must start with '/' and have "
                         "no spaces or control characters");
  if (o->reference_lookup_path != NULL &&
      (o->reference_lookup_path[0] != '/' ||
       !printable(o->reference_lookup_path, 1024)))
    return ob__db_seterr(&e->db, OB_EINVAL,
                         "provider reference_lookup_path must start with '/' "
                         "and have no spaces or control characters");
  if (o->lease_ms < 1000 || o->timeout_ms < 1 || o->max_in_flight < 1 ||
      ob__retry_policy_check(&o->retry) != 0)
    return ob__db_seterr(&e->db, OB_EINVAL,
                         "provider %s: lease_ms must be >= 1000, timeout_ms "
                         "and max_in_flight >= 1, retry policy valid",
                         o->name);
  /* Under an hour leaves no room for a call, its retries and the margin. */
  if (o->key_retention_ms != 0 && o->key_retention_ms < 3600 * 1000)
    return ob__db_seterr(&e->db, OB_EINVAL,
                         "provider %s: key_retention_ms must be 0 (keys kept "
                         "forever) or at least 3600000 (1 h)", o->name);
  if (o->noffline_limits > OB__MAX_OFFLINE_LIMITS ||
      (o->noffline_limits > 0 && o->offline_limits == NULL) ||
      (o->offline_unlisted != OB_OFFLINE_NO_LIMIT &&
       o->offline_unlisted != OB_OFFLINE_REFUSE))
    return ob__db_seterr(&e->db, OB_EINVAL,
                         "provider %s: offline limits: at most %d currencies, "
                         "offline_unlisted OB_OFFLINE_NO_LIMIT or "
                         "OB_OFFLINE_REFUSE", o->name, OB__MAX_OFFLINE_LIMITS);
  for (size_t i = 0; i < o->noffline_limits; i++) {
    const ob_offline_limit_t* l = &o->offline_limits[i];
    if (!ob__currency_valid(l->currency) || l->max_amount < 0 ||
        l->max_total < 0 || l->max_count < 0 || l->max_age_ms < 0 ||
        ob__offline_limit_find(o->offline_limits, i, l->currency) != NULL)
      return ob__db_seterr(&e->db, OB_EINVAL,
                           "provider %s: offline limit %zu: a currency of "
                           "three upper-case letters, once, and no negative "
                           "figure", o->name, i + 1);
  }
  if (ob__provider_find(e, o->name) != NULL)
    return ob__db_seterr(&e->db, OB_EEXIST, "provider %s is already "
                         "registered", o->name);
  if (e->nproviders == OB__MAX_PROVIDERS)
    return ob__db_seterr(&e->db, OB_ENOMEM, "too many providers");
  ob__fence_attach(e);  /* ob_close frees the providers through it */
  p = &e->providers[e->nproviders];
  memset(p, 0, sizeof *p);
  p->name = strdup(o->name);
  p->lookup_path = o->lookup_path ? strdup(o->lookup_path) : NULL;
  p->reference_lookup_path =
      o->reference_lookup_path ? strdup(o->reference_lookup_path) : NULL;
  if (p->name == NULL || (o->lookup_path && p->lookup_path == NULL) ||
      (o->reference_lookup_path && p->reference_lookup_path == NULL)) {
    free(p->name);
    free(p->lookup_path);
    free(p->reference_lookup_path);
    return OB_ENOMEM;
  }
  p->idempotency_keys = o->idempotency_keys != 0;
  p->lease_ms = o->lease_ms;
  p->retry = o->retry;
  p->key_retention_ms = o->key_retention_ms;
  p->offline_unlisted = o->offline_unlisted;
  if (o->noffline_limits > 0) {
    p->offline_limits = calloc(o->noffline_limits, sizeof *p->offline_limits);
    if (p->offline_limits == NULL) {
      free(p->name);
      free(p->lookup_path);
      free(p->reference_lookup_path);
      return OB_ENOMEM;
    }
    p->noffline_limits = o->noffline_limits;
    for (size_t i = 0; i < o->noffline_limits; i++) {
      /* Three letters, checked above: copied into the entry's own. */
      p->offline_limits[i] = o->offline_limits[i];
      memcpy(p->offline_currency[i], o->offline_limits[i].currency, 4);
      p->offline_limits[i].currency = p->offline_currency[i];
    }
  }
  e->nproviders++;
  return 0;
}

int ob__currency_valid(const char* c) {
  if (c == NULL || strlen(c) != 3) return 0;
  for (int i = 0; i < 3; i++)
    if (c[i] < 'A' || c[i] > 'Z') return 0;
  return 1;
}

int ob__offline_admit(ob_engine_t* e, const ob__provider_t* p,
                      const ob_effect_request_t* req, int lock, char* why,
                      size_t whylen) {
  const ob_offline_limit_t* l;
  int64_t since, count, total;
  int rc;
  if (whylen > 0) why[0] = '\0';
  /* Without an amount an effect is neither limited nor stored. */
  if (req->amount <= 0 || req->currency == NULL) return 0;
  l = ob__offline_limit_find(p->offline_limits, p->noffline_limits,
                             req->currency);
  if (l == NULL && p->offline_unlisted == OB_OFFLINE_NO_LIMIT) return 0;
  rc = ob__effect_link_get(&e->db, p->name, &since);
  if (rc < 0) return rc;
  /* Online: not limited, and no lock (a claim the link's fall overtakes
  ** is one made just before it). */
  if (since == 0) return 0;
  /* The lock before the totals are read: a claim that waited for
  ** another's sees them with it. */
  if (lock && (rc = ob__effect_stored_lock(&e->db, p->name,
                                           req->currency)) < 0)
    return rc;
  rc = ob__effect_stored_get(&e->db, p->name, req->currency, &count, &total);
  if (rc < 0) return rc;
  rc = ob__offline_check(l, p->offline_unlisted, req->currency, req->amount,
                         count, total, why, whylen);
  return rc < 0 ? rc : 1;
}

const ob__provider_t* ob__provider_find(const ob_engine_t* e,
                                        const char* name) {
  for (size_t i = 0; name && i < e->nproviders; i++)
    if (strcmp(e->providers[i].name, name) == 0) return &e->providers[i];
  return NULL;
}

static void providers_free(ob_engine_t* e) {
  for (size_t i = 0; i < e->nproviders; i++) {
    free(e->providers[i].name);
    free(e->providers[i].lookup_path);
    free(e->providers[i].reference_lookup_path);
    free(e->providers[i].offline_limits);
  }
  e->nproviders = 0;
}

void ob__fresh_add(ob_engine_t* e, const char* key) {
  char* k;
  if (e->nfresh == OB__MAX_FRESH) {
    /* Forget the oldest committed one: it will count as "maybe sent". */
    if (e->fresh_committed == 0) return;
    free(e->fresh[0]);
    memmove(e->fresh, e->fresh + 1, (e->nfresh - 1) * sizeof e->fresh[0]);
    e->nfresh--;
    e->fresh_committed--;
  }
  k = strdup(key);
  if (k != NULL) e->fresh[e->nfresh++] = k;
}

int ob__fresh_take(ob_engine_t* e, const char* key) {
  for (size_t i = 0; i < e->fresh_committed; i++) {
    if (strcmp(e->fresh[i], key) != 0) continue;
    free(e->fresh[i]);
    memmove(e->fresh + i, e->fresh + i + 1,
            (e->nfresh - i - 1) * sizeof e->fresh[0]);
    e->nfresh--;
    e->fresh_committed--;
    return 1;
  }
  return 0;
}

/* Drop the claims that did not commit (all of them once fresh_committed
** is 0, at close). */
static void fresh_free(ob_engine_t* e) {
  while (e->nfresh > e->fresh_committed) free(e->fresh[--e->nfresh]);
}

void ob__fresh_keep(ob_engine_t* e, const char* key) {
  if (e->db.in_tx) return;  /* only between transactions: all committed */
  ob__fresh_add(e, key);
  e->fresh_committed = e->nfresh;
}

/* ---- the fence's hook on the engine -------------------------------------- */

/* A waiting message is re-checked after this even if nothing wakes it; the
** outcome's transaction normally runs it long before. */
#define RECHECK_MS (3600LL * 1000)

/* The claim or the wait ob_tx_effect asked for (ob__fence_hook_t). */
static int after_handler(ob_engine_t* e, ob_tx_t* tx,
                         const ob__queue_row_t* r, int64_t now) {
  int rc;
  if (tx->effect_action == OB__TX_EFFECT_CLAIM) {
    char idem[OB_UUID_BUFLEN];
    const ob__provider_t* p = ob__provider_find(e, tx->claim.provider);
    /* ob_tx_effect checked the limits in the handler's savepoint. If it
    ** found the provider offline, again here, under the provider and
    ** currency's lock (PostgreSQL: another host's claim may have committed
    ** since), before anything is written; a refusal now is the handler's:
    ** a retry of this message alone. Found online, the claim is an online
    ** one, made before any fall of the link since: not limited. */
    if (p != NULL && tx->claim_offline) {
      char why[OB__REASON_LEN];
      rc = ob__offline_admit(e, p, &tx->claim, 1, why, sizeof why);
      if (rc == OB_EOFFLINE) {
        ob_log_record_t lr = OB__LOG_RECORD(OB_LOG_INFO, "fence",
                                            "effect_offline_refused");
        lr.error = OB_EOFFLINE;
        e->counters.offline_refused++;
        ob__logr(e, &lr, "effect %s refused at its claim: provider %s is "
                 "offline: %s", tx->effect_key, p->name, why);
        ob__errbuf_set(tx->reason, sizeof tx->reason, 0,
                       "effect %s: provider %s is offline: %s", tx->effect_key,
                       p->name, why);
        return rc;
      }
      if (rc < 0) return rc;
    }
    rc = ob__fence_idempotency_key(tx->effect_key, idem);
    if (rc < 0)
      return ob__db_seterr(&e->db, rc, "effect %s: cannot derive its "
                           "idempotency key", tx->effect_key);
    rc = ob__effect_insert(&e->db, tx->effect_key, idem, &tx->claim,
                           r->message_id, tx->consumer, now);
    if (rc < 0) return rc;
    if (rc == 1) ob__fresh_add(e, tx->effect_key);
  }
  if (r->rowid > 0)
    return ob__queue_wait(&e->db, r->rowid, tx->effect_key, now + RECHECK_MS,
                          now);
  /* From SQS: the message becomes a local queue row, so the transport can
  ** forget it once this commits. */
  return ob__queue_insert_waiting(&e->db, r, tx->effect_key, now + RECHECK_MS,
                                  now);
}

static void tx_free(ob_tx_t* tx) {
  free((char*)tx->claim.provider);
  free((char*)tx->claim.method);
  free((char*)tx->claim.path);
  free((char*)tx->claim.body);
  free((char*)tx->claim.lookup_reference);
  free((char*)tx->claim.currency);
  memset(&tx->claim, 0, sizeof tx->claim);
  for (size_t i = 0; i < tx->neffect_rows; i++)
    ob__effect_row_free(&tx->effect_rows[i]);
  free(tx->effect_rows);
  tx->effect_rows = NULL;
  tx->neffect_rows = 0;
}

static void tx_end(ob_engine_t* e, int committed) {
  if (committed)
    e->fresh_committed = e->nfresh;
  else
    fresh_free(e);
}

static void fence_close(ob_engine_t* e) {
  e->fresh_committed = 0;
  fresh_free(e);
  providers_free(e);
}

static const ob__fence_hook_t fence_hook = {
    .after_handler = after_handler,
    .tx_free = tx_free,
    .tx_end = tx_end,
    .close = fence_close,
};

void ob__fence_attach(ob_engine_t* e) { e->fence = &fence_hook; }
