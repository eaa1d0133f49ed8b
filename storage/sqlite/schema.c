/* SPDX-License-Identifier: Apache-2.0 */
/* Schema and migrations, keyed on PRAGMA user_version.
**
** Each migration is a fixed script applied in one transaction together with
** the user_version bump, so a crash mid-migration leaves the old version.
** Tables are STRICT so a wrong type is an error, not a silent conversion.
** Timestamps are integer milliseconds since the Unix epoch (UTC). */
#include <sqlite3.h>
#include <stdio.h>

#include "storage/sql.h"
#include "storage/sqlite/sqlite_store.h"

static const char* const migrations[] = {
    /* 0 -> 1: the engine's tables. */
    "CREATE TABLE queue ("
    "  id INTEGER PRIMARY KEY,"
    "  queue_name TEXT NOT NULL,"
    "  message_id TEXT NOT NULL,"
    "  type TEXT NOT NULL,"
    "  headers TEXT,"
    "  body BLOB NOT NULL,"
    "  available_at INTEGER NOT NULL,"
    "  lease_until INTEGER,"
    "  attempts INTEGER NOT NULL DEFAULT 0,"
    "  first_failed_at INTEGER,"
    "  last_error TEXT,"
    "  created_at INTEGER NOT NULL"
    ") STRICT;"
    "CREATE INDEX queue_ready ON queue(available_at, id);"

    /* The dedup record. consumer_name is part of the key: two consumers of
    ** one event each handle it once. */
    "CREATE TABLE processed_message ("
    "  consumer_name TEXT NOT NULL,"
    "  message_id TEXT NOT NULL,"
    "  processed_at INTEGER NOT NULL,"
    "  PRIMARY KEY (consumer_name, message_id)"
    ") STRICT, WITHOUT ROWID;"
    "CREATE INDEX processed_message_age ON processed_message(processed_at);"

    "CREATE TABLE outbox_event ("
    "  id TEXT PRIMARY KEY,"
    "  causation_id TEXT NOT NULL,"
    "  event_type TEXT NOT NULL,"
    "  aggregate_id TEXT NOT NULL,"
    "  payload TEXT NOT NULL,"
    "  created_at INTEGER NOT NULL,"
    "  published_at INTEGER,"
    "  attempt_count INTEGER NOT NULL DEFAULT 0,"
    "  next_attempt_at INTEGER NOT NULL DEFAULT 0,"
    "  last_error TEXT,"
    "  claim_token TEXT,"
    "  claim_until INTEGER,"
    "  parked_at INTEGER"
    ") STRICT, WITHOUT ROWID;"
    /* Only unpublished rows are indexed for the relay: the index stays as
    ** small as the backlog, not as large as the history. */
    "CREATE INDEX outbox_unpublished ON outbox_event(created_at, id)"
    "  WHERE published_at IS NULL;"
    "CREATE INDEX outbox_published_age ON outbox_event(published_at)"
    "  WHERE published_at IS NOT NULL;"
    "CREATE INDEX outbox_causation ON outbox_event(causation_id);"

    "CREATE TABLE failed_message ("
    "  id INTEGER PRIMARY KEY,"
    "  queue_name TEXT NOT NULL,"
    "  message_id TEXT NOT NULL,"
    "  type TEXT NOT NULL,"
    "  headers TEXT,"
    "  body BLOB NOT NULL,"
    "  error_class TEXT NOT NULL,"
    "  reason TEXT NOT NULL,"
    "  attempts INTEGER NOT NULL,"
    "  first_failed_at INTEGER NOT NULL,"
    "  last_failed_at INTEGER NOT NULL,"
    "  created_at INTEGER NOT NULL"
    ") STRICT;"
    "CREATE INDEX failed_message_type ON failed_message(type);",

    /* 1 -> 2: the outbox relay. Per-aggregate ordering looks for an earlier
    ** unpublished row of the same aggregate; relay_status is what `stats`
    ** reports about connectivity, written only when it changes. */
    "CREATE INDEX outbox_unpublished_aggregate ON outbox_event(aggregate_id,"
    "  created_at, id) WHERE published_at IS NULL;"
    "CREATE TABLE relay_status ("
    "  name TEXT PRIMARY KEY,"
    "  online INTEGER NOT NULL,"
    "  last_publish_at INTEGER,"
    "  last_error TEXT,"
    "  updated_at INTEGER NOT NULL"
    ") STRICT;",

    /* 2 -> 3: the fence. An effect row is claimed (pending) in its own
    ** committed transaction before the provider is called; its key is
    ** unique, so a second claim finds the first. Waiting messages point at
    ** their effect (queue.waiting_on; failed_message.effect_key once the
    ** effect needs a person). */
    "CREATE TABLE effect ("
    "  key TEXT PRIMARY KEY,"
    "  idempotency_key TEXT NOT NULL UNIQUE,"
    "  provider TEXT NOT NULL,"
    "  method TEXT NOT NULL,"
    "  path TEXT NOT NULL,"
    "  request BLOB NOT NULL,"
    "  state TEXT NOT NULL"
    "    CHECK (state IN ('pending','unknown','confirmed','failed')),"
    "  message_id TEXT NOT NULL,"
    "  consumer_name TEXT NOT NULL,"
    "  reference TEXT,"
    "  response BLOB,"
    "  http_status INTEGER,"
    "  reason TEXT,"
    "  calls INTEGER NOT NULL DEFAULT 0,"
    "  lookups INTEGER NOT NULL DEFAULT 0,"
    "  successes INTEGER NOT NULL DEFAULT 0,"
    "  attempts INTEGER NOT NULL DEFAULT 0,"
    "  next_attempt_at INTEGER NOT NULL,"
    "  lease_token TEXT,"
    "  lease_until INTEGER,"
    "  parked_at INTEGER,"
    "  created_at INTEGER NOT NULL,"
    "  updated_at INTEGER NOT NULL"
    ") STRICT, WITHOUT ROWID;"
    "CREATE INDEX effect_open ON effect(next_attempt_at)"
    "  WHERE state IN ('pending','unknown') AND parked_at IS NULL;"
    "CREATE INDEX effect_reference ON effect(reference)"
    "  WHERE reference IS NOT NULL;"
    "CREATE INDEX queue_leased ON queue(lease_until)"
    "  WHERE lease_until IS NOT NULL;"
    "ALTER TABLE queue ADD COLUMN waiting_on TEXT;"
    "CREATE INDEX queue_waiting ON queue(waiting_on)"
    "  WHERE waiting_on IS NOT NULL;"
    "ALTER TABLE failed_message ADD COLUMN effect_key TEXT;"
    "CREATE INDEX failed_message_effect ON failed_message(effect_key)"
    "  WHERE effect_key IS NOT NULL;",

    /* 3 -> 4: relay priorities. The relay claims the unpublished rows of
    ** its priority types first (ob_relay_options_t.priority_types), one
    ** range of this index per type, oldest first; partial like
    ** outbox_unpublished, so it is as small as the backlog. */
    "CREATE INDEX outbox_unpublished_type ON outbox_event(event_type,"
    "  created_at, id) WHERE published_at IS NULL;",

    /* 4 -> 5: the clock retention counts on: the time engines have observed
    ** passing (monotonic while they run), never the wall clock's jumps. */
    "CREATE TABLE retention_clock ("
    "  id INTEGER PRIMARY KEY CHECK (id = 1),"
    "  observed_ms INTEGER NOT NULL"
    ") STRICT;",

    /* 5 -> 6: how far retention (or the reserve, early) may have deleted:
    ** every published outbox row created at or before
    ** outbox_created_before_ms, every dedup record processed at or before
    ** processed_before_ms may be gone, so the modules' checks do not count
    ** a missing one as lost. -1: nothing deleted yet. */
    "CREATE TABLE retention_swept ("
    "  id INTEGER PRIMARY KEY CHECK (id = 1),"
    "  outbox_created_before_ms INTEGER NOT NULL DEFAULT -1,"
    "  processed_before_ms INTEGER NOT NULL DEFAULT -1"
    ") STRICT;",

    /* 6 -> 7: the fence across days. A provider forgets an idempotency key
    ** after its retention (Stripe: 24 h): the first moment the key may have
    ** reached it, on the wall clock and on the observed one, bounds how
    ** long a call may be repeated with it. park_cause says why an effect
    ** waits for a person (attempts, no-fence, key-expired, conflict,
    ** replayed-error). */
    "ALTER TABLE effect ADD COLUMN first_call_at INTEGER;"
    "ALTER TABLE effect ADD COLUMN first_call_observed_ms INTEGER;"
    "ALTER TABLE effect ADD COLUMN park_cause TEXT;",

    /* 7 -> 8: the wall time each row's deadlines were computed at, so a
    ** clock set back re-bases them instead of waiting the jump out
    ** (core/engine/deadlines.c). Rows written before have no such time:
    ** they get the earliest one their deadlines can have been computed at
    ** (never later, so a re-base never makes one due early), and NULL
    ** when no deadline lies beyond it. Partial indexes: only rows that
    ** wait, so the check at open is three index probes. */
    "ALTER TABLE queue ADD COLUMN clock_ref INTEGER;"
    "ALTER TABLE outbox_event ADD COLUMN clock_ref INTEGER;"
    "ALTER TABLE effect ADD COLUMN clock_ref INTEGER;"
    "UPDATE queue SET clock_ref = max(created_at, coalesce(first_failed_at, 0))"
    "  WHERE available_at > max(created_at, coalesce(first_failed_at, 0))"
    "  OR lease_until > max(created_at, coalesce(first_failed_at, 0));"
    "UPDATE outbox_event SET clock_ref = created_at WHERE published_at IS NULL"
    "  AND (next_attempt_at > created_at OR claim_until > created_at);"
    "UPDATE effect SET clock_ref = updated_at"
    "  WHERE state IN ('pending','unknown')"
    "  AND (next_attempt_at > updated_at OR lease_until > updated_at);"
    "CREATE INDEX queue_clock_ref ON queue(clock_ref)"
    "  WHERE clock_ref IS NOT NULL;"
    "CREATE INDEX outbox_clock_ref ON outbox_event(clock_ref)"
    "  WHERE clock_ref IS NOT NULL;"
    "CREATE INDEX effect_clock_ref ON effect(clock_ref)"
    "  WHERE clock_ref IS NOT NULL;",

    /* 8 -> 9: the business reference an effect can be looked up by once its
    ** idempotency key may have expired at the provider. */
    "ALTER TABLE effect ADD COLUMN lookup_reference TEXT;"
    /* From now on an open effect without first_call_at was never handed out
    ** for a call (so its key can't have expired); older ones count from
    ** their claim, the safe side. */
    "UPDATE effect SET first_call_at = created_at WHERE first_call_at IS NULL"
    "  AND state IN ('pending','unknown');",

    /* 9 -> 10: foreign producers and FIFO order (docs/interop.md).
    ** A CloudEvent's identity is (source, id): the dedup record of an event
    ** consumed from SQS keys on (consumer, id, source_ref), source_ref
    ** naming its source in event_source (a small integer, not the URI, in
    ** every record and in the age index). 0: a local message; -1: recorded
    ** before schema 10, when the id alone was the key: such a record still
    ** stands for that id from any source (storage/processed.c), until
    ** retention removes it. The PK puts message_id before source_ref so the
    ** claim and that legacy probe are neighbours in one b-tree. */
    "CREATE TABLE event_source ("
    "  id INTEGER PRIMARY KEY,"
    "  uri TEXT NOT NULL UNIQUE"
    ") STRICT;"
    "CREATE TABLE processed_message_v10 ("
    "  consumer_name TEXT NOT NULL,"
    "  message_id TEXT NOT NULL,"
    "  source_ref INTEGER NOT NULL,"
    "  processed_at INTEGER NOT NULL,"
    "  PRIMARY KEY (consumer_name, message_id, source_ref)"
    ") STRICT, WITHOUT ROWID;"
    "INSERT INTO processed_message_v10 SELECT consumer_name, message_id, -1,"
    "  processed_at FROM processed_message;"
    "DROP TABLE processed_message;"
    "ALTER TABLE processed_message_v10 RENAME TO processed_message;"
    "CREATE INDEX processed_message_age ON processed_message(processed_at);"
    /* A local queue row made from an SQS event (it waits for an effect, or
    ** waits behind one of its FIFO group) keeps its source; a FIFO one
    ** its group (group_key: the queue URL and MessageGroupId). Only the
    ** first row of a group is ever due: the others are held
    ** (available_at = the largest integer) until the row ahead of them
    ** leaves the queue, which the trigger notices whatever removed it
    ** (handled, failure store, an operator). */
    "ALTER TABLE queue ADD COLUMN source TEXT;"
    "ALTER TABLE queue ADD COLUMN group_key TEXT;"
    "CREATE INDEX queue_group ON queue(group_key, id)"
    "  WHERE group_key IS NOT NULL;"
    "CREATE TRIGGER queue_group_release AFTER DELETE ON queue"
    "  WHEN old.group_key IS NOT NULL BEGIN"
    "  UPDATE queue SET available_at = created_at WHERE id ="
    "    (SELECT min(id) FROM queue WHERE group_key = old.group_key)"
    "    AND available_at = 9223372036854775807;"
    "  END;"
    "ALTER TABLE failed_message ADD COLUMN source TEXT;"
    /* The W3C trace context an emitted event carries (ob_event_t). */
    "ALTER TABLE outbox_event ADD COLUMN traceparent TEXT;"
    "ALTER TABLE outbox_event ADD COLUMN tracestate TEXT;",

    /* 10 -> 11: the embedder's schema (ob_options_t.migrations). One row
    ** per applied step of each embedder schema name; the largest version
    ** of a name is that schema's version in this file. Written in the
    ** transaction that runs the step, so a row exists exactly when the
    ** step's effects do. */
    "CREATE TABLE schema_migration ("
    "  name TEXT NOT NULL,"
    "  version INTEGER NOT NULL CHECK (version >= 1),"
    "  applied_at INTEGER NOT NULL,"
    "  PRIMARY KEY (name, version)"
    ") STRICT, WITHOUT ROWID;",

    /* 11 -> 12: fewer pages per message (docs/decisions/0017). No hot-path
    ** statement reads outbox_event by causation_id; only a module's check
    ** may join on it, and SQLite builds an automatic index for that
    ** join when it runs. Every insert paid for it: a random key, so about
    ** one more page per message written. */
    "DROP INDEX IF EXISTS outbox_causation;",

    /* 12 -> 13: the engine clock (docs/decisions/0019): the value it had,
    ** so a restart under a wall clock set back starts from there; and, per
    ** event, how far the wall clock was behind it when the event was made
    ** (NULL: not behind), which the CloudEvent carries. */
    "CREATE TABLE engine_clock ("
    "  id INTEGER PRIMARY KEY CHECK (id = 1),"
    "  ms INTEGER NOT NULL"
    ") STRICT;"
    "ALTER TABLE outbox_event ADD COLUMN wall_behind_ms INTEGER;",

    /* 13 -> 14: offline limits (docs/offline.md). An effect's amount in
    ** minor units and its currency (NULL: none); the running totals of
    ** the open effects with an amount, per provider and currency, written
    ** with the claims and outcomes so no check scans the effects; and each
    ** provider's link as the attempts last saw it (offline_since NULL:
    ** online), so every process and a restart agree on it. */
    "ALTER TABLE effect ADD COLUMN amount INTEGER;"
    "ALTER TABLE effect ADD COLUMN currency TEXT;"
    "CREATE TABLE effect_stored ("
    "  provider TEXT NOT NULL,"
    "  currency TEXT NOT NULL,"
    "  stored_count INTEGER NOT NULL,"
    "  stored_total INTEGER NOT NULL,"
    "  PRIMARY KEY (provider, currency)"
    ") STRICT, WITHOUT ROWID;"
    "CREATE TABLE effect_provider_link ("
    "  provider TEXT PRIMARY KEY,"
    "  offline_since INTEGER,"
    "  online_since INTEGER"
    ") STRICT;",
};

