/* SPDX-License-Identifier: Apache-2.0 */
/* The PostgreSQL schema: the version table, migrations, how an embedder's
** step runs (the rest of them is storage/schema_ext.c's) and the daily
** partitions (docs/postgresql.md).
**
** oncebox_schema holds the version (SQLite's user_version) and the
** application's name (its application_id). Migrations run in one
** transaction under an advisory lock, so three consumers started at once
** migrate once and the others find it done; a newer version is refused. */
#include <stdio.h>

#include "storage/postgresql/pg_int.h"
#include "storage/postgresql/pg_schema_sql.h"

/* The partitions of one day: processed_message_pYYYYMMDD and
** outbox_event_pYYYYMMDD, bounds in UTC milliseconds. Names come from the
** day, never from outside; a day whose range rows already fill in the
** DEFAULT partition (a clock far off once) is left to DEFAULT, and a
** partition another process is making at the same moment is no error:
** each is tried on its own. */
#define OB__PG_PARTITION_FN                                                  \
  "CREATE FUNCTION oncebox_partitions_ensure(from_ms bigint, days int)"      \
  "  RETURNS int LANGUAGE plpgsql AS $f$"                                    \
  " DECLARE d bigint; lo bigint; t text; made int := 0; BEGIN"               \
  "  FOR i IN 0..days LOOP"                                                  \
  "    lo := (from_ms / 86400000 + i) * 86400000;"                           \
  "    d := lo / 1000;"                                                      \
  "    FOREACH t IN ARRAY ARRAY['processed_message', 'outbox_event'] LOOP"   \
  "      IF to_regclass(t || '_p' || to_char(to_timestamp(d) AT TIME ZONE"   \
  "         'UTC', 'YYYYMMDD')) IS NULL THEN"                                \
  "        BEGIN"                                                            \
  "          EXECUTE format('CREATE TABLE %I PARTITION OF %I"                \
  "            FOR VALUES FROM (%s) TO (%s)', t || '_p' ||"                  \
  "            to_char(to_timestamp(d) AT TIME ZONE 'UTC', 'YYYYMMDD'), t,"  \
  "            lo, lo + 86400000);"                                          \
  "          made := made + 1;"                                              \
  "        EXCEPTION WHEN duplicate_table OR check_violation"                \
  "          OR lock_not_available OR invalid_object_definition THEN"        \
  "          NULL;"                                                          \
  "        END;"                                                             \
  "      END IF;"                                                            \
  "    END LOOP;"                                                            \
  "  END LOOP;"                                                              \
  "  RETURN made; END $f$;"

static const char* const migrations[] = {
    /* 0 -> 1 */
    OB__PG_SCHEMA_1 OB__PG_PARTITION_FN,
    /* 1 -> 2 */
    OB__PG_SCHEMA_2,
    /* 2 -> 3 */
    OB__PG_SCHEMA_3,
};

#define MIGRATION_COUNT ((int)(sizeof migrations / sizeof migrations[0]))
_Static_assert(MIGRATION_COUNT == OB__PG_SCHEMA_VERSION,
               "one migration per schema version");

/* version: 0 when the database has no oncebox schema. Refuses a newer one,
** another application's, and (unless adopt) a schema that already has
** tables of its own. Reads only. */
static int check_ownership(ob__db_t* db, int adopt, int* version) {
  static const char probe[] =
      "SELECT (to_regclass('oncebox_schema') IS NOT NULL)::int,"
      " (SELECT count(*) FROM pg_tables WHERE schemaname = current_schema())";
  static const char read[] =
      "SELECT version, (application = ?1)::int FROM oncebox_schema"
      " WHERE id = 1";
  ob__sql_t s;
  int rc, have = 0, tables = 0, ours = 0;
  *version = 0;
  ob__sql_prepare(db, &s, OB__SQL_ONCE, probe, "read the schema's identity");
  if ((rc = ob__sql_step(&s)) > 0) {
    have = (int)ob__sql_col_int(&s, 0);
    tables = (int)ob__sql_col_int(&s, 1);
  }
  ob__sql_finish(&s);
  if (rc < 0) return rc;
  if (!have) {
    if (tables > 0 && !adopt)
      return ob__db_seterr(db, OB_ECORRUPT,
                           "the database's schema already has %d tables and "
                           "is not an oncebox schema (name an empty database "
                           "or schema, or set adopt_existing)", tables);
    return 0;
  }
  ob__sql_prepare(db, &s, OB__SQL_ONCE, read, "read the schema version");
  ob__sql_text(&s, 1, OB__PG_APPLICATION);
  if ((rc = ob__sql_step(&s)) > 0) {
    *version = (int)ob__sql_col_int(&s, 0);
    ours = (int)ob__sql_col_int(&s, 1);
  }
  ob__sql_finish(&s);
  if (rc < 0) return rc;
  if (rc == 0)
    return ob__db_seterr(db, OB_ECORRUPT,
                         "oncebox_schema has no version row");
  if (!ours)
    return ob__db_seterr(db, OB_ECORRUPT,
                         "the schema belongs to another application");
  if (*version > OB__PG_SCHEMA_VERSION)
    return ob__db_seterr(db, OB_EVERSION,
                         "database schema version %d is newer than this "
                         "oncebox (%s) understands (%d); upgrade oncebox",
                         *version, OB_VERSION_STRING, OB__PG_SCHEMA_VERSION);
  return 0;
}

