/* SPDX-License-Identifier: Apache-2.0 */
/* The engine: lifecycle, registration, enqueue, and the handling
** transaction. Time comes from opts.clock; all SQL goes through storage/. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine/engine_int.h"
#include "core/engine/modules.h"
#include "core/engine/msg_context.h"
#include "core/util/assert.h"
#include "core/util/errbuf.h"
#include "core/util/json_check.h"
#include "core/util/retry.h"
#include "core/util/uuid.h"

#define DEFAULT_QUEUE "default"
#define MAX_NAME 128
#define MAX_BATCH 10000

void ob_options_init(ob_options_t* o) {
  memset(o, 0, sizeof *o);
  o->synchronous = OB_SYNC_FULL;
  o->busy_timeout_ms = 5000;
  o->batch_size = 1;
  o->retention_ms = 30LL * 24 * 3600 * 1000;
  o->gc_interval_ms = 3600000;
  o->gc_batch = 1000;
  o->poll_interval_ms = 1000;
  o->idle_horizon_ms = OB_IDLE_HORIZON_POLL;
  o->max_body_bytes = 1024 * 1024;
  o->reserve_db_bytes = OB_RESERVE_AUTO;
  ob_retry_policy_init(&o->retry);
  o->log_level = OB_LOG_INFO;
  o->wal_checkpoint_pages = OB__WAL_CHECKPOINT_PAGES;
  o->wal_size_limit_bytes = OB__WAL_SIZE_LIMIT_BYTES;
}

int ob__engine_open(ob_engine_t** out, const ob_options_t* opts,
                    char* errbuf, size_t errlen) {
  return ob__engine_open_fs(out, opts, 0, errbuf, errlen);
}

int ob__engine_open_fs(ob_engine_t** out, const ob_options_t* opts,
                       int64_t fs_bytes, char* errbuf, size_t errlen) {
  ob_engine_t* e;
  int rc;

  if (out == NULL) return OB_EINVAL;
  *out = NULL;
  if (opts == NULL || opts->db_path == NULL || opts->db_path[0] == '\0') {
    return ob__errbuf_set(errbuf, errlen, OB_EINVAL,
                          "options: db_path is required");
  }
  if (opts->batch_size < 1 || opts->batch_size > MAX_BATCH ||
      opts->busy_timeout_ms < 0 || opts->retention_ms < 0 ||
      opts->gc_batch < 1 || opts->poll_interval_ms < 1 ||
      opts->idle_horizon_ms < OB_IDLE_HORIZON_POLL ||
      opts->gc_interval_ms < 1 || opts->max_body_bytes == 0 ||
      (opts->max_db_bytes < 0 && opts->max_db_bytes != OB_NO_DB_CAP) ||
      (opts->reserve_db_bytes != OB_RESERVE_AUTO &&
       (opts->reserve_db_bytes < 0 ||
        (opts->max_db_bytes > 0 &&
         opts->reserve_db_bytes > opts->max_db_bytes / 2))) ||
      ob__retry_policy_check(&opts->retry) != 0 ||
      opts->wal_checkpoint_pages < 1 ||
      opts->wal_checkpoint_pages > 1000000 ||
      opts->wal_size_limit_bytes < 0 ||
      (opts->synchronous != OB_SYNC_FULL &&
       opts->synchronous != OB_SYNC_NORMAL)) {
    return ob__errbuf_set(errbuf, errlen, OB_EINVAL,
                          "options: batch_size must be 1..10000, timeouts, "
                          "intervals and retention non-negative, "
                          "reserve_db_bytes at most half of max_db_bytes, "
                          "retry policy valid, wal_checkpoint_pages "
                          "1..1000000, wal_size_limit_bytes non-negative");
  }
  e = calloc(1, sizeof *e);
  if (e == NULL) {
    return ob__errbuf_set(errbuf, errlen, OB_ENOMEM, "out of memory");
  }
  if (opts->clock == NULL) {
    /* ob_open (platform/posix/open.c) puts the system clock here. */
    free(e);
    return ob__errbuf_set(errbuf, errlen, OB_EINVAL, "options: no clock");
  }
  e->opts = *opts;
  ob__log_limit_init(&e->log_limit, OB_LOG_REPEAT_WINDOW_MS);
  e->db_path = strdup(opts->db_path);
  if (e->db_path == NULL) {
    free(e);
    return ob__errbuf_set(errbuf, errlen, OB_ENOMEM, "out of memory");
  }
  e->opts.db_path = e->db_path;
  ob__space_open(e, fs_bytes);
  /* Read during ob_open only: the caller's array need not outlive it. */
  e->opts.migrations = NULL;
  e->opts.nmigrations = 0;
  {
    ob__schema_ext_t ext;
    ext.steps = opts->migrations;
    ext.n = opts->nmigrations;
    ext.adopt = opts->adopt_existing;
    ext.now_ms = opts->clock->now_ms(opts->clock->ctx);
    rc = ob__db_open_ext(&e->db, e->db_path, opts->synchronous,
                         opts->busy_timeout_ms, e->opts.max_db_bytes, &ext);
  }
  /* PostgreSQL's space is its operator's: no cap, derived or not. */
  if (rc == 0 && ob__db_is_postgresql(&e->db) &&
      e->cap_source != OB_CAP_NONE) {
    e->opts.max_db_bytes = 0;
    e->cap_source = OB_CAP_NONE;
  }
  if (rc == 0) rc = ob__space_wal_policy(e, &e->db);
  if (rc < 0) {
    ob__errbuf_set(errbuf, errlen, 0, "%s", e->db.errmsg);
    ob__db_close(&e->db);
    free(e->db_path);
    free(e);
    return rc;
  }
  ob__eclock_open(e);
  e->counters.started_at_ms = ob__now(e);
  ob__observed_init(e);
  ob__deadlines_open(e);
  if (ob__processed_has_legacy(&e->db, &e->dedup_legacy) < 0)
    e->dedup_legacy = 1;  /* the safe side: look for them */
  *out = e;
  return 0;
}