#define MIGRATION_COUNT ((int)(sizeof migrations / sizeof migrations[0]))

_Static_assert(MIGRATION_COUNT == OB__SCHEMA_VERSION,
               "one migration per schema version");

/* The file's identity in ONE statement, so in one read snapshot: read one
** by one, another process's first migration could commit in between, and
** "no version, no application id" next to its 13 new tables looks exactly
** like another application's database. */
static int read_identity(ob__db_t* db, int* version, int* app_id,
                         int* tables) {
  static const char sql[] =
      "SELECT (SELECT user_version FROM pragma_user_version),"
      " (SELECT application_id FROM pragma_application_id),"
      " (SELECT count(*) FROM sqlite_schema WHERE type='table')";
  ob__sql_t s;
  int rc;
  *version = *app_id = *tables = 0;
  ob__sql_prepare(db, &s, OB__SQL_ONCE, sql, "read the file's identity");
  if ((rc = ob__sql_step(&s)) > 0) {
    *version = (int)ob__sql_col_int(&s, 0);
    *app_id = (int)ob__sql_col_int(&s, 1);
    *tables = (int)ob__sql_col_int(&s, 2);
  }
  ob__sql_finish(&s);
  return rc < 0 ? rc : 0;
}

/* Refuse a database oncebox must not touch: written by a newer oncebox, or
** belonging to another application (its application_id, or tables of its
** own in a file without ours). Reads only. */
static int check_ownership(ob__db_t* db, int* version, int* app_id,
                           int adopt) {
  int tables = 0;
  int rc = read_identity(db, version, app_id, &tables);
  if (rc < 0) return rc;
  if (*version > OB__SCHEMA_VERSION)
    return ob__db_seterr(db, OB_EVERSION,
                         "database schema version %d is newer than this "
                         "oncebox (%s) understands (%d); upgrade oncebox",
                         *version, OB_VERSION_STRING, OB__SCHEMA_VERSION);
  if (*app_id != 0 && *app_id != OB__APPLICATION_ID)
    return ob__db_seterr(db, OB_ECORRUPT,
                         "database belongs to another application "
                         "(application_id 0x%08x)", (unsigned)*app_id);
  if (*version == 0 && *app_id == 0 && tables > 0 && !adopt)
    return ob__db_seterr(db, OB_ECORRUPT,
                         "database already has %d tables and is not an "
                         "oncebox database", tables);
  return 0;
}

