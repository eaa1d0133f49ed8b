/* SPDX-License-Identifier: Apache-2.0 */
/*
** The disk-full policy on the engine (docs/field.md, "A disk that fills
** while offline"). With a size cap, new messages (ob_enqueue, and what the
** SQS consumer receives) are refused before the cap, critical types a
** little later, handling pauses last, so that what is queued is handled,
** published and given back without a person. Giving back ("healing")
** deletes expired records and then published outbox rows, oldest
** publication first, never an unpublished row, never a dedup record inside
** its window, and checkpoints the WAL.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine/engine_int.h"
#include "core/util/space_policy.h"

/* The component of this file's log records (ob__log). */
#undef OB__LOG_COMPONENT
#define OB__LOG_COMPONENT "space"

/* Healing reads and deletes; refusals can come thousands of times a
** second, so it runs at most this often. */
#define HEAL_MIN_INTERVAL_MS 1000

static void fmt_bytes(char* out, size_t n, int64_t b) {
  if (b >= 1024 * 1024)
    snprintf(out, n, "%.1f MiB", (double)b / (1024.0 * 1024.0));
  else
    snprintf(out, n, "%lld KiB", (long long)(b / 1024));
}

/* ---- at open: the cap in force and the WAL's room ----------------------- */

/* The options' WAL policy, when it is not the one ob__db_open set. With
** a size cap the WAL is held to a quarter of the cap (at least 1 MiB): the
** cap is what the operator sized the flash by, and the WAL needs room
** beyond it (docs/field.md), so that room scales with the cap instead of
** being 16 MiB on a terminal that has 20. */
int ob__space_wal_policy(const ob_engine_t* e, ob__db_t* db) {
  int64_t pages = e->opts.wal_checkpoint_pages;
  int64_t limit = e->opts.wal_size_limit_bytes;
  int page_size = 0;
  if (e->opts.max_db_bytes > 0) {
    /* A cap from the filesystem has no 1 MiB floor: on a tiny disk the
    ** WAL must fit as well (docs/decisions/0021-default-cap.md). */
    int64_t room = ob__space_wal_room(e->opts.max_db_bytes,
                                      e->cap_source == OB_CAP_FILESYSTEM);
    int rc = ob__db_page_size(db, &page_size);
    if (rc < 0) return rc;
    if (page_size > 0 && pages * page_size > room) pages = room / page_size;
    if (pages < 1) pages = 1;
    if (limit > room) limit = room;
  }
  if (pages == OB__WAL_CHECKPOINT_PAGES && limit == OB__WAL_SIZE_LIMIT_BYTES)
    return 0;
  return ob__db_set_wal_policy(db, (int)pages, limit);
}

/* The cap in force and where it came from (docs/decisions/0021): the
** options' when set, none when they say OB_NO_DB_CAP, else the default for
** the filesystem platform measured (none if it could not). A reserve asked
** for beyond half a derived cap is held to half: the disk's size must not
** make an open fail. */
void ob__space_open(ob_engine_t* e, int64_t fs_bytes) {
  ob__space_default_t d;
  if (e->opts.max_db_bytes > 0) {
    e->cap_source = OB_CAP_CONFIGURED;
    return;
  }
  e->cap_source = OB_CAP_NONE;
  ob__space_default(e->opts.max_db_bytes == 0 ? fs_bytes : 0, &d);
  e->opts.max_db_bytes = d.cap;
  if (d.cap <= 0) return;
  e->cap_source = OB_CAP_FILESYSTEM;
  if (e->opts.reserve_db_bytes > d.cap / 2)
    e->opts.reserve_db_bytes = d.cap / 2;
}

/* ---- the reserve --------------------------------------------------------- */

static int64_t cap_of(const ob_engine_t* e) { return e->opts.max_db_bytes; }

int64_t ob__space_reserve_of(const ob_engine_t* e) {
  return ob__space_reserve(cap_of(e), e->opts.reserve_db_bytes);
}

int ob__space_is_critical(const ob_engine_t* e, const char* type) {
  for (size_t i = 0; i < e->ncritical; i++)
    if (strcmp(e->critical[i], type) == 0) return 1;
  return 0;
}