int ob__engine_add_component(ob_engine_t* e, const ob__component_t* c) {
  /* ob_close calls destroy unconditionally; names tell components apart. */
  OB__ASSERT(c != NULL && c->name != NULL && c->destroy != NULL);
  if (e->hooks.runner != NULL) return OB_ESTATE;
  for (size_t i = 0; i < e->ncomponents; i++)
    if (strcmp(e->components[i].name, c->name) == 0) return OB_EEXIST;
  if (e->ncomponents == OB__MAX_COMPONENTS) return OB_ENOMEM;
  e->components[e->ncomponents++] = *c;
  return 0;
}

void ob_close(ob_engine_t* e) {
  if (e == NULL) return;
  if (e->hooks.runner != NULL && e->hooks.close_sync) e->hooks.close_sync(e);
  for (size_t i = 0; i < e->ncomponents; i++)
    e->components[i].destroy(e->components[i].self);
  ob__log_flush(e);  /* the counts of the windows still open */
  ob__db_close(&e->db);
  if (e->fence != NULL) e->fence->close(e);
  ob__engine_modules_free(e);
  ob__space_free(e);
  for (size_t i = 0; i < e->nhandlers; i++) {
    free(e->handlers[i].type);
    free(e->handlers[i].consumer);
  }
  free(e->handlers);
  for (size_t i = 0; i < e->npolicies; i++) free(e->policies[i].queue);
  free(e->policies);
  free(e->db_path);
  free(e);
}

const char* ob_errmsg(const ob_engine_t* e) {
  return e ? e->db.errmsg : "no engine";
}

const ob_options_t* ob_options(const ob_engine_t* e) {
  return &e->opts;
}

/* Printable ASCII, no spaces at either end, 1..max bytes. */
static int valid_name(const char* s, size_t max) {
  size_t n;
  if (s == NULL) return 0;
  n = strlen(s);
  if (n == 0 || n > max || s[0] == ' ' || s[n - 1] == ' ') return 0;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e) return 0;
  return 1;
}

int ob_set_retry_policy(ob_engine_t* e, const char* queue,
                        const ob_retry_policy_t* p) {
  ob__queue_policy_t* grown;
  if (e == NULL || p == NULL || !valid_name(queue, MAX_NAME) ||
      ob__retry_policy_check(p) != 0)
    return OB_EINVAL;
  for (size_t i = 0; i < e->npolicies; i++) {
    if (strcmp(e->policies[i].queue, queue) == 0) {
      e->policies[i].policy = *p;
      return 0;
    }
  }
  grown = realloc(e->policies, (e->npolicies + 1) * sizeof *grown);
  if (grown == NULL) return ob__db_seterr(&e->db, OB_ENOMEM, "out of memory");
  e->policies = grown;
  grown[e->npolicies].queue = strdup(queue);
  if (grown[e->npolicies].queue == NULL)
    return ob__db_seterr(&e->db, OB_ENOMEM, "out of memory");
  grown[e->npolicies].policy = *p;
  e->npolicies++;
  return 0;
}

const ob_retry_policy_t* ob__policy_for(const ob_engine_t* e,
                                        const char* queue) {
  for (size_t i = 0; i < e->npolicies; i++)
    if (strcmp(e->policies[i].queue, queue) == 0) return &e->policies[i].policy;
  return &e->opts.retry;
}

