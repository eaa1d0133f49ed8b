/* SPDX-License-Identifier: Apache-2.0 */
/* The fence inside a handler: ob_tx_effect reads the effect in the handling
** transaction and says what the handler must do; the claim itself (and the
** wait) is written after the handler, once its savepoint is rolled back, so
** nothing else the handler wrote commits with it: the engine calls the
** fence's hook for it (provider.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine/engine_int.h"
#include "core/fence/fence.h"
#include "core/util/errbuf.h"
#include "core/util/json_check.h"

/* The component of this file's log records (ob__log). */
#undef OB__LOG_COMPONENT
#define OB__LOG_COMPONENT "fence"

/* 2^53 - 1: an amount any JSON reader holds exactly (decision 0003). */
#define MAX_AMOUNT 9007199254740991LL

static int valid_key(const char* k) {
  size_t n = k ? strlen(k) : 0;
  if (n == 0 || n > OB__EFFECT_KEY_MAX) return 0;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)k[i] < 0x20 || (unsigned char)k[i] > 0x7e) return 0;
  return 1;
}

static int valid_method(const char* m) {
  size_t n = m ? strlen(m) : 0;
  if (n == 0 || n > 16) return 0;
  for (size_t i = 0; i < n; i++)
    if (m[i] < 'A' || m[i] > 'Z') return 0;
  return 1;
}

static int valid_path(const char* p) {
  size_t n = p ? strlen(p) : 0;
  if (n == 0 || n > 2048 || p[0] != '/') return 0;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)p[i] <= 0x20 || (unsigned char)p[i] > 0x7e ||
        p[i] == '#')
      return 0;
  return 1;
}

static int same_request(const ob__effect_row_t* r,
                        const ob_effect_request_t* q) {
  return strcmp(r->provider, q->provider) == 0 &&
         strcmp(r->method, q->method) == 0 && strcmp(r->path, q->path) == 0 &&
         r->request_len == q->body_len &&
         (q->body_len == 0 || memcmp(r->request, q->body, q->body_len) == 0);
}

static char* dup_n(const char* s, size_t n) {
  char* d = malloc(n + 1);
  if (d == NULL) return NULL;
  if (n > 0) memcpy(d, s, n);
  d[n] = '\0';
  return d;
}

static int keep_row(ob_tx_t* tx, ob__effect_row_t* row, ob_effect_t* out) {
  ob__effect_row_t* grown =
      realloc(tx->effect_rows, (tx->neffect_rows + 1) * sizeof *grown);
  if (grown == NULL) {
    ob__effect_row_free(row);
    return OB_ENOMEM;
  }
  tx->effect_rows = grown;
  grown[tx->neffect_rows] = *row;
  if (out) ob__effect_row_view(&grown[tx->neffect_rows], out);
  tx->neffect_rows++;
  return 0;
}