int ob_mark_critical(ob_engine_t* e, const char* type) {
  char* copy;
  if (e == NULL || type == NULL || type[0] == '\0' || strlen(type) > 128)
    return OB_EINVAL;
  if (ob__space_is_critical(e, type)) return 0;
  if (e->ncritical == OB_MAX_CRITICAL_TYPES)
    return ob__db_seterr(&e->db, OB_ENOMEM, "more than %d critical types",
                         OB_MAX_CRITICAL_TYPES);
  copy = strdup(type);
  if (copy == NULL) return ob__db_seterr(&e->db, OB_ENOMEM, "out of memory");
  e->critical[e->ncritical++] = copy;
  return 0;
}

void ob__space_free(ob_engine_t* e) {
  for (size_t i = 0; i < e->ncritical; i++) free(e->critical[i]);
  e->ncritical = 0;
}

void ob__space_note_full(ob_engine_t* e) { e->space_pressure = 1; }

int ob__space_level_now(ob_engine_t* e, int* level, int64_t* used) {
  int64_t u = 0;
  int rc;
  *level = OB__SPACE_OK;
  if (used) *used = 0;
  if (cap_of(e) <= 0) return 0;
  rc = ob__space_used_bytes(&e->db, &u);
  if (rc < 0) return rc;
  *level = (int)ob__space_level(u, cap_of(e), ob__space_reserve_of(e));
  if (used) *used = u;
  return 0;
}

/* Give space back: expired records, then published events while above the
** target (one batch when there is no cap: a real full disk, seen as
** OB_ENOSPC). Returns the rows deleted, or < 0. */
static int64_t heal(ob_engine_t* e) {
  int64_t cap = cap_of(e), target, used = 0, freed = 0, n = 0, seen;
  int rc, level = OB__SPACE_OK;
  char a[32], b[32];

  seen = ob__observed_now(e);
  if (e->last_heal_ms != 0 && seen >= e->last_heal_ms &&
      seen - e->last_heal_ms < HEAL_MIN_INTERVAL_MS)
    return 0;
  e->last_heal_ms = seen;
  /* The expired records first: what retention would delete anyway. Not
  ** ob_gc: recording the observed clock is the periodic collection's work
  ** (observed.c), not giving space back's. */
  rc = ob__retention_expired(e, &n);
  if (rc < 0) return rc;
  freed += n;
  target = ob__space_reclaim_target(cap, ob__space_reserve_of(e));
  for (int rounds = 0;; rounds++) {
    if (cap > 0) {
      rc = ob__space_used_bytes(&e->db, &used);
      if (rc < 0) return rc;
      if (used <= target) break;
    } else if (rounds > 0) {
      break;
    }
    rc = ob__space_delete_published(&e->db, e->opts.gc_batch, &n);
    if (rc < 0) return rc;
    freed += n;
    if (n == 0) break;
  }
  if (freed > 0 || e->space_pressure)
    (void)ob__space_checkpoint(&e->db, e->space_pressure);
  rc = ob__space_level_now(e, &level, &used);
  if (rc < 0) return rc;
  if (level == OB__SPACE_OK) e->space_pressure = 0;
  /* Handling paused for space waits out a storage backoff: resume now. */
  if (freed > 0 && level < OB__SPACE_PAUSED && e->hooks.wake)
    e->hooks.wake(e);
  if (freed > 0) {
    if (cap > 0) {
      fmt_bytes(a, sizeof a, used);
      fmt_bytes(b, sizeof b, cap);
      ob__log(e, OB_LOG_INFO, "space: %lld expired records and published "
              "events deleted early; %s of the %s cap in use, %s",
              (long long)freed, a, b,
              ob__space_level_name((ob__space_level_t)level));
    } else {
      ob__log(e, OB_LOG_INFO, "space: the disk is full; %lld expired records "
              "and published events deleted early", (long long)freed);
    }
  }
  return freed;
}

int64_t ob__space_heal_progress(ob_engine_t* e) {
  e->last_heal_ms = 0;
  return ob__space_heal(e);
}

