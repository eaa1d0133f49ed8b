/* SPDX-License-Identifier: Apache-2.0 */
/* Driving effects: take due ones under a lease, record the provider's
** answers, and the operator's verbs (list, reconcile, resolve). A final
** outcome and the re-run of the messages waiting on it share ONE
** transaction: the business rows and the ack commit with the outcome. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine/engine_int.h"
#include "core/fence/fence.h"
#include "core/util/assert.h"
#include "core/util/errbuf.h"
#include "core/util/json_write.h"
#include "core/util/peer_text.h"
#include "core/util/retry.h"
#include "core/util/uuid.h"

#ifdef OB_MUTANT_FENCE_NEW_KEY
#include <unistd.h>
#endif

/* The component of this file's log records (ob__log). */
#undef OB__LOG_COMPONENT
#define OB__LOG_COMPONENT "fence"

#define WAITING_BATCH 64

void ob__effect_job_free(ob__effect_job_t* j) {
  free(j->key);
  free(j->idempotency_key);
  free(j->provider);
  free(j->method);
  free(j->path);
  free(j->body);
  free(j->lookup_path);
  free(j->lookup_reference);
  free(j->currency);
  memset(j, 0, sizeof *j);
}

void ob__effect_job_call(const ob__effect_job_t* j, ob_effect_call_t* c) {
  memset(c, 0, sizeof *c);
  c->key = j->key;
  c->idempotency_key = j->idempotency_key;
  c->provider = j->provider;
  c->lookup = j->lookup;
  c->lookup_path = j->lookup_path;
  c->method = j->method;
  c->path = j->path;
  c->body = j->body;
  c->body_len = j->body_len;
  c->lookup_reference = j->lookup_reference;
}

/* Move the row's strings into the job (the row is left empty). */
static int job_from_row(ob__effect_job_t* j, ob__effect_row_t* r,
                        const ob__provider_t* p, int lookup,
                        const char* token) {
  memset(j, 0, sizeof *j);
  j->key = r->key, r->key = NULL;
  j->idempotency_key = r->idempotency_key, r->idempotency_key = NULL;
  j->provider = r->provider, r->provider = NULL;
  j->method = r->method, r->method = NULL;
  j->path = r->path, r->path = NULL;
  j->body = r->request, r->request = NULL;
  j->body_len = r->request_len;
  {
    const char* path = lookup == 2 ? p->reference_lookup_path : p->lookup_path;
    j->lookup_path = path ? strdup(path) : NULL;
    if (path && j->lookup_path == NULL) {
      ob__effect_job_free(j);
      return OB_ENOMEM;
    }
  }
  j->lookup_reference = r->lookup_reference, r->lookup_reference = NULL;
  j->currency = r->currency, r->currency = NULL;
  j->amount = r->amount;
  j->lookup = lookup;
#ifdef OB_MUTANT_FENCE_NEW_KEY
  /* MUTANT for tests/integration/fence only: a new idempotency key on every
  ** attempt, as a handler that makes one up per call would. Built into a
  ** separate test library; never define it elsewhere. */
  {
    static unsigned n;
    char* k = malloc(64);
    if (k != NULL) {
      snprintf(k, 64, "%.36s-%u-%u", j->idempotency_key, (unsigned)getpid(),
               n++);
      free(j->idempotency_key);
      j->idempotency_key = k;
    }
  }
#endif
  j->state = r->state;
  j->attempts = r->attempts;
  memcpy(j->token, token, OB_UUID_BUFLEN);
  return 0;
}