int ob__sqlite_schema_identify(ob__db_t* db, int adopt) {
  int version, app_id;
  return check_ownership(db, &version, &app_id, adopt);
}

/* ---- the embedder's migrations ------------------------------------------ */

/* The pragmas an embedder's migration may run: the read-only introspection
** ones a migration checks its work with. Every other pragma is denied:
** user_version and application_id are oncebox's identity of the file;
** journal_mode, synchronous, locking_mode, foreign_keys, defer_foreign_keys,
** recursive_triggers, legacy_alter_table, writable_schema, trusted_schema,
** cell_size_check, cache_size, page_size, auto_vacuum, max_page_count
** (oncebox's size cap), busy_timeout, query_only, wal_* and the like change
** the connection's or the file's durability, locking, size cap or SQL
** semantics for every later transaction oncebox runs; and the
** ones that do work outside the transaction (wal_checkpoint, optimize,
** incremental_vacuum, shrink_memory) have no place in one. */
static const char* const migration_pragmas[] = {
    "table_info",  "table_xinfo",      "table_list",      "index_list",
    "index_info",  "index_xinfo",      "foreign_key_list", "foreign_key_check",
    "quick_check", "integrity_check",  "collation_list",  "function_list",
};

/* Every table the migrations above leave (processed_message_v10 is renamed).
** An embedder's step may read them, never change them or their schema:
** their rows and shape are what the engine's guarantees are made of. */
static const char* const own_tables[] = {
    "queue",           "processed_message", "outbox_event",
    "failed_message",  "relay_status",      "effect",
    "retention_clock", "retention_swept",   "event_source",
    "schema_migration", "engine_clock",    "effect_stored",
    "effect_provider_link",
};