int64_t ob__space_heal(ob_engine_t* e) {
  int level;
  if (e->db.in_tx) return 0;
  if (cap_of(e) <= 0) return e->space_pressure ? heal(e) : 0;
  if (!e->space_pressure) {
    int rc = ob__space_level_now(e, &level, NULL);
    if (rc < 0) return rc;
    if (level == OB__SPACE_OK) return 0;
  }
  return heal(e);
}

int ob__space_admit(ob_engine_t* e, const char* type, size_t bytes) {
  int64_t used, cap = cap_of(e), reserve;
  int critical, rc, level;
  char u[32], c[32], r[32];

  if (cap <= 0) return 0;
  reserve = ob__space_reserve_of(e);
  critical = ob__space_is_critical(e, type);
  for (int tries = 0;; tries++) {
    ob__space_level_t lv;
    rc = ob__space_used_bytes(&e->db, &used);
    if (rc < 0) return rc;
    if (ob__space_judge(used, (int64_t)bytes, cap, reserve, critical, &lv))
      return 0;
    level = (int)lv;
    e->space_pressure = 1;
    /* Inside ob_enqueue_many's transaction nothing can be given back. */
    if (tries > 0 || e->db.in_tx) break;
    /* A refused message gives space back once and is judged again: this
    ** stays on the enqueue's path on purpose (docs/decisions/0012): space
    ** comes back where it is needed, not from a timer that would wake an
    ** idle terminal, and an `oncebox enqueue` process or an embedder
    ** without a loop has no timer at all; test_disk_cycle's
    ** published_rows_are_given_back is that case. Only a refusal pays for
    ** it: an accepted message reads the pages in use and nothing else. */
    if (ob__space_heal(e) <= 0) break;
  }
  fmt_bytes(u, sizeof u, used);
  fmt_bytes(c, sizeof c, cap);
  fmt_bytes(r, sizeof r, reserve);
  if (level == OB__SPACE_CRITICAL)
    return ob__db_seterr(&e->db, OB_ENOSPC,
                         "the database holds %s of its %s cap: new %.64s "
                         "messages are refused; the last %s (the reserve) is "
                         "kept for what is queued and for critical types "
                         "(space returns once the outbox is published)",
                         u, c, type, r);
  return ob__db_seterr(&e->db, OB_ENOSPC,
                       "the database holds %s of its %s cap: new messages "
                       "are refused, critical ones too; what is left of the "
                       "%s reserve is kept for handling and publishing "
                       "(space returns once the outbox is published)",
                       u, c, r);
}

int ob__space_may_handle(ob_engine_t* e) {
  int64_t used;
  int rc, level;
  char u[32], c[32];
  if (cap_of(e) <= 0 && !e->space_pressure) return 0;
  if (e->space_pressure && (rc = (int)ob__space_heal(e)) < 0) return rc;
  rc = ob__space_level_now(e, &level, &used);
  if (rc < 0) return rc;
  if (level < OB__SPACE_PAUSED) return 0;
  e->space_pressure = 1;
  if ((rc = (int)ob__space_heal(e)) < 0) return rc;
  rc = ob__space_level_now(e, &level, &used);
  if (rc < 0) return rc;
  if (level < OB__SPACE_PAUSED) return 0;
  fmt_bytes(u, sizeof u, used);
  fmt_bytes(c, sizeof c, cap_of(e));
  return ob__db_seterr(&e->db, OB_ENOSPC,
                       "handling paused: the database holds %s of its %s "
                       "cap, and the last quarter of the reserve is kept "
                       "for publish marks (it resumes once the outbox is "
                       "published and given back)", u, c);
}

int ob__space_stats(ob_engine_t* e, ob_stats_t* s) {
  int64_t used = 0;
  int rc, level = OB__SPACE_OK;
  if (cap_of(e) > 0) {
    rc = ob__space_level_now(e, &level, &used);
  } else {
    rc = ob__space_used_bytes(&e->db, &used);
  }
  if (rc < 0) return rc;
  s->db_bytes = used;
  s->db_max_bytes = cap_of(e);
  s->db_reserve_bytes = ob__space_reserve_of(e);
  s->space_level = level;
  s->db_cap_source = cap_of(e) > 0 ? e->cap_source : OB_CAP_NONE;
  return 0;
}