int ob_register(ob_engine_t* e, const char* type, const char* consumer,
                ob_handler_cb handler, void* arg) {
  ob__handler_t* grown;
  if (e == NULL || handler == NULL || !valid_name(type, MAX_NAME) ||
      !valid_name(consumer, MAX_NAME))
    return OB_EINVAL;
  for (size_t i = 0; i < e->nhandlers; i++)
    if (strcmp(e->handlers[i].type, type) == 0 &&
        strcmp(e->handlers[i].consumer, consumer) == 0)
      return OB_EEXIST;
  grown = realloc(e->handlers, (e->nhandlers + 1) * sizeof *grown);
  if (grown == NULL)
    return ob__db_seterr(&e->db, OB_ENOMEM, "out of memory registering %s",
                         type);
  e->handlers = grown;
  grown[e->nhandlers].type = strdup(type);
  grown[e->nhandlers].consumer = strdup(consumer);
  if (!grown[e->nhandlers].type || !grown[e->nhandlers].consumer) {
    free(grown[e->nhandlers].type);
    free(grown[e->nhandlers].consumer);
    return ob__db_seterr(&e->db, OB_ENOMEM, "out of memory registering %s",
                         type);
  }
  grown[e->nhandlers].fn = handler;
  grown[e->nhandlers].arg = arg;
  e->nhandlers++;
  return 0;
}

/* ---- enqueue ------------------------------------------------------------ */

static int validate_envelope(ob_engine_t* e, const ob_envelope_t* env,
                             char id[OB_UUID_BUFLEN]) {
  const char* queue = env->queue ? env->queue : DEFAULT_QUEUE;
  if (env->id == NULL)
    return ob__db_seterr(&e->db, OB_EINVAL,
                         "message id is required (the producer's stable id)");
  if (ob__uuid_normalize(env->id, id) != 0)
    return ob__db_seterr(&e->db, OB_EINVAL,
                         "message id '%.64s' is not a UUID", env->id);
  if (!valid_name(env->type, MAX_NAME))
    return ob__db_seterr(&e->db, OB_EINVAL,
                         "message type must be 1..%d printable ASCII "
                         "characters", MAX_NAME);
  if (!valid_name(queue, MAX_NAME))
    return ob__db_seterr(&e->db, OB_EINVAL,
                         "queue name must be 1..%d printable ASCII characters",
                         MAX_NAME);
  if (env->body == NULL && env->body_len > 0)
    return ob__db_seterr(&e->db, OB_EINVAL, "body is NULL but body_len > 0");
  if (env->body_len > e->opts.max_body_bytes)
    return ob__db_seterr(&e->db, OB_ETOOBIG,
                         "body is %zu bytes, over the %zu-byte limit",
                         env->body_len, e->opts.max_body_bytes);
  if (env->headers != NULL &&
      !ob__json_is_object(env->headers, strlen(env->headers)))
    return ob__db_seterr(&e->db, OB_EINVAL, "headers must be a JSON object");
  /* Bounded so that now + delay can't overflow (~292 years is plenty). */
  if (env->delay_ms < 0 || env->delay_ms > INT64_MAX / 1024)
    return ob__db_seterr(&e->db, OB_EINVAL,
                         "delay_ms must be 0..%lld", (long long)(INT64_MAX / 1024));
  return 0;
}

static int insert_envelope(ob_engine_t* e, const ob_envelope_t* env,
                           const char* id, int64_t now) {
  return ob__queue_insert(&e->db, env->queue ? env->queue : DEFAULT_QUEUE, id,
                          env->type, env->headers, env->body, env->body_len,
                          now + env->delay_ms, now);
}

static size_t envelope_bytes(const ob_envelope_t* env) {
  return env->body_len + (env->headers ? strlen(env->headers) : 0);
}

int ob_enqueue(ob_engine_t* e, const ob_envelope_t* env) {
  char id[OB_UUID_BUFLEN];
  int rc;
  int64_t now;
  if (e == NULL || env == NULL) return OB_EINVAL;
  rc = validate_envelope(e, env, id);
  if (rc < 0) return rc;
  now = ob__now(e);
  /* Inside a handler the message joins the handling transaction, so a
  ** follow-up message commits (or not) with the effect that caused it;
  ** that is handling, which the disk-full policy lets run longer. */
  if (e->db.in_tx) return insert_envelope(e, env, id, now);
  rc = ob__space_admit(e, env->type, envelope_bytes(env));
  if (rc < 0) return rc;
  if (e->db.clock_pending > e->db.clock_stored) {
    /* The engine clock is recorded by a commit (engine_clock.c): an
    ** `oncebox enqueue` process may write nothing else before it exits. */
    rc = ob__db_begin(&e->db);
    if (rc == 0) rc = insert_envelope(e, env, id, now);
    if (rc == 0) rc = ob__db_commit(&e->db);
    else if (e->db.in_tx) ob__db_rollback(&e->db);
  } else {
    rc = insert_envelope(e, env, id, now);  /* autocommit: one transaction */
  }
  if (rc == 0 && e->hooks.wake) e->hooks.wake(e);
  return rc;
}

int ob_envelope_check(ob_engine_t* e, const ob_envelope_t* env) {
  char id[OB_UUID_BUFLEN];
  if (e == NULL || env == NULL) return OB_EINVAL;
  return validate_envelope(e, env, id);
}

