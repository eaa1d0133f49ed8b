/* SPDX-License-Identifier: Apache-2.0 */
/* The outbox relay's database verbs (relay_tx.h). */
#include <string.h>

#include "core/engine/engine_int.h"
#include "core/relay/relay_policy.h"
#include "core/relay/relay_tx.h"

/* The component of this file's log records (ob__log). */
#undef OB__LOG_COMPONENT
#define OB__LOG_COMPONENT "relay"

static int outside_tx(ob_engine_t* e, const char* what) {
  if (!e->db.in_tx) return 0;
  return ob__db_seterr(&e->db, OB_ESTATE, "relay: %s inside a handler", what);
}

int ob__relay_take(ob_engine_t* e, const char* token, int64_t lease_ms,
                   size_t max, int ordered, const char* const* priority,
                   int npriority, ob__relay_row_t* rows) {
  int64_t now;
  int rc = outside_tx(e, "claim");
  if (rc < 0) return rc;
  ob__deadlines_watch(e);
  now = ob__now(e);
  rc = ob__relay_claim(&e->db, token, now, now + lease_ms, (int)max, ordered,
                       priority, npriority, rows);
#ifdef OB_MUTANT_PUBLISH_BEFORE_2XX
  /* MUTANT for tests/integration/relay only: the claimed rows are marked
  ** published before SQS answered. Built into a separate test library;
  ** never define it elsewhere. */
  for (int i = 0; i < rc; i++)
    (void)ob__relay_mark_published(&e->db, rows[i].id, token, now);
#endif
  return rc;
}

int ob__relay_due_at(ob_engine_t* e, int ordered, int64_t* at) {
  ob__deadlines_watch(e);
  return ob__relay_next_due(&e->db, ob__now(e), ordered, at);
}

int ob__relay_backlog_count(ob_engine_t* e, int64_t* unpublished,
                            int64_t* parked) {
  int rc = outside_tx(e, "backlog count");
  if (rc < 0) return rc;
  return ob__relay_backlog(&e->db, unpublished, parked);
}

int ob__relay_has_pending(ob_engine_t* e, int due_only) {
  int rc = outside_tx(e, "pending check");
  if (rc < 0) return rc;
  ob__deadlines_watch(e);
  return ob__relay_pending(&e->db, ob__now(e), due_only);
}

int ob__relay_give_back(ob_engine_t* e, const char* token) {
  int rc = outside_tx(e, "release");
  if (rc < 0) return rc;
  return ob__relay_release(&e->db, token);
}

int ob__relay_record_status(ob_engine_t* e, int online, int64_t published_at,
                            const char* error) {
  if (e->db.in_tx) return 0;
  return ob__relay_status_set(&e->db, "outbox", online, published_at, error,
                              ob__now(e));
}

int ob__relay_settle(ob_engine_t* e, const char* token,
                     const ob__relay_row_t* rows,
                     const ob__relay_result_t* results, size_t n,
                     int park_after, int64_t backoff_base_ms,
                     int64_t backoff_cap_ms, ob__relay_settled_t* out) {
  int64_t now = ob__now(e);
  int rc, published = 0, parked = 0, lost = 0;

  memset(out, 0, sizeof *out);
  rc = outside_tx(e, "settle");
  if (rc < 0) return rc;
  rc = ob__db_begin_relaxed(&e->db);
  for (size_t i = 0; rc >= 0 && i < n; i++) {
    const ob__relay_row_t* row = &rows[i];
    const ob__relay_result_t* r = &results[i];
    if (r->ok) {
      rc = ob__relay_mark_published(&e->db, row->id, token, now);
      if (rc == 1) published++;
    } else {
      int64_t d = ob__relay_row_backoff(backoff_base_ms, backoff_cap_ms,
                                        row->attempt_count + 1,
                                        e->opts.clock);
      rc = ob__relay_mark_failed(&e->db, row->id, token, now + d, r->error,
                                 r->park ? park_after : 0, now);
      if (rc == 1 && r->park && park_after > 0 &&
          row->attempt_count + 1 >= park_after) {
        parked++;
        ob__log(e, OB_LOG_WARN, "relay: event %s parked after %d "
                "attempts: %s", row->id, row->attempt_count + 1, r->error);
      }
    }
    if (rc == 0) {
      lost++;
      ob__log(e, OB_LOG_DEBUG, "relay: lease on %s was lost", row->id);
    }
  }
  if (rc >= 0 && published > 0)
    rc = ob__relay_status_set(&e->db, "outbox", 1, now, NULL, now);
  if (rc >= 0) rc = ob__db_commit(&e->db);
  else ob__db_rollback(&e->db);
  if (rc < 0) return rc;
  /* Published rows are what a database at its cap can give back: each
  ** settle that published some may heal, past the once-a-second limit
  ** (which keeps a full, offline engine from spinning, and which here
  ** skipped every heal of a backlog published within a second of the
  ** first: nothing else calls heal on an idle queue, so the space stayed
  ** taken; tests/integration/test_disk_cycle.c). */
  if (published > 0) (void)ob__space_heal_progress(e);
  out->published = published;
  out->parked = parked;
  out->lost_leases = lost;
  return 0;
}