int ob_tx_effect(ob_tx_t* tx, const char* key, const ob_effect_request_t* req,
                 ob_effect_t* out) {
  ob_engine_t* e;
  ob__effect_row_t row;
  int rc;

  if (tx == NULL || tx->e == NULL || req == NULL) return OB_EINVAL;
  if (tx->kind != OB__TX_HANDLER) return OB_ESTATE;  /* ob_read / ob_write */
  e = tx->e;
  /* Before anything is allocated in tx or asked of the engine: from here
  ** on the engine frees it, and writes the claim or the wait, through the
  ** hook. */
  ob__fence_attach(e);
  if (out) memset(out, 0, sizeof *out);
  if (!valid_key(key))
    return ob__db_seterr(&e->db, OB_EINVAL,
                         "effect key must be 1..%d printable ASCII characters",
                         OB__EFFECT_KEY_MAX);
  if (!valid_method(req->method) || !valid_path(req->path) ||
      (req->body == NULL && req->body_len > 0) ||
      (req->body_len > 0 && !ob__json_valid(req->body, req->body_len)) ||
      (req->lookup_reference != NULL && !valid_key(req->lookup_reference)))
    return ob__db_seterr(&e->db, OB_EINVAL,
                         "effect %s: the request needs an upper-case method, "
                         "a path starting with '/' and a JSON body", key);
  /* Minor units as docs/decisions/0003 bounds them, and a currency. */
  if ((req->amount != 0 || req->currency != NULL) &&
      (req->amount < 1 || req->amount > MAX_AMOUNT ||
       !ob__currency_valid(req->currency)))
    return ob__db_seterr(&e->db, OB_EINVAL,
                         "effect %s: an amount needs 1..2^53-1 minor units "
                         "and a currency of three upper-case letters", key);
  rc = ob__effect_get(&e->db, key, &row);
  if (rc == OB_ENOTFOUND) {
    const ob__provider_t* p = ob__provider_find(e, req->provider);
    char why[OB__REASON_LEN];
    /* Only a new claim needs someone to make the call; an effect with an
    ** outcome is read without its provider. */
    if (p == NULL)
      return ob__db_seterr(&e->db, OB_ENOTFOUND,
                           "effect %s: no provider '%s' is configured", key,
                           req->provider ? req->provider : "(null)");
    if (tx->effect_action != OB__TX_EFFECT_NONE)
      return ob__db_seterr(&e->db, OB_ESTATE,
                           "effect %s: a handler run claims one new effect "
                           "and then returns OB_WAIT", key);
    /* Offline limits: an answer for the handler now (the claim's own
    ** transaction checks again under the lock, provider.c). */
    rc = ob__offline_admit(e, p, req, 0, why, sizeof why);
    if (rc == OB_EOFFLINE) {
      ob_log_record_t lr = OB__LOG_RECORD(OB_LOG_INFO, "fence",
                                          "effect_offline_refused");
      lr.error = OB_EOFFLINE;
      e->counters.offline_refused++;
      ob__logr(e, &lr, "effect %s refused: provider %s is offline: %s", key,
               p->name, why);
      return ob__db_seterr(&e->db, OB_EOFFLINE,
                           "effect %s: provider %s is offline: %s", key,
                           p->name, why);
    }
    if (rc < 0) {
      if (ob__is_fatal(rc)) tx->fatal = rc;
      return rc;
    }
    tx->claim_offline = rc == 1;
    tx->claim.provider = strdup(req->provider);
    tx->claim.method = strdup(req->method);
    tx->claim.path = strdup(req->path);
    tx->claim.body = dup_n(req->body ? req->body : "", req->body_len);
    tx->claim.body_len = req->body_len;
    tx->claim.lookup_reference =
        req->lookup_reference ? strdup(req->lookup_reference) : NULL;
    tx->claim.amount = req->currency ? req->amount : 0;
    tx->claim.currency = req->currency ? strdup(req->currency) : NULL;
    tx->effect_action = OB__TX_EFFECT_CLAIM;
    snprintf(tx->effect_key, sizeof tx->effect_key, "%s", key);
    if (!tx->claim.provider || !tx->claim.method || !tx->claim.path ||
        !tx->claim.body ||
        (req->lookup_reference && !tx->claim.lookup_reference) ||
        (req->currency && !tx->claim.currency)) {
      tx->fatal = OB_ENOMEM;
      return OB_ENOMEM;
    }
    return OB_WAIT;
  }
  if (rc < 0) {
    if (ob__is_fatal(rc)) tx->fatal = rc;
    return rc;
  }

  if (!same_request(&row, req)) {
    char why[OB__REASON_LEN];
    ob__errbuf_set(why, sizeof why, 0,
                   "effect %s was claimed by message %s with a different "
                   "request (%s %s); refusing to change it", key,
                   row.message_id, row.method, row.path);
    ob__effect_row_free(&row);
    return ob_tx_fail(tx, why);
  }
  switch (row.state) {
    case OB_EFFECT_CONFIRMED:
      rc = keep_row(tx, &row, out);
      return rc < 0 ? rc : OB_DONE;
    case OB_EFFECT_FAILED: {
      char why[OB__REASON_LEN];
      ob__errbuf_set(why, sizeof why, 0, "effect %s failed at provider %s: %s",
                     key, row.provider,
                     row.reason ? row.reason : "(no reason)");
      rc = keep_row(tx, &row, out);
      if (rc < 0) return rc;
      return ob_tx_fail(tx, why);
    }
    default:
      break;
  }
  snprintf(tx->effect_key, sizeof tx->effect_key, "%s", key);
  if (row.parked_at > 0) {
    char why[OB__REASON_LEN];
    ob__errbuf_set(why, sizeof why, 0,
                   "effect %s is unknown and needs a person: %s; see `oncebox "
                   "effects show --state unknown`, then `effects reconcile` or "
                   "`effects resolve`", key, row.reason ? row.reason : "");
    tx->effect_action = OB__TX_EFFECT_PARKED;
    ob__effect_row_free(&row);
    return ob_tx_fail(tx, why);
  }
  if (tx->effect_action == OB__TX_EFFECT_NONE)
    tx->effect_action = OB__TX_EFFECT_WAIT;
  rc = keep_row(tx, &row, out);
  return rc < 0 ? rc : OB_WAIT;
}