int ob_enqueue_many(ob_engine_t* e, const ob_envelope_t* envs, size_t n,
                    int* results) {
  int rc, committed = 0, own_tx;
  int64_t now;
  if (e == NULL || (envs == NULL && n > 0) || results == NULL) return OB_EINVAL;
  own_tx = !e->db.in_tx;
  /* Give space back before the transaction if the level calls for it: a
  ** refusal inside it cannot. */
  if (own_tx && (rc = (int)ob__space_heal(e)) < 0) return rc;
  if (own_tx && (rc = ob__db_begin(&e->db)) < 0) return rc;
  now = ob__now(e);
  for (size_t i = 0; i < n; i++) {
    char id[OB_UUID_BUFLEN];
    results[i] = validate_envelope(e, &envs[i], id);
    if (results[i] < 0) continue;
    /* Each one against the pages this transaction has used so far; a
    ** critical one may still enter after others were refused. */
    if (own_tx &&
        (results[i] = ob__space_admit(e, envs[i].type,
                                      envelope_bytes(&envs[i]))) < 0) {
      if (results[i] != OB_ENOSPC) {
        rc = results[i];
        ob__db_rollback(&e->db);
        return rc;
      }
      continue;
    }
    rc = insert_envelope(e, &envs[i], id, now);
    if (rc < 0) {
      if (own_tx) ob__db_rollback(&e->db);
      return rc;
    }
    committed++;
  }
  if (own_tx) {
    rc = ob__db_commit(&e->db);
    if (rc < 0) return rc;
    if (committed > 0 && e->hooks.wake) e->hooks.wake(e);
  }
  return committed;
}

/* ---- the handling transaction ------------------------------------------ */

enum { ROW_DONE, ROW_DUPLICATE, ROW_RETRY, ROW_FAIL, ROW_NO_HANDLER, ROW_WAIT };

/* Run every consumer of the row's type inside the row's savepoint. Returns a
** ROW_* verdict, or a negative code when the whole batch must abort. */
static int run_handlers(ob_engine_t* e, const ob__queue_row_t* r, int64_t now,
                        ob_tx_t* tx, ob_message_t* msg,
                        const ob__msg_context_t* ctx) {
  int ran = 0, found = 0;
  /* The dedup identity: (consumer, id) of a local message, (consumer,
  ** source, id) of an event from SQS (its source resolved once, at the
  ** first handler). Records of schema 9 or earlier keyed the id alone, as
  ** a lower-case UUID: while any is left, a claim also looks for one. */
  int64_t source_ref = r->source ? -2 : OB__SOURCE_LOCAL;
  char legacy_buf[OB_UUID_BUFLEN];
  const char* legacy = NULL;
  OB__ASSERT(e->db.in_tx);  /* handlers run inside the handling transaction */
  if (e->dedup_legacy)
    legacy = r->source == NULL ? r->message_id
             : ob__uuid_normalize(r->message_id, legacy_buf) == 0 ? legacy_buf
                                                                  : NULL;
  memset(msg, 0, sizeof *msg);
  msg->id = r->message_id;
  msg->type = r->type;
  msg->queue = r->queue;
  msg->headers = r->headers;
  msg->body = r->body;
  msg->body_len = r->body_len;
  msg->attempts = r->attempts;
  msg->created_at_ms = r->created_at;
  msg->source = r->source;
  msg->content_type = ctx->content_type;
  msg->traceparent = ctx->traceparent[0] ? ctx->traceparent : NULL;
  msg->tracestate = ctx->tracestate[0] ? ctx->tracestate : NULL;

  for (size_t i = 0; i < e->nhandlers; i++) {
    const ob__handler_t* h = &e->handlers[i];
    int claimed, rc;
    if (strcmp(h->type, r->type) != 0) continue;
    found = 1;
    if (source_ref == -2 &&
        (rc = ob__event_source_ref(&e->db, r->source, &source_ref)) < 0)
      return rc;
#ifdef OB_MUTANT_SPLIT_CLAIM
    /* MUTANT for the crash campaign only (tests/crash; docs/reliability.md,
    ** "Mutants"): the dedup claim commits in a transaction of its own before
    ** the handler runs. Built into a separate test library; never define it elsewhere. */
    if ((claimed = ob__db_release(&e->db)) < 0 ||
        (claimed = ob__db_commit(&e->db)) < 0 ||
        (claimed = ob__processed_claim(&e->db, h->consumer, r->message_id,
                                       source_ref, legacy, now)) < 0 ||
        (rc = ob__db_begin(&e->db)) < 0 || (rc = ob__db_savepoint(&e->db)) < 0)
      return claimed < 0 ? claimed : rc;
#else
    claimed = ob__processed_claim(&e->db, h->consumer, r->message_id,
                                  source_ref, legacy, ob__retention_stamp(e));
#endif
    if (claimed < 0) return claimed;
    if (claimed == 0) continue;  /* this consumer already handled it */
    ran = 1;
    if (e->fence != NULL) e->fence->tx_free(tx);
    memset(tx, 0, sizeof *tx);
    tx->e = e;
    tx->msg = msg;
    tx->retry_delay_ms = -1;
    tx->now = now;
    tx->consumer = h->consumer;
    rc = h->fn(tx, msg, h->arg);
    if (tx->fatal) return tx->fatal;
    if (rc == OB_DONE) continue;
    if (rc == OB_WAIT && (tx->effect_action == OB__TX_EFFECT_CLAIM ||
                          tx->effect_action == OB__TX_EFFECT_WAIT))
      return ROW_WAIT;
    if (rc == OB_WAIT) {
      return ob__errbuf_set(tx->reason, sizeof tx->reason, ROW_RETRY,
                            "%s returned OB_WAIT without waiting for an effect",
                            h->consumer);
    }
    if (rc == OB_UNRECOVERABLE || tx->verdict == OB_UNRECOVERABLE) {
      if (tx->reason[0] == '\0')
        ob__errbuf_set(tx->reason, sizeof tx->reason, 0, "%s: unrecoverable",
                       h->consumer);
      return ROW_FAIL;
    }
    if (rc < 0) {
      /* The handler's own fault (its malloc failed, say): storage's come
      ** through tx->fatal above with their words. */
      if (ob__is_fatal(rc))
        return ob__db_seterr(&e->db, rc, "%s returned %s (%s)", h->consumer,
                             ob_err_name(rc), ob_strerror(rc));
      ob__errbuf_set(tx->reason, sizeof tx->reason, 0, "%s: %s (%s)",
                     h->consumer, ob_strerror(rc), e->db.errmsg);
    } else if (tx->reason[0] == '\0') {
      ob__errbuf_set(tx->reason, sizeof tx->reason, 0, "%s asked for a retry",
                     h->consumer);
    }
    return ROW_RETRY;
  }
  if (!found) return ROW_NO_HANDLER;
  return ran ? ROW_DONE : ROW_DUPLICATE;
}