/* Re-run every message waiting on key (the effect is now final), and bring
** back those that waited in the failure store. Inside the caller's
** transaction. */
static int release_waiting(ob_engine_t* e, const char* key, int64_t now,
                           ob_batch_result_t* res) {
  ob__queue_row_t rows[WAITING_BATCH];
  int n, rc;
  do {
    n = ob__queue_claim_waiting(&e->db, key, WAITING_BATCH, rows);
    if (n < 0) return n;
    rc = 0;
    for (int i = 0; i < n; i++) {
      if (rc >= 0) rc = ob__process_row(e, &rows[i], now, res, NULL);
      ob__queue_row_free(&rows[i]);
    }
    if (rc < 0) return rc;
  } while (n == WAITING_BATCH);
  rc = ob__effect_requeue_failed(&e->db, key, now);
  if (rc > 0)
    ob__log(e, OB_LOG_INFO, "effect %s: %d message(s) back from the failure "
            "store", key, rc);
  return rc < 0 ? rc : 0;
}

static int park(ob_engine_t* e, const ob__effect_row_t* r, const char* cause,
                const char* why, int64_t now) {
  ob__effect_update_t u;
  int rc;
  memset(&u, 0, sizeof u);
  u.state = OB_EFFECT_UNKNOWN;
  u.reason = why;
  u.attempts = r->attempts;
  u.next_attempt_at = now;
  u.parked_at = now;
  u.park_cause = cause;
  rc = ob__effect_update(&e->db, r->key, NULL, &u, now);
  if (rc <= 0) return rc;
  ob__log(e, OB_LOG_WARN, "effect %s parked for a person: %s", r->key, why);
  rc = ob__effect_park_waiting(&e->db, r->key, why, now);
  return rc < 0 ? rc : 0;
}

/* Since a call with the key may first have reached the provider: the
** larger of the wall clock's and the observed clock's reading, so that a
** long shutdown (not observed) and a wall clock set back while running
** (not seen by the wall) both count. -1: no call was ever handed out (the
** lease that hands one out records the time before the call can leave),
** so the key cannot have reached the provider, whatever the claim's age.
** Effects from before schema 9 count from their claim, the safe side. */
static int64_t key_age_ms(const ob_engine_t* e, const ob__effect_row_t* r,
                          int64_t now) {
  int64_t age;
  if (r->first_call_at == 0) return -1;
  age = now - r->first_call_at;
  if (r->first_call_observed_ms > 0) {
    int64_t seen = ob__observed_now(e) - r->first_call_observed_ms;
    if (seen > age) age = seen;
  }
  return age;
}