int ob__schema_is_own_table(const char* name) {
  if (name == NULL) return 0;
  for (size_t i = 0; i < sizeof own_tables / sizeof own_tables[0]; i++)
    if (sqlite3_stricmp(name, own_tables[i]) == 0) return 1;
  return 0;
}

/* Like the handlers' (storage/user_sql.c): a migration must not end, nest
** or escape the open transaction, nor reach other files; and it leaves
** oncebox's own tables as they are. */
static int migration_authorizer(void* arg, int action, const char* a,
                                const char* b, const char* c, const char* d) {
  (void)arg; (void)c; (void)d;
  switch (action) {
    case SQLITE_INSERT:
    case SQLITE_UPDATE:
    case SQLITE_DELETE:
    case SQLITE_DROP_TABLE:
      return ob__schema_is_own_table(a) ? SQLITE_DENY : SQLITE_OK;
    case SQLITE_ALTER_TABLE:
    case SQLITE_CREATE_INDEX:
    case SQLITE_DROP_INDEX:
    case SQLITE_CREATE_TRIGGER:
    case SQLITE_DROP_TRIGGER:
      return ob__schema_is_own_table(b) ? SQLITE_DENY : SQLITE_OK;
    case SQLITE_TRANSACTION:
    case SQLITE_SAVEPOINT:
    case SQLITE_ATTACH:
    case SQLITE_DETACH:
      return SQLITE_DENY;
    case SQLITE_PRAGMA:
      for (size_t i = 0;
           i < sizeof migration_pragmas / sizeof migration_pragmas[0]; i++)
        if (a != NULL && sqlite3_stricmp(a, migration_pragmas[i]) == 0)
          return SQLITE_OK;
      return SQLITE_DENY;
    default:
      return SQLITE_OK;
  }
}