/* A record about message r (tx: its handler's state; NULL: none). */
static ob_log_record_t msg_record(ob_log_level_t level, const char* event,
                                  const ob__queue_row_t* r, const ob_tx_t* tx,
                                  int error, int64_t duration_ms) {
  ob_log_record_t lr = OB__LOG_RECORD(level, "engine", event);
  lr.message_id = r->message_id;
  lr.type = r->type;
  lr.queue = r->queue;
  lr.consumer = tx != NULL ? tx->consumer : NULL;
  lr.error = error;
  lr.duration_ms = duration_ms;
  return lr;
}

/* Apply the verdict for one row after its savepoint was rolled back. */
static int settle_failure(ob_engine_t* e, const ob__queue_row_t* r,
                          int verdict, const ob_tx_t* tx, int64_t now,
                          ob_batch_result_t* res, int64_t* retry_delay,
                          int64_t duration_ms) {
  const char* cls;
  const char* reason = tx->reason;
  char buf[OB__REASON_LEN];
  ob_log_record_t lr = msg_record(OB_LOG_WARN, "message_failed", r, tx,
                                  verdict == ROW_NO_HANDLER ? OB_ENOHANDLER
                                                            : OB_EHANDLER,
                                  duration_ms);

  OB__ASSERT(verdict == ROW_RETRY || verdict == ROW_FAIL ||
             verdict == ROW_NO_HANDLER);
  if (verdict == ROW_RETRY) {
    int64_t delay;
    const ob_retry_policy_t* p = ob__policy_for(e, r->queue);
    if (ob__retry_decide(p, r->attempts, tx->forced, tx->retry_delay_ms,
                         e->opts.clock, &delay) == OB__RETRY_AGAIN) {
      res->retried++;
      lr.event = "message_retry_scheduled";
      lr.outcome = "retried";
      ob__logr(e, &lr, "message %s (%s): retry %d in %lld ms: %s",
               r->message_id, r->type, r->attempts + 1, (long long)delay,
               reason);
      /* A message from outside (SQS) has no queue row: its transport
      ** redelivers it after the delay. */
      if (r->rowid == 0) {
        *retry_delay = delay;
        return 0;
      }
      return ob__queue_reschedule(&e->db, r->rowid, r->attempts + 1,
                                  now + delay,
                                  r->first_failed_at ? r->first_failed_at : now,
                                  reason, now);
    }
    cls = "retries_exhausted";
    ob__errbuf_set(buf, sizeof buf, 0, "gave up after %d retries: %s",
                   r->attempts, reason);
    reason = buf;
  } else if (verdict == ROW_NO_HANDLER) {
    cls = "no_handler";
    ob__errbuf_set(buf, sizeof buf, 0, "no handler registered for type '%s'",
                   r->type);
    reason = buf;
  } else if (tx->effect_action == OB__TX_EFFECT_PARKED) {
    /* Resolving the effect brings the message back (ob_effect_resolve). */
    res->failed++;
    lr.event = "message_failed";
    lr.outcome = "effect_unknown";
    ob__logr(e, &lr, "message %s (%s) waits in the failure store for "
             "effect %s: %s", r->message_id, r->type, tx->effect_key, reason);
    return ob__failed_insert_effect(&e->db, r, "effect_unknown", reason,
                                    r->attempts, tx->effect_key, now);
  } else {
    cls = "unrecoverable";
  }
  if (r->rowid == 0 && e->leave_failures) {
    /* Its transport keeps it (SQS: its redrive policy moves it to the
    ** dead-letter queue); nothing of it is stored here. */
    e->left_to_source = 1;
    lr.outcome = "left_to_transport";
    ob__logr(e, &lr, "message %s (%s) failed for good (%s: %s); left "
             "to its transport", r->message_id, r->type, cls, reason);
    return 0;
  }
  res->failed++;
  lr.outcome = cls;  /* retries_exhausted, no_handler, unrecoverable */
  ob__logr(e, &lr, "message %s (%s) moved to the failure store: %s",
           r->message_id, r->type, reason);
  return ob__failed_insert(&e->db, r, cls, reason, r->attempts, now);
}