int ob__effect_take(ob_engine_t* e, const char* provider, int max,
                    ob__effect_job_t* jobs) {
  ob__effect_row_t* rows;
  char token[OB_UUID_BUFLEN];
  int n, got = 0, rc, fresh;
  int64_t now;

  if (max <= 0) return 0;
  ob__deadlines_watch(e);  /* before the transaction: it may write */
  rows = calloc((size_t)max, sizeof *rows);
  if (rows == NULL) return ob__db_seterr(&e->db, OB_ENOMEM, "out of memory");
  /* Leases and parking are recomputed from the effect rows if a power cut
  ** loses them, so this bookkeeping runs at synchronous=NORMAL
  ** (docs/decisions/0009-fence.md). */
  rc = ob__db_begin_relaxed(&e->db);
  if (rc < 0) {
    free(rows);
    return rc;
  }
  now = ob__now(e);
  ob__uuid7_next_at(&e->idgen, e->opts.clock, ob__now(e), token);
  n = ob__effect_due(&e->db, provider, now, max, rows);
  rc = n < 0 ? n : 0;
  for (int i = 0; i < n && rc >= 0; i++) {
    const ob__provider_t* p = ob__provider_find(e, rows[i].provider);
    ob__fence_action_t act;
    if (p == NULL) continue;  /* another process's provider */
    ob__fence_facts_t facts;
    fresh = ob__fresh_take(e, rows[i].key);
    facts.fresh = fresh;
    facts.idempotency_keys = p->idempotency_keys;
    facts.has_lookup = p->lookup_path != NULL;
    facts.has_reference_lookup =
        p->reference_lookup_path != NULL && rows[i].lookup_reference != NULL;
    facts.key_age_ms = key_age_ms(e, &rows[i], now);
    facts.key_retention_ms = p->key_retention_ms;
    act = ob__fence_next_action(&facts);
    if (act == OB__FENCE_PARK) {
      rc = park(e, &rows[i], "no-fence",
                "the call may have reached the provider, which has neither "
                "idempotency keys nor a lookup: only a person can tell",
                now);
      continue;
    }
    if (act == OB__FENCE_PARK_KEY_EXPIRED) {
      char why[OB__REASON_LEN];
      ob__errbuf_set(why, sizeof why, 0,
                     "the provider's idempotency key may have expired: the "
                     "call may have reached it %.1f h ago and it keeps keys "
                     "%.1f h, so a repeat could act again and a lookup "
                     "by key could say \"never seen\"; check the request at "
                     "the provider and resolve the effect",
                     (double)facts.key_age_ms / 3600000.0,
                     (double)p->key_retention_ms / 3600000.0);
      rc = park(e, &rows[i], "key-expired", why, now);
      continue;
    }
    rc = ob__effect_lease(&e->db, rows[i].key, token, now + p->lease_ms, now,
                          act == OB__FENCE_CALL, ob__observed_now(e));
    if (rc == 1)
      rc = job_from_row(&jobs[got], &rows[i], p,
                        act == OB__FENCE_LOOKUP             ? 1
                        : act == OB__FENCE_LOOKUP_REFERENCE ? 2
                                                            : 0,
                        token);
    if (rc == 0 && jobs[got].key != NULL) {
      jobs[got].first_call = rows[i].first_call_at == 0;
      jobs[got++].fresh = fresh;
    }
  }
  for (int i = 0; i < (n > 0 ? n : 0); i++) ob__effect_row_free(&rows[i]);
  free(rows);
  if (rc >= 0) rc = ob__engine_commit(e);
  else ob__engine_rollback(e);
  if (rc < 0) {
    for (int i = 0; i < got; i++) ob__effect_job_free(&jobs[i]);
    return rc;
  }
  /* Tests stop a worker on this line: claimed, leased, not sent. */
  for (int i = 0; i < got; i++)
    ob__log(e, OB_LOG_DEBUG, "effect %s: taken for a %s%s", jobs[i].key,
            jobs[i].lookup == 2 ? "lookup by reference"
            : jobs[i].lookup    ? "lookup"
                                : "call",
            jobs[i].fresh ? " (never sent)" : "");
  return got;
}

/* The stored form of an answer (malloc'd, or NULL for none). */
static char* stored_response(const ob_effect_reply_t* reply, const char* reason,
                             const char* reference, size_t* len) {
  char status[16];
  size_t n = 0;
  char* buf;
  if (reply->body == NULL || reply->status <= 0) return NULL;
  if (reply->status >= 200 && reply->status <= 299)
    return ob__peer_redact(reply->body, reply->body_len, len);
  snprintf(status, sizeof status, "%d", reply->status);
  for (int pass = 0; pass < 2; pass++) {
    buf = pass ? malloc(n + 1) : NULL;
    if (pass && buf == NULL) return NULL;
    n = 0;
    ob__json_put_raw(buf, &n, "{\"status\":");
    ob__json_put_raw(buf, &n, status);
    ob__json_put_raw(buf, &n, ",\"reason\":");
    ob__json_put_str(buf, &n, reason, OB__REASON_LEN);
    if (reference != NULL) {
      ob__json_put_raw(buf, &n, ",\"id\":");
      ob__json_put_str(buf, &n, reference, 256);
    }
    ob__json_put_raw(buf, &n, "}");
  }
  buf[n] = '\0';
  *len = n;
  return buf;
}