/* A step of the embedder's (schema_ext.c), in the migration's transaction:
** its SQL run as given under the authorizer above. */
int ob__sqlite_migration_exec(ob__db_t* db, const ob_migration_t* m) {
  char* msg = NULL;
  int rc, code;

  sqlite3_set_authorizer(db->db, migration_authorizer, NULL);
  rc = sqlite3_exec(db->db, m->sql, NULL, NULL, &msg);
  sqlite3_set_authorizer(db->db, NULL, NULL);
  if (rc != SQLITE_OK) {
    code = (rc & 0xff) == SQLITE_AUTH || (rc & 0xff) == SQLITE_ERROR ||
                   (rc & 0xff) == SQLITE_CONSTRAINT
               ? OB_EINVAL
               : ob__db_fail(db, rc, "migration");
    if ((rc & 0xff) == SQLITE_AUTH)
      ob__db_seterr(db, code,
                    "migration %s %d: may not control transactions, attach "
                    "databases, run that pragma or change oncebox's tables "
                    "(%s)", m->name, m->version,
                    msg ? msg : sqlite3_errstr(rc));
    else
      ob__db_seterr(db, code, "migration %s %d failed: %s", m->name,
                    m->version, msg ? msg : sqlite3_errstr(rc));
    db->last_err = code;
    sqlite3_free(msg);
    return code;
  }
  if (sqlite3_get_autocommit(db->db)) /* the authorizer should prevent it */
    return ob__db_seterr(db, OB_EINVAL,
                         "migration %s %d ended the transaction", m->name,
                         m->version);
  return 0;
}