/* One message inside the open transaction, in a savepoint of its own (see
** ob__process_row), with the handler's tx state in *tx. */
static int process_row_tx(ob_engine_t* e, const ob__queue_row_t* r,
                          int64_t now, ob_batch_result_t* res,
                          int64_t* retry_delay, ob_tx_t* tx,
                          const ob__msg_context_t* ctx) {
  ob_message_t msg;
  int verdict, rc;
  /* The handling time is read only when a debug record may carry it. */
  int timed = ob__log_on(e, OB_LOG_DEBUG);
  int64_t t0 = timed ? ob__engine_steady_ms(e) : 0, took = -1;

  res->claimed++;
  rc = ob__db_savepoint(&e->db);
  if (rc < 0) return rc;
  verdict = run_handlers(e, r, now, tx, &msg, ctx);
  if (verdict < 0) return verdict;
  if (timed) took = ob__engine_steady_ms(e) - t0;
  if (verdict == ROW_WAIT) {
    /* Only the effect's claim and the wait commit: the handler's writes and
    ** the dedup record are undone, and it runs again with the outcome. */
    rc = ob__db_rollback_to(&e->db);
    if (rc < 0) return rc;
    /* ROW_WAIT comes only from ob_tx_effect, which installed the hook. */
    OB__ASSERT(e->fence != NULL);
    rc = e->fence->after_handler(e, tx, r, now);
    /* The claim passed an offline limit once under its lock (another
    ** process's claim committed first): refused as ob_tx_effect would
    ** have, a retry of this message alone, nothing of it written. */
    if (rc == OB_EOFFLINE)
      return settle_failure(e, r, ROW_RETRY, tx, now, res, retry_delay, took);
    if (rc < 0) return rc;
    res->waiting++;
    if (timed) {
      ob_log_record_t lr = msg_record(OB_LOG_DEBUG, "message_waiting", r, tx,
                                      0, took);
      lr.outcome = "waiting";
      ob__logr(e, &lr, "message %s (%s) waits for effect %s", r->message_id,
               r->type, tx->effect_key);
    }
    return 0;
  }
  if (verdict == ROW_DONE || verdict == ROW_DUPLICATE) {
    if (r->rowid > 0 && (rc = ob__queue_delete(&e->db, r->rowid)) < 0) return rc;
    rc = ob__db_release(&e->db);
    if (rc < 0) return rc;
    if (verdict == ROW_DONE) {
      res->handled++;
    } else {
      res->duplicates++;
    }
    if (timed) {
      /* Logged when its savepoint is released: should the batch's commit
      ** fail, a batch_rolled_back error follows and it is handled again. */
      int done = verdict == ROW_DONE;
      ob_log_record_t lr = msg_record(OB_LOG_DEBUG,
                                      done ? "message_handled"
                                           : "message_duplicate",
                                      r, done ? tx : NULL, 0, took);
      lr.outcome = done ? "done" : "duplicate";
      if (done)
        ob__logr(e, &lr, "message %s (%s) handled in %lld ms", r->message_id,
                 r->type, (long long)took);
      else
        ob__logr(e, &lr, "message %s (%s): duplicate, acked", r->message_id,
                 r->type);
    }
    return 0;
  }
  /* Undo everything the handlers wrote, then record the outcome. */
  rc = ob__db_rollback_to(&e->db);
  if (rc < 0) return rc;
  return settle_failure(e, r, verdict, tx, now, res, retry_delay, took);
}

int ob__process_row(ob_engine_t* e, const ob__queue_row_t* r, int64_t now,
                    ob_batch_result_t* res, int64_t* retry_delay) {
  ob_tx_t tx;
  ob__msg_context_t ctx;
  int rc;
  memset(&tx, 0, sizeof tx);
  if (ob__msg_context_read(&ctx, r->headers) != 0)
    return ob__db_seterr(&e->db, OB_ENOMEM, "out of memory");
  rc = process_row_tx(e, r, now, res, retry_delay, &tx, &ctx);
  if (e->fence != NULL) e->fence->tx_free(&tx);
  ob__msg_context_free(&ctx);
  return rc;
}