int ob__effect_settle(ob_engine_t* e, ob__effect_job_t* job,
                      const ob_effect_reply_t* reply, ob_batch_result_t* res) {
  const ob__provider_t* p = ob__provider_find(e, job->provider);
  ob_batch_result_t local;
  ob__effect_update_t u;
  char reason[OB__REASON_LEN], ref[256];
  char* stored = NULL;
  size_t stored_len = 0;
  int rc, final = 0, parked = 0;
  int64_t now;

  /* Only open effects are taken (ob__effect_due), and a job is settled
  ** once: its state is never final here. */
  OB__ASSERT(job->state == OB_EFFECT_PENDING ||
             job->state == OB_EFFECT_UNKNOWN);
  if (res == NULL) res = &local;
  memset(res, 0, sizeof *res);
  job->outcome = ob__fence_classify(job->lookup, reply);
  if (job->outcome == OB__ANSWER_ABSENT) {
    /* The provider never saw the key: the call is safe to make now, under
    ** a lease renewed for it, so no other process looks the key up (and
    ** finds nothing) while this call is in flight. */
    now = ob__now(e);
    rc = ob__effect_lease_renew(&e->db, job->key, job->token,
                                now + (p ? p->lease_ms : 120000), now);
    if (rc > 0)
      rc = ob__effect_mark_call(&e->db, job->key, job->token, now,
                                ob__observed_now(e));
    /* An answer: the provider is reachable (docs/offline.md). */
    if (rc >= 0) {
      int r2 = ob__effect_link_note(&e->db, job->provider, 0, now);
      if (r2 < 0) return r2;
    }
    if (rc < 0) return rc;
    if (rc == 0) {
      ob__log(e, OB_LOG_INFO, "effect %s: lease lost after the lookup; "
              "not calling", job->key);
      job->outcome = OB__ANSWER_NOT_SENT;
      return 0;
    }
    ob__log(e, job->lookup == 2 ? OB_LOG_INFO : OB_LOG_DEBUG,
            "effect %s: %s found nothing, calling", job->key,
            job->lookup == 2 ? "the lookup by reference (its key may have "
                               "expired)"
                             : "the lookup");
    job->lookups_made++;
    job->lookup = 0;
    return 1;
  }
  now = ob__now(e);
  memset(&u, 0, sizeof u);
  u.state = job->state;
  u.attempts = job->attempts;
  u.next_attempt_at = now;
  u.http_status = reply->status > 0 ? reply->status : 0;
  u.add_calls = !job->lookup && reply->sent;
  u.add_lookups = job->lookups_made + (job->lookup && reply->sent);
  u.provider = job->provider;
  u.currency = job->currency;
  u.amount = job->amount;
  ob__fence_reason(reply, reason, sizeof reason);

  switch (job->outcome) {
    case OB__ANSWER_CONFIRMED:
      final = 1;
      u.state = OB_EFFECT_CONFIRMED;
      u.add_successes = 1;
      u.reason = NULL;
      if ((job->lookup == 2
               ? ob__fence_found(reply->body, reply->body_len, ref,
                                 sizeof ref) == 1
               : ob__fence_reference(reply->body, reply->body_len, ref,
                                     sizeof ref) == 0))
        u.reference = ref;
      u.response = reply->body ? reply->body : "";
      u.response_len = reply->body ? reply->body_len : 0;
      break;
    case OB__ANSWER_FAILED:
      final = 1;
      u.state = OB_EFFECT_FAILED;
      u.reason = reason;
      u.response = reply->body ? reply->body : "";
      u.response_len = reply->body ? reply->body_len : 0;
      break;
    case OB__ANSWER_NOT_SENT:
      /* Nothing reached the provider: the effect is where it was (still
      ** certainly unsent if it was). The performer backs off while the
      ** provider can't be reached. */
      if (job->fresh) ob__fresh_keep(e, job->key);
      /* The key reached no one: its age has not started. */
      u.clear_first_call = job->first_call && !job->lookup;
      u.reason = reason;
      u.next_attempt_at =
          now + (p ? p->retry.delay_ms : e->opts.retry.delay_ms);
      break;
    case OB__ANSWER_IN_FLIGHT: {
      /* The first request with the key still runs at the provider: it has
      ** it, so the outcome is unknown, but asking again later costs no
      ** attempt. The key's age bounds how long (ob__effect_take). */
      int64_t delay;
      const ob_retry_policy_t* pol = p ? &p->retry : &e->opts.retry;
      u.state = OB_EFFECT_UNKNOWN;
      u.reason = reason;
      if (ob__retry_decide(pol, job->attempts, 0, -1, e->opts.clock,
                           &delay) != OB__RETRY_AGAIN)
        delay = pol->delay_ms;
      u.next_attempt_at = now + delay;
      break;
    }
    case OB__ANSWER_CONFLICT:
    case OB__ANSWER_REPLAYED_ERROR: {
      char why[OB__REASON_LEN];
      if (job->outcome == OB__ANSWER_CONFLICT && job->lookup == 2)
        ob__errbuf_set(why, sizeof why, 0,
                       "conflict: the provider has more than one result for "
                       "the reference %s; a person decides which stands",
                       job->lookup_reference ? job->lookup_reference : "?");
      else if (job->outcome == OB__ANSWER_CONFLICT)
        ob__errbuf_set(why, sizeof why, 0,
                       "conflict: the provider holds a different request "
                       "under this idempotency key (another terminal, or "
                       "changed parameters); a person decides: %s", reason);
      else
        ob__errbuf_set(why, sizeof why, 0,
                       "the provider replays an error it saved for this "
                       "key, so repeating cannot change it, and it does "
                       "not say whether money moved; a person decides: %s",
                       reason);
      memcpy(reason, why, sizeof reason);
      parked = 1;
      u.state = OB_EFFECT_UNKNOWN;
      u.reason = reason;
      u.parked_at = now;
      u.park_cause = job->outcome == OB__ANSWER_CONFLICT ? "conflict"
                                                          : "replayed-error";
      u.response = reply->body ? reply->body : "";
      u.response_len = reply->body ? reply->body_len : 0;
      break;
    }
    default: { /* UNKNOWN */
      int64_t delay;
      const ob_retry_policy_t* pol = p ? &p->retry : &e->opts.retry;
      OB__ASSERT(job->outcome == OB__ANSWER_UNKNOWN);  /* ABSENT returned */
      /* A call that may have arrived makes the outcome unknown; a failed
      ** lookup teaches nothing. */
      if (!job->lookup) u.state = OB_EFFECT_UNKNOWN;
      u.reason = reason;
      u.attempts = job->attempts + 1;
      if (ob__retry_decide(pol, job->attempts, 0, -1, e->opts.clock,
                           &delay) != OB__RETRY_AGAIN) {
        parked = 1;
        u.state = OB_EFFECT_UNKNOWN;
        u.parked_at = now;
        u.park_cause = "attempts";
      } else {
        u.next_attempt_at = now + delay;
      }
      break;
    }
  }
  /* What is stored of the answer (effect.response) is what a person needs
  ** and nothing that can carry a secret a peer echoed: a success's body
  ** with credentials redacted (handlers read it), else a summary of the
  ** status and the cleaned reason (docs/security.md). */
  stored = stored_response(reply, reason, u.reference, &stored_len);
  u.response = stored;
  u.response_len = stored ? stored_len : 0;
  /* Final outcomes end the state machine; parking keeps it open. */
  OB__ASSERT(!final || u.state == OB_EFFECT_CONFIRMED ||
             u.state == OB_EFFECT_FAILED);
  OB__ASSERT(!parked || u.state == OB_EFFECT_UNKNOWN);

  /* Tests stop a worker on this line: answered, nothing recorded yet. */
  ob__log(e, OB_LOG_DEBUG, "effect %s: %s answered %d, recording", job->key,
          job->lookup ? "lookup" : "call", reply->status);
  rc = job->outcome == OB__ANSWER_NOT_SENT ? ob__db_begin_relaxed(&e->db)
                                           : ob__db_begin(&e->db);
  if (rc < 0) {
    free(stored);
    return rc;
  }
  now = ob__now(e);
  /* A final answer is recorded even if the lease ran out: it is the truth
  ** about the effect. Anything else only by the lease holder. */
  rc = ob__effect_update(&e->db, job->key, final ? NULL : job->token, &u, now);
  free(stored);  /* bound for that statement only */
  u.response = NULL;
  /* What the attempt says of the provider's link, in the same transaction:
  ** the offline limits read it (docs/offline.md). Only a change writes. */
  if (rc >= 0) {
    int link = ob__fence_link_answer(reply);
    if (link >= 0) {
      int r2 = ob__effect_link_note(&e->db, job->provider, link, now);
      if (r2 < 0) rc = r2;
    }
  }
  if (rc == 0) {
    ob__log(e, OB_LOG_INFO, "effect %s: already settled or taken over; "
            "answer %d not recorded", job->key, reply->status);
  } else if (rc > 0 && final) {
    ob__log(e, OB_LOG_DEBUG, "effect %s %s (%s)", job->key,
            ob_effect_state_name(u.state),
            u.state == OB_EFFECT_CONFIRMED ? (u.reference ? u.reference : "")
                                           : reason);
    rc = release_waiting(e, job->key, now, res);
  } else if (rc > 0 && parked) {
    char why[OB__REASON_LEN];
    if (u.park_cause != NULL && strcmp(u.park_cause, "attempts") != 0)
      ob__errbuf_set(why, sizeof why, 0, "effect %s: %s", job->key, reason);
    else
      ob__errbuf_set(why, sizeof why, 0,
                     "effect %s unknown after %d attempts: %s", job->key,
                     u.attempts, reason);
    ob__log(e, OB_LOG_WARN, "%s; parked for a person", why);
    rc = ob__effect_park_waiting(&e->db, job->key, why, now);
  }
  if (rc >= 0) rc = ob__engine_commit(e);
  else ob__engine_rollback(e);
  if (rc < 0) {
    memset(res, 0, sizeof *res);
    return rc;
  }
  /* The queue changed under the runner (messages handled, parked or back
  ** from the failure store): let it look again now. */
  if ((final || parked) && e->hooks.wake) e->hooks.wake(e);
  /* Tests stop a worker on this line too: the outcome is durable. */
  ob__log(e, OB_LOG_DEBUG, "effect %s: outcome committed (%s, %d message(s) "
          "handled)", job->key, ob_effect_state_name(u.state), res->handled);
  return 0;
}