int ob__pg_schema_identify(ob__db_t* db, int adopt) {
  int version;
  return check_ownership(db, adopt, &version);
}

/* A step of the embedder's (storage/schema_ext.c), in the migration's
** transaction: the embedder's own text, run as given (PostgreSQL's
** dialect). */
int ob__pg_migration_exec(ob__db_t* db, const ob_migration_t* m) {
  char what[128], why[OB__ERRMSG_LEN];
  int rc;
  snprintf(what, sizeof what, "migration %s %d", m->name, m->version);
  if ((rc = ob__pg_exec(db, m->sql, what)) == 0 || rc == OB_EIO) return rc;
  snprintf(why, sizeof why, "%s", db->errmsg);
  db->last_err = OB_EINVAL;
  return ob__db_seterr(db, OB_EINVAL, "%s failed: %s", what, why);
}

int ob__pg_schema_migrate(ob__db_t* db, const ob__schema_ext_t* ext) {
  static const ob__schema_ext_t none = {NULL, 0, 0, 0};
  static const char stamp[] =
      "INSERT INTO oncebox_schema (id, version, application)"
      " VALUES (1, ?1, ?2) ON CONFLICT (id) DO UPDATE"
      " SET version = EXCLUDED.version";
  static const char version_table[] =
      "CREATE TABLE oncebox_schema ("
      "  id BIGINT PRIMARY KEY CHECK (id = 1),"
      "  version BIGINT NOT NULL,"
      "  application TEXT NOT NULL)";
  ob__sql_t s;
  int version = 0, rc;
  int64_t now_ms;
  size_t missing;

  if (ext == NULL) ext = &none;
  if ((rc = ob__schema_ext_check(db, ext)) < 0) return rc;
  if ((rc = ob__pg_db_begin(db)) < 0) return rc;
  /* One migrator at a time; the others wait here and find it done. */
  if ((rc = ob__sql_lock_key(db, "oncebox schema migration")) < 0) goto fail;
  if ((rc = check_ownership(db, ext->adopt, &version)) < 0) goto fail;
  if (version == 0 && (rc = ob__pg_exec(db, version_table, "schema")) < 0)
    goto fail;
  for (int v = version; v < OB__PG_SCHEMA_VERSION; v++)
    if ((rc = ob__pg_exec(db, migrations[v], "schema migration")) < 0)
      goto fail;
  if (version < OB__PG_SCHEMA_VERSION) {
    ob__sql_prepare(db, &s, OB__SQL_ONCE, stamp, "schema version");
    ob__sql_int(&s, 1, OB__PG_SCHEMA_VERSION);
    ob__sql_text(&s, 2, OB__PG_APPLICATION);
    if ((rc = ob__sql_done(&s)) < 0) goto fail;
  }
  if ((rc = ob__schema_ext_missing(db, ext, 1, &missing)) < 0 ||
      (rc = ob__schema_ext_apply(db, ext)) < 0)
    goto fail;
  if ((rc = ob__pg_db_commit(db)) < 0) return rc;
  /* Partitions from yesterday on (a terminal's clock a little behind). */
  now_ms = ext->now_ms > 0 ? ext->now_ms : 0;
  if (now_ms == 0) {
    static const char server_now[] =
        "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint";
    ob__sql_prepare(db, &s, OB__SQL_ONCE, server_now, "clock");
    if ((rc = ob__sql_int1(&s, &now_ms)) < 0) return rc;
  }
  return ob__pg_partitions_ensure(db, now_ms - OB__PG_DAY_MS,
                                  OB__PG_PARTITIONS_AHEAD + 1);

fail:
  ob__pg_db_rollback(db);
  return rc;
}

int ob__pg_partitions_ensure(ob__db_t* db, int64_t from_ms, int days_ahead) {
  static const char sql[] = "SELECT oncebox_partitions_ensure(?1, ?2::int)";
  ob__sql_t s;
  int rc;
  ob__sql_prepare(db, &s, OB__SQL_ONCE, sql, "make partitions");
  ob__sql_int(&s, 1, from_ms < 0 ? 0 : from_ms);
  ob__sql_int(&s, 2, days_ahead);
  rc = ob__sql_done(&s);
  return rc < 0 ? rc : 0;
}