int ob__sqlite_schema_migrate(ob__db_t* db, const ob__schema_ext_t* ext) {
  static const ob__schema_ext_t none = {NULL, 0, 0, 0};
  int version, app_id, rc;
  size_t missing = 0;
  char bump[64];

  if (ext == NULL) ext = &none;
  rc = ob__schema_ext_check(db, ext);
  if (rc < 0) return rc;
  rc = check_ownership(db, &version, &app_id, ext->adopt);
  if (rc < 0) return rc;
  /* No schema_migration before 11: nothing applied. */
  rc = ob__schema_ext_missing(db, ext, version >= 11, &missing);
  if (rc < 0) return rc;
  if (version == OB__SCHEMA_VERSION && missing == 0) return 0;

  rc = ob__sqlite_db_begin(db);
  if (rc < 0) return rc;
  /* Again inside the write lock: another process may have migrated, or
  ** made the file its own, or applied the embedder's steps, since. */
  rc = check_ownership(db, &version, &app_id, ext->adopt);
  if (rc < 0) goto fail;
  rc = ob__schema_ext_missing(db, ext, version >= 11, &missing);
  if (rc < 0) goto fail;
  if (version == OB__SCHEMA_VERSION && missing == 0) return ob__sqlite_db_commit(db);
  for (int v = version; v < OB__SCHEMA_VERSION; v++) {
    rc = ob__db_exec_fixed(db, migrations[v]);
    if (rc < 0) goto fail;
  }
  rc = ob__schema_ext_apply(db, ext);
  if (rc < 0) goto fail;
  if (version == OB__SCHEMA_VERSION) return ob__sqlite_db_commit(db);
  /* PRAGMA arguments cannot be bound; both values are compile-time integers. */
  snprintf(bump, sizeof bump, "PRAGMA user_version=%d", OB__SCHEMA_VERSION);
  rc = ob__db_exec_fixed(db, bump);
  if (rc < 0) goto fail;
  snprintf(bump, sizeof bump, "PRAGMA application_id=%d", OB__APPLICATION_ID);
  rc = ob__db_exec_fixed(db, bump);
  if (rc < 0) goto fail;
  return ob__sqlite_db_commit(db);

fail:
  ob__sqlite_db_rollback(db);
  return rc;
}