int ob__effect_release(ob_engine_t* e, const ob__effect_job_t* job) {
  int rc = ob__effect_unlease(&e->db, job->key, job->token, ob__now(e));
  if (job->fresh) ob__fresh_keep(e, job->key);
  return rc < 0 ? rc : 0;
}

int ob__effect_next_due(ob_engine_t* e, const char* provider, int64_t* at) {
  ob__deadlines_watch(e);
  return ob__effect_next_due_db(&e->db, provider, ob__now(e), at);
}

int ob_effects_perform(ob_engine_t* e, ob_effect_perform_cb perform,
                       void* arg, size_t max, size_t* settled) {
  ob__effect_job_t* jobs;
  size_t done = 0;
  int n, rc = 0;

  if (settled) *settled = 0;
  if (e == NULL || perform == NULL) return OB_EINVAL;
  if (e->db.in_tx)
    return ob__db_seterr(&e->db, OB_ESTATE, "effects performed inside a "
                         "handler");
  if (max == 0) return 0;
  if (max > 1000) max = 1000;
  jobs = calloc(max, sizeof *jobs);
  if (jobs == NULL) return OB_ENOMEM;
  n = ob__effect_take(e, NULL, (int)max, jobs);
  if (n < 0) rc = n;
  for (int i = 0; i < n; i++) {
    int s = 1;
    while (rc >= 0 && s == 1) {
      ob_effect_call_t call;
      ob_effect_reply_t reply;
      memset(&reply, 0, sizeof reply);
      ob__effect_job_call(&jobs[i], &call);
      rc = perform(arg, &call, &reply);
      if (rc < 0) break;
      s = rc = ob__effect_settle(e, &jobs[i], &reply, NULL);
    }
    if (rc < 0) {
      (void)ob__effect_release(e, &jobs[i]);
    } else if (jobs[i].outcome == OB__ANSWER_CONFIRMED ||
               jobs[i].outcome == OB__ANSWER_FAILED) {
      done++;
    }
    ob__effect_job_free(&jobs[i]);
  }
  free(jobs);
  if (settled) *settled = done;
  return rc < 0 ? rc : 0;
}