int ob__handle_external(ob_engine_t* e, const ob__queue_row_t* r,
                        int leave_failures, ob_batch_result_t* res,
                        int64_t* retry_delay, int* left) {
  int rc;
  int64_t now;
  memset(res, 0, sizeof *res);
  *retry_delay = -1;
  *left = 0;
  if (e->db.in_tx)
    return ob__db_seterr(&e->db, OB_ESTATE, "handling inside a handler");
  /* A message from SQS is new work: it stays with its transport while
  ** the disk-full policy refuses its type. */
  rc = ob__space_admit(e, r->type, r->body_len);
  if (rc < 0) return rc;
  rc = ob__db_begin(&e->db);
  if (rc < 0) {
    ob__counters_write_error(e, rc);
    return rc;
  }
  now = ob__now(e);
  if (r->group_key != NULL && (rc = ob__queue_group_busy(&e->db,
                                                         r->group_key)) != 0) {
    /* An earlier message of its FIFO group is still in the local queue
    ** (waiting for an effect, or held behind one): this one waits behind
    ** it, in order, and its transport can forget it once this commits. */
    if (rc > 0) rc = ob__queue_insert_held(&e->db, r, now);
    if (rc == 0) {
      res->claimed = res->waiting = 1;
      ob__log(e, OB_LOG_DEBUG, "message %s (%s) queued behind its group",
              r->message_id, r->type);
    }
  } else {
    e->leave_failures = leave_failures;
    e->left_to_source = 0;
    rc = ob__process_row(e, r, now, res, retry_delay);
    e->leave_failures = 0;
    *left = e->left_to_source;
  }
  if (rc < 0 || *left) {
    ob__engine_rollback(e);
    memset(res, 0, sizeof *res);
    *retry_delay = -1;
    if (rc < 0) {
      ob__counters_write_error(e, rc);
      return rc;
    }
    /* Failed for good, left to its transport's redrive: an outcome. */
    res->failed = 1;
    ob__counters_batch(e, OB_INPUT_SQS, res);
    memset(res, 0, sizeof *res);
    return 0;
  }
  rc = ob__engine_commit(e);
  if (rc < 0) {
    ob__counters_write_error(e, rc);
    memset(res, 0, sizeof *res);
    *retry_delay = -1;
    return rc;
  }
  ob__counters_batch(e, OB_INPUT_SQS, res);
  return 0;
}

/* The drivers' form of ob__handle_external (engine_host.h): here, not in
** host.c, so that host.c stays accessors that call nothing back. */
int ob__engine_handle_external(ob_engine_t* e, const ob__external_msg_t* m,
                               ob_batch_result_t* res, int64_t* retry_delay,
                               int* left) {
  ob__queue_row_t r;
  memset(&r, 0, sizeof r);
  r.queue = (char*)m->queue;
  r.message_id = (char*)m->message_id;
  r.type = (char*)m->type;
  r.headers = (char*)m->headers;
  r.body = (char*)m->body;
  r.body_len = m->body_len;
  r.attempts = m->attempts;
  r.created_at = m->created_at;
  r.source = (char*)m->source;
  r.group_key = (char*)m->group_key;
  return ob__handle_external(e, &r, m->failures_to_source, res, retry_delay,
                             left);
}

int ob_run_once(ob_engine_t* e, ob_batch_result_t* res_out) {
  ob_batch_result_t res;
  ob__queue_row_t* rows;
  int n, rc, max;
  int64_t now;

  memset(&res, 0, sizeof res);
  if (res_out) *res_out = res;
  if (e == NULL) return OB_EINVAL;
  if (e->db.in_tx)
    return ob__db_seterr(&e->db, OB_ESTATE,
                         "ob_run_once called inside a handler");
  max = e->opts.batch_size;
  OB__ASSERT(max >= 1 && max <= MAX_BATCH);  /* checked by ob_open */
  rows = calloc((size_t)max, sizeof *rows);
  if (rows == NULL) return ob__db_seterr(&e->db, OB_ENOMEM, "out of memory");

  /* Look before taking the write lock: an idle engine must not hold up
  ** other processes' writers (or wait busy_timeout for them) just to find
  ** nothing to do. */
  ob__deadlines_watch(e);
  now = ob__now(e);
  {
    int64_t at;
    rc = ob__queue_next_due(&e->db, &at);
    if (rc == OB_ENOTFOUND || (rc == 0 && at > now)) {
      rc = 0;
      goto out;
    }
  }
  rc = ob__space_may_handle(e);
  if (rc < 0) goto out;
  rc = ob__db_begin(&e->db);
  if (rc < 0) {
    ob__counters_write_error(e, rc);
    goto out;
  }
  now = ob__now(e);
  n = ob__queue_claim_ready(&e->db, now, max, rows);
  if (n <= 0) {
    rc = n;
    ob__db_rollback(&e->db);
    if (rc < 0) ob__counters_write_error(e, rc);
    goto out;
  }
  for (int i = 0; i < n; i++) {
    /* A stop request between messages: the rest stay queued, untouched. */
    if (e->stopping && res.claimed > 0) break;
    rc = ob__process_row(e, &rows[i], now, &res, NULL);
    if (rc < 0) goto abort;
  }
  rc = ob__engine_commit(e);
  if (rc < 0) {
    ob__counters_write_error(e, rc);
    ob_log_record_t lr = OB__LOG_RECORD(OB_LOG_ERROR, "engine",
                                        "batch_rolled_back");
    lr.error = rc;
    ob__logr(e, &lr, "batch of %d message(s) rolled back: the commit "
             "failed: %s", res.claimed, e->db.errmsg);
    memset(&res, 0, sizeof res);
    goto out;
  }
  ob__counters_batch(e, OB_INPUT_QUEUE, &res);
  if (res_out) *res_out = res;
  rc = 0;
  goto out;

abort:
  {
    ob_log_record_t lr = OB__LOG_RECORD(OB_LOG_ERROR, "engine",
                                        "batch_rolled_back");
    lr.error = rc;
    ob__logr(e, &lr, "batch rolled back: %s", e->db.errmsg);
  }
  ob__counters_write_error(e, rc);
  ob__engine_rollback(e);
out:
  for (int i = 0; i < max; i++) ob__queue_row_free(&rows[i]);
  free(rows);
  return rc;
}

