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

int ob__pg_processed_claim(ob__db_t* db, const char* consumer,
                           const char* message_id, int64_t source_ref,
                           const char* legacy_id, int64_t now) {
  static const char sql[] =
      "INSERT INTO processed_message(consumer_name, message_id, source_ref,"
      " processed_at) SELECT $1::text, $2::text, $3::bigint, $4::bigint"
      " WHERE NOT EXISTS (SELECT 1 FROM processed_message WHERE"
      " consumer_name = $1::text AND message_id = $2::text AND"
      " source_ref = $3::bigint) ON CONFLICT DO NOTHING RETURNING 1";
  ob__pg_params_t p;
  size_t klen = strlen(consumer) + strlen(message_id) + 32;
  char stack[256];
  char* key = klen <= sizeof stack ? stack : malloc(klen);
  int rc;
  /* A PostgreSQL database starts at the source-keyed schema: no records
  ** of the id alone exist to probe for. */
  (void)legacy_id;
  if (key == NULL) return ob__db_seterr(db, OB_ENOMEM, "out of memory");
  snprintf(key, klen, "%s\x1f%s\x1f%lld", consumer, message_id,
           (long long)source_ref);
  rc = ob__pg_lock_key(db, key);
  if (key != stack) free(key);
  if (rc < 0) return rc;
  ob__pg_params_init(&p);
  ob__pg_p_text(&p, consumer);
  ob__pg_p_text(&p, message_id);
  ob__pg_p_int(&p, source_ref);
  ob__pg_p_int(&p, now);
  rc = ob__pg_run_done(db, sql, &p, "dedup claim");
  return rc < 0 ? rc : rc == 1;
}

int ob__pg_processed_has_legacy(ob__db_t* db, int* has) {
  (void)db;
  *has = 0;
  return 0;
}

int ob__pg_event_source_ref(ob__db_t* db, const char* uri, int64_t* ref) {
  static const char find[] = "SELECT id FROM event_source WHERE uri = $1::text";
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
  /* Another process added it since: its row is the one. */
  if (rc == OB_ENOTFOUND) rc = ob__pg_run_int(db, find, &p, "event source", ref);
  return rc;
}
