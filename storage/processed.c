/* SPDX-License-Identifier: Apache-2.0 */
/* The dedup guard, and the sources it keys foreign events on.
**
** On PostgreSQL processed_message is partitioned by day, so its primary
** key holds processed_at and ON CONFLICT alone would not see a duplicate
** recorded on another day. The claim takes a transaction-scoped lock on its
** key first (ob__sql_lock_key): claims of one key serialise across
** processes until the winner's transaction ends, and the INSERT's own
** snapshot (READ COMMITTED: taken after the lock was granted) sees the
** winner's row in whichever partition it is. On SQLite the handling
** transaction holds the write lock: there is no race to close. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/sql.h"

/* The lock of (consumer, message_id, source_ref): the three joined by the
** unit separator, which neither name holds in practice (and a collision
** only serialises two claims, it never merges them). */
static int lock_claim(ob__db_t* db, const char* consumer,
                      const char* message_id, int64_t source_ref) {
  /* Two separators, at most 20 digits and a sign, the NUL. */
  size_t klen = strlen(consumer) + strlen(message_id) + 32;
  char stack[256];
  char* key;
  int n, rc;
  if (!ob__sql_is_pg(db)) return 0;
  key = klen <= sizeof stack ? stack : malloc(klen);
  if (key == NULL)
    return ob__db_seterr(db, OB_ENOMEM, "dedup claim: out of memory");
  /* klen fits by construction; the check is for the compiler (gcc 14's
  ** -Wformat-truncation cannot follow the strlen above). */
  n = snprintf(key, klen, "%s\x1f%s\x1f%lld", consumer, message_id,
               (long long)source_ref);
  rc = n < 0 || (size_t)n >= klen
           ? ob__db_seterr(db, OB_ETOOBIG, "dedup claim: lock key too long")
           : ob__sql_lock_key(db, key);
  if (key != stack) free(key);
  return rc;
}

int ob__processed_claim(ob__db_t* db, const char* consumer,
                            const char* message_id, int64_t source_ref,
                            const char* legacy_id, int64_t now) {
  /* The key decides, atomically. On SQLite no RETURNING and no INSERT ...
  ** SELECT from the same table: each of those buffers its rows in an
  ** ephemeral b-tree, opened and begun for every message (about 12% of a
  ** batch's instructions, measured with callgrind); the changes count says
  ** the same (processed_message has no triggers to add to it). On
  ** PostgreSQL one statement: the probe of every partition and the insert
  ** share the snapshot taken after the lock, and a record of source -1
  ** stands for any source. */
  static const ob__sql_text_t claim = {
      "INSERT INTO processed_message(consumer_name, message_id, source_ref,"
      " processed_at) VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING",
      "INSERT INTO processed_message(consumer_name, message_id, source_ref,"
      " processed_at) SELECT ?1, ?2, ?3, ?4 WHERE NOT EXISTS (SELECT 1 FROM"
      " processed_message WHERE consumer_name = ?1 AND message_id = ?2 AND"
      " source_ref IN (?3, -1)) ON CONFLICT DO NOTHING RETURNING 1"};
  static const char legacy[] =
      "SELECT 1 FROM processed_message WHERE consumer_name = ?1"
      " AND message_id = ?2 AND source_ref = -1 LIMIT 1";
  ob__sql_t s;
  int rc;
  if ((rc = lock_claim(db, consumer, message_id, source_ref)) < 0) return rc;
  /* A record of schema 9 or earlier (source_ref -1) of this id stands for
  ** any source. Probing first is no check-then-insert race: the handling
  ** transaction holds the write lock, or the key's lock. Only databases
  ** that still hold such records pass legacy_id (never PostgreSQL's). */
  if (legacy_id != NULL) {
    ob__sql_prepare(db, &s, OB__P_LEGACY_PROBE, legacy, "dedup claim");
    ob__sql_text(&s, 1, consumer);
    ob__sql_text(&s, 2, legacy_id);
    if ((rc = ob__sql_done(&s)) != 0) return rc < 0 ? rc : 0;
  }
  ob__sql_prepare2(db, &s, OB__P_CLAIM, &claim, "dedup claim");
  ob__sql_text(&s, 1, consumer);
  ob__sql_text(&s, 2, message_id);
  ob__sql_int(&s, 3, source_ref);
  ob__sql_int(&s, 4, now);
  rc = ob__sql_done(&s);
  return rc < 0 ? rc : rc == 1;
}

int ob__processed_has_legacy(ob__db_t* db, int* has) {
  /* At open only. Records of schema 9 or earlier are the oldest ones
  ** (retention deletes oldest first): the first few through the age index
  ** tell whether any is left. A PostgreSQL database starts at the
  ** source-keyed schema: none can be left in it. */
  static const ob__sql_text_t sql = {
      "SELECT count(*) FROM (SELECT source_ref FROM processed_message"
      " INDEXED BY processed_message_age ORDER BY processed_at LIMIT 64)"
      " WHERE source_ref = -1",
      "SELECT 0"};
  ob__sql_t s;
  int64_t n = 0;
  int rc;
  ob__sql_prepare2(db, &s, OB__SQL_ONCE, &sql, "legacy dedup records");
  rc = ob__sql_int1(&s, &n);
  *has = n > 0;
  return rc == OB_ENOTFOUND ? 0 : rc;
}

int ob__event_source_ref(ob__db_t* db, const char* uri, int64_t* ref) {
  static const char find[] = "SELECT id FROM event_source WHERE uri = ?1";
  /* New: inside the handling transaction, so it goes if that rolls back. */
  static const char add[] =
      "INSERT INTO event_source(uri) VALUES (?1)"
      " ON CONFLICT (uri) DO NOTHING RETURNING id";
  ob__sql_t s;
  int rc;
  for (int i = 0; i < 3; i++) {
    /* find, add, and find again: when nothing was added, another process
    ** (PostgreSQL) added it since; the insert waited for its commit and
    ** this statement's fresh snapshot sees its row. */
    ob__sql_prepare(db, &s, i == 1 ? OB__P_SOURCE_ADD : OB__P_SOURCE_FIND,
                    i == 1 ? add : find, "event source");
    ob__sql_text(&s, 1, uri);
    if ((rc = ob__sql_int1(&s, ref)) != OB_ENOTFOUND) return rc;
  }
  return ob__db_seterr(db, OB_EDB, "event source: neither added nor found");
}