int ob_effect_list(ob_engine_t* e, int state, const char* key,
                   int (*cb)(void* arg, const ob_effect_t* ef), void* arg) {
  if (e == NULL || state < -1 || state > OB_EFFECT_FAILED) return OB_EINVAL;
  return ob__effect_list(&e->db, state, key, cb, arg);
}

int ob_effects_reconcile(ob_engine_t* e, const char* const* keys, size_t n) {
  int rc, total = 0;
  int64_t now;
  if (e == NULL || (keys == NULL && n > 0)) return OB_EINVAL;
  if (e->db.in_tx) return OB_ESTATE;
  rc = ob__db_begin(&e->db);
  if (rc < 0) return rc;
  now = ob__now(e);
  for (size_t i = 0; i < (n ? n : 1) && rc >= 0; i++) {
    rc = ob__effect_reconcile(&e->db, n ? keys[i] : NULL, now);
    if (rc > 0) total += rc;
  }
  if (rc >= 0) rc = ob__db_commit(&e->db);
  else ob__db_rollback(&e->db);
  if (rc < 0) return rc;
  if (total > 0) ob__engine_kick_components(e, NULL);
  return total;
}

int ob_effect_resolve(ob_engine_t* e, const char* key, int state,
                      const char* text) {
  ob__effect_row_t row;
  ob__effect_update_t u;
  ob_batch_result_t res;
  int rc;
  int64_t now;

  memset(&res, 0, sizeof res);
  if (e == NULL || key == NULL || text == NULL || text[0] == '\0' ||
      (state != OB_EFFECT_CONFIRMED && state != OB_EFFECT_FAILED))
    return OB_EINVAL;
  if (e->db.in_tx) return OB_ESTATE;
  rc = ob__db_begin(&e->db);
  if (rc < 0) return rc;
  now = ob__now(e);
  rc = ob__effect_get(&e->db, key, &row);
  if (rc == OB_ENOTFOUND) {
    ob__db_rollback(&e->db);
    return ob__db_seterr(&e->db, OB_ENOTFOUND, "no effect %s", key);
  }
  if (rc < 0) goto fail;
  if (row.state == OB_EFFECT_CONFIRMED || row.state == OB_EFFECT_FAILED) {
    ob__db_seterr(&e->db, OB_ESTATE, "effect %s is already %s", key,
                  ob_effect_state_name(row.state));
    ob__effect_row_free(&row);
    ob__db_rollback(&e->db);
    return OB_ESTATE;
  }
  memset(&u, 0, sizeof u);
  u.state = state;
  u.attempts = row.attempts;
  u.next_attempt_at = now;
  if (state == OB_EFFECT_CONFIRMED) u.reference = text;
  else u.reason = text;
  u.provider = row.provider;
  u.currency = row.currency;
  u.amount = row.amount;
  rc = ob__effect_update(&e->db, key, NULL, &u, now);
  ob__effect_row_free(&row);
  if (rc < 0) goto fail;
  ob__log(e, OB_LOG_WARN, "effect %s resolved by a person: %s (%s)", key,
          ob_effect_state_name(state), text);
  rc = release_waiting(e, key, now, &res);
  if (rc < 0) goto fail;
  rc = ob__engine_commit(e);
  if (rc < 0) return rc;
  if (e->hooks.wake) e->hooks.wake(e);
  if (res.handled > 0) ob__engine_kick_components(e, NULL);
  return 0;
fail:
  ob__engine_rollback(e);
  return rc;
}
