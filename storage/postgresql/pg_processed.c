/* SPDX-License-Identifier: Apache-2.0 */
/* The dedup guard on PostgreSQL, and the sources it keys foreign events on.
**
** processed_message is partitioned by day, so its primary key holds
** processed_at and ON CONFLICT alone would not see a duplicate recorded on
** another day. The claim takes a transaction-scoped advisory lock on its
** key first: claims of one key serialise across processes until the
** winner's transaction ends, and the INSERT's own snapshot (READ
** COMMITTED: taken after the lock was granted) sees the winner's row in
** whichever partition it is. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/postgresql/pg_int.h"

/* The advisory lock of (consumer, message_id, source_ref): the three joined
** by the unit separator, which neither name holds in practice (and a
** collision only serialises two claims, it never merges them). */
static int lock_claim(ob__db_t* db, const char* consumer,
                      const char* message_id, int64_t source_ref) {
  /* Two separators, at most 20 digits and a sign, the NUL. */
  size_t klen = strlen(consumer) + strlen(message_id) + 32;
  char stack[256];
  char* key = klen <= sizeof stack ? stack : malloc(klen);
  int rc;
  if (key == NULL) return ob__db_seterr(db, OB_ENOMEM, "dedup claim: out of "
                                        "memory");
  /* klen fits by construction; the check is for the compiler (gcc 14's
  ** -Wformat-truncation cannot follow the strlen above). */
  int n = snprintf(key, klen, "%s\x1f%s\x1f%lld", consumer, message_id,
                   (long long)source_ref);
  if (n < 0 || (size_t)n >= klen) {
    if (key != stack) free(key);
    return ob__db_seterr(db, OB_ETOOBIG, "dedup claim: lock key too long");
  }
  rc = ob__pg_lock_key(db, key);
  if (key != stack) free(key);
  return rc;
}

int ob__pg_processed_claim(ob__db_t* db, const char* consumer,
                           const char* message_id, int64_t source_ref,
                           const char* legacy_id, int64_t now) {
  /* One statement: the probe of every partition and the insert share the
  ** snapshot taken after the lock. A record of source -1 (schema 9 and
  ** earlier's form) stands for any source, as on SQLite. */
  static const char claim[] =
      "INSERT INTO processed_message(consumer_name, message_id, source_ref,"
      " processed_at) SELECT $1::text, $2::text, $3::bigint, $4::bigint"
      " WHERE NOT EXISTS (SELECT 1 FROM processed_message WHERE"
      " consumer_name = $1::text AND message_id = $2::text AND"
      " source_ref IN ($3::bigint, -1)) ON CONFLICT DO NOTHING RETURNING 1";
  static const char legacy[] =
      "SELECT 1 FROM processed_message WHERE consumer_name = $1::text"
      " AND message_id = $2::text AND source_ref = -1 LIMIT 1";
  ob__pg_params_t p;
  int rc;
  if ((rc = lock_claim(db, consumer, message_id, source_ref)) < 0) return rc;
  /* A PostgreSQL database never held records of the id alone, so none is
  ** found; the probe is kept for parity with SQLite (only a caller that
  ** was told of legacy records passes legacy_id, and this backend never
  ** tells: ob__pg_processed_has_legacy). */
  if (legacy_id != NULL) {
    ob__pg_params_init(&p);
    ob__pg_p_text(&p, consumer);
    ob__pg_p_text(&p, legacy_id);
    rc = ob__pg_run_done(db, legacy, &p, "dedup claim");
    if (rc != 0) return rc < 0 ? rc : 0;
  }
  ob__pg_params_init(&p);
  ob__pg_p_text(&p, consumer);
  ob__pg_p_text(&p, message_id);
  ob__pg_p_int(&p, source_ref);
  ob__pg_p_int(&p, now);
  rc = ob__pg_run_done(db, claim, &p, "dedup claim");
  return rc < 0 ? rc : rc > 0;
}

int ob__pg_processed_has_legacy(ob__db_t* db, int* has) {
  /* A PostgreSQL database starts at the source-keyed schema: no records
  ** of schema 9 or earlier can be left in it. */
  (void)db;
  *has = 0;
  return 0;
}

int ob__pg_event_source_ref(ob__db_t* db, const char* uri, int64_t* ref) {
  static const char find[] =
      "SELECT id FROM event_source WHERE uri = $1::text";
  /* New: inside the handling transaction, so it goes if that rolls back. */
  static const char add[] =
      "INSERT INTO event_source(uri) VALUES ($1::text)"
      " ON CONFLICT (uri) DO NOTHING RETURNING id";
  ob__pg_params_t p;
  int rc;
  ob__pg_params_init(&p);
  ob__pg_p_text(&p, uri);
  rc = ob__pg_run_int(db, find, &p, "event source", ref);
  if (rc != OB_ENOTFOUND) return rc;
  rc = ob__pg_run_int(db, add, &p, "event source", ref);
  /* Nothing returned: another process added it since (the insert waited
  ** for its commit); this statement's fresh snapshot sees its row. */
  if (rc == OB_ENOTFOUND)
    rc = ob__pg_run_int(db, find, &p, "event source", ref);
  if (rc == OB_ENOTFOUND)
    rc = ob__db_seterr(db, OB_EDB, "event source: neither added nor found");
  return rc;
}