int ob_next_due(ob_engine_t* e, int64_t* at_ms) {
  if (e == NULL || at_ms == NULL) return OB_EINVAL;
  ob__deadlines_watch(e);
  return ob__queue_next_due(&e->db, at_ms);
}

void ob_stop(ob_engine_t* e) {
  if (e == NULL) return;
  e->stopping = 1;
  if (e->hooks.on_stop) e->hooks.on_stop(e);
}

/* ---- operations --------------------------------------------------------- */

int ob_failed_list(ob_engine_t* e, int64_t id, const char* type,
                   int (*cb)(void* arg, const ob_failed_t* f), void* arg) {
  if (e == NULL) return OB_EINVAL;
  return ob__failed_list(&e->db, id, type, cb, arg);
}

int ob_failed_retry(ob_engine_t* e, int64_t id) {
  int rc;
  if (e == NULL || id < 0) return OB_EINVAL;
  rc = ob__failed_retry(&e->db, id, ob__now(e));
  if (rc > 0 && e->hooks.wake) e->hooks.wake(e);
  return rc;
}

int ob_failed_remove(ob_engine_t* e, int64_t id) {
  if (e == NULL || id < 0) return OB_EINVAL;
  return ob__failed_remove(&e->db, id);
}

static int filter_ok(const ob_failed_filter_t* fl) {
  return fl == NULL || (fl->limit >= 0 && fl->failed_after_ms >= 0 &&
                        fl->failed_before_ms >= 0);
}

int ob_failed_list_filter(ob_engine_t* e, const ob_failed_filter_t* filter,
                          int (*cb)(void* arg, const ob_failed_t* f),
                          void* arg) {
  if (e == NULL || !filter_ok(filter)) return OB_EINVAL;
  return ob__failed_list_filter(&e->db, filter, cb, arg);
}

int ob_failed_count(ob_engine_t* e, const ob_failed_filter_t* filter) {
  if (e == NULL || !filter_ok(filter)) return OB_EINVAL;
  return ob__failed_count(&e->db, filter);
}

int ob_failed_retry_filter(ob_engine_t* e, const ob_failed_filter_t* filter,
                           int batch, ob_failed_progress_fn progress,
                           void* arg) {
  int rc;
  if (e == NULL || batch < 0 || !filter_ok(filter)) return OB_EINVAL;
  rc = ob__failed_apply_filter(&e->db, 1, filter, batch, ob__now(e), progress,
                               arg);
  if (rc > 0 && e->hooks.wake) e->hooks.wake(e);
  return rc;
}

int ob_failed_remove_filter(ob_engine_t* e, const ob_failed_filter_t* filter,
                            int batch, ob_failed_progress_fn progress,
                            void* arg) {
  if (e == NULL || batch < 0 || !filter_ok(filter)) return OB_EINVAL;
  return ob__failed_apply_filter(&e->db, 0, filter, batch, 0, progress, arg);
}

int ob_stats(ob_engine_t* e, ob_stats_t* s) {
  int rc;
  if (e == NULL || s == NULL) return OB_EINVAL;
  rc = ob__stats(&e->db, ob__now(e), s);
  return rc < 0 ? rc : ob__space_stats(e, s);
}

int ob_check(ob_engine_t* e, void (*cb)(void* arg, const char* v), void* arg) {
  int rc, n;
  if (e == NULL) return OB_EINVAL;
  /* One read transaction: the modules' checks see what the generic ones
  ** saw. */
  rc = ob__db_begin_read(&e->db);
  if (rc < 0) return rc;
  n = ob__check(&e->db, cb, arg);
  if (n >= 0) {
    rc = ob__engine_run_checks(e, cb, arg);
    n = rc < 0 ? rc : n + rc;
  }
  ob__db_rollback(&e->db);
  return n;
}
