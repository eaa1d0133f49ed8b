/* SPDX-License-Identifier: Apache-2.0 */
/*
** The PostgreSQL schema, version by version (pg_schema.c applies them).
**
** The same tables, columns and meaning as the SQLite schema at its version
** 12 (storage/sqlite/schema.c explains each), with PostgreSQL's types:
** every integer BIGINT (the engine's milliseconds and counters), BLOB
** BYTEA, the integer primary keys identities. Two tables are partitioned by
** day so retention drops whole partitions instead of deleting rows
** (docs/postgresql.md, "Retention"): processed_message on processed_at and
** outbox_event on created_at. A partitioned table's keys must hold the
** partition column, so neither (consumer, message, source) nor the event id
** is a key of its own there: the dedup claim serialises on an advisory lock
** of its key and probes every partition (pg_processed.c), and an event id
** is a UUID the engine makes. DEFAULT partitions take rows outside the
** partitions made ahead (a clock far off), so no insert ever fails for a
** missing partition.
*/
#ifndef OB_STORAGE_PG_SCHEMA_SQL_H
#define OB_STORAGE_PG_SCHEMA_SQL_H

#define OB__PG_SCHEMA_VERSION 3
#define OB__PG_APPLICATION "oncebox"

/* 0 -> 1 */
#define OB__PG_SCHEMA_1                                                      \
  "CREATE TABLE queue ("                                                     \
  "  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"                    \
  "  queue_name TEXT NOT NULL,"                                              \
  "  message_id TEXT NOT NULL,"                                              \
  "  type TEXT NOT NULL,"                                                    \
  "  headers TEXT,"                                                          \
  "  body BYTEA NOT NULL,"                                                   \
  "  available_at BIGINT NOT NULL,"                                          \
  "  lease_until BIGINT,"                                                    \
  "  attempts BIGINT NOT NULL DEFAULT 0,"                                    \
  "  first_failed_at BIGINT,"                                                \
  "  last_error TEXT,"                                                       \
  "  created_at BIGINT NOT NULL,"                                            \
  "  waiting_on TEXT,"                                                       \
  "  clock_ref BIGINT,"                                                      \
  "  source TEXT,"                                                           \
  "  group_key TEXT);"                                                       \
  "CREATE INDEX queue_ready ON queue(available_at, id);"                     \
  "CREATE INDEX queue_leased ON queue(lease_until)"                          \
  "  WHERE lease_until IS NOT NULL;"                                         \
  "CREATE INDEX queue_waiting ON queue(waiting_on)"                          \
  "  WHERE waiting_on IS NOT NULL;"                                          \
  "CREATE INDEX queue_clock_ref ON queue(clock_ref)"                         \
  "  WHERE clock_ref IS NOT NULL;"                                           \
  "CREATE INDEX queue_group ON queue(group_key, id)"                         \
  "  WHERE group_key IS NOT NULL;"                                           \
  /* SQLite's trigger queue_group_release, the same rule. */                 \
  "CREATE FUNCTION oncebox_queue_group_release() RETURNS trigger"            \
  "  LANGUAGE plpgsql AS $f$ BEGIN"                                          \
  "  UPDATE queue SET available_at = created_at WHERE id ="                  \
  "    (SELECT min(id) FROM queue WHERE group_key = OLD.group_key)"          \
  "    AND available_at = 9223372036854775807;"                              \
  "  RETURN NULL; END $f$;"                                                  \
  "CREATE TRIGGER queue_group_release AFTER DELETE ON queue FOR EACH ROW"    \
  "  WHEN (OLD.group_key IS NOT NULL)"                                       \
  "  EXECUTE FUNCTION oncebox_queue_group_release();"                        \
                                                                             \
  "CREATE TABLE event_source ("                                              \
  "  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"                    \
  "  uri TEXT NOT NULL UNIQUE);"                                             \
  "CREATE TABLE processed_message ("                                         \
  "  consumer_name TEXT NOT NULL,"                                           \
  "  message_id TEXT NOT NULL,"                                              \
  "  source_ref BIGINT NOT NULL,"                                            \
  "  processed_at BIGINT NOT NULL,"                                          \
  "  PRIMARY KEY (consumer_name, message_id, source_ref, processed_at)"      \
  ") PARTITION BY RANGE (processed_at);"                                     \
  "CREATE TABLE processed_message_default PARTITION OF processed_message"    \
  "  DEFAULT;"                                                               \
                                                                             \
  "CREATE TABLE outbox_event ("                                              \
  "  id TEXT NOT NULL,"                                                      \
  "  causation_id TEXT NOT NULL,"                                            \
  "  event_type TEXT NOT NULL,"                                              \
  "  aggregate_id TEXT NOT NULL,"                                            \
  "  payload TEXT NOT NULL,"                                                 \
  "  created_at BIGINT NOT NULL,"                                            \
  "  published_at BIGINT,"                                                   \
  "  attempt_count BIGINT NOT NULL DEFAULT 0,"                               \
  "  next_attempt_at BIGINT NOT NULL DEFAULT 0,"                             \
  "  last_error TEXT,"                                                       \
  "  claim_token TEXT,"                                                      \
  "  claim_until BIGINT,"                                                    \
  "  parked_at BIGINT,"                                                      \
  "  clock_ref BIGINT,"                                                      \
  "  traceparent TEXT,"                                                      \
  "  tracestate TEXT,"                                                       \
  "  PRIMARY KEY (id, created_at)"                                           \
  ") PARTITION BY RANGE (created_at);"                                       \
  "CREATE TABLE outbox_event_default PARTITION OF outbox_event DEFAULT;"     \
  "CREATE INDEX outbox_unpublished ON outbox_event(created_at, id)"          \
  "  WHERE published_at IS NULL;"                                            \
  "CREATE INDEX outbox_unpublished_aggregate ON outbox_event(aggregate_id,"  \
  "  created_at, id) WHERE published_at IS NULL;"                            \
  "CREATE INDEX outbox_unpublished_type ON outbox_event(event_type,"         \
  "  created_at, id) WHERE published_at IS NULL;"                            \
  "CREATE INDEX outbox_clock_ref ON outbox_event(clock_ref)"                 \
  "  WHERE clock_ref IS NOT NULL;"                                           \
                                                                             \
  "CREATE TABLE failed_message ("                                            \
  "  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"                    \
  "  queue_name TEXT NOT NULL,"                                              \
  "  message_id TEXT NOT NULL,"                                              \
  "  type TEXT NOT NULL,"                                                    \
  "  headers TEXT,"                                                          \
  "  body BYTEA NOT NULL,"                                                   \
  "  error_class TEXT NOT NULL,"                                             \
  "  reason TEXT NOT NULL,"                                                  \
  "  attempts BIGINT NOT NULL,"                                              \
  "  first_failed_at BIGINT NOT NULL,"                                       \
  "  last_failed_at BIGINT NOT NULL,"                                        \
  "  created_at BIGINT NOT NULL,"                                            \
  "  effect_key TEXT,"                                                       \
  "  source TEXT);"                                                          \
  "CREATE INDEX failed_message_type ON failed_message(type);"                \
  "CREATE INDEX failed_message_effect ON failed_message(effect_key)"         \
  "  WHERE effect_key IS NOT NULL;"                                          \
                                                                             \
  "CREATE TABLE relay_status ("                                              \
  "  name TEXT PRIMARY KEY,"                                                 \
  "  online BIGINT NOT NULL,"                                                \
  "  last_publish_at BIGINT,"                                                \
  "  last_error TEXT,"                                                       \
  "  updated_at BIGINT NOT NULL);"                                           \
                                                                             \
  "CREATE TABLE effect ("                                                    \
  "  key TEXT PRIMARY KEY,"                                                  \
  "  idempotency_key TEXT NOT NULL UNIQUE,"                                  \
  "  provider TEXT NOT NULL,"                                                \
  "  method TEXT NOT NULL,"                                                  \
  "  path TEXT NOT NULL,"                                                    \
  "  request BYTEA NOT NULL,"                                                \
  "  state TEXT NOT NULL"                                                    \
  "    CHECK (state IN ('pending','unknown','confirmed','failed')),"         \
  "  message_id TEXT NOT NULL,"                                              \
  "  consumer_name TEXT NOT NULL,"                                           \
  "  reference TEXT,"                                                        \
  "  response BYTEA,"                                                        \
  "  http_status BIGINT,"                                                    \
  "  reason TEXT,"                                                           \
  "  calls BIGINT NOT NULL DEFAULT 0,"                                       \
  "  lookups BIGINT NOT NULL DEFAULT 0,"                                     \
  "  successes BIGINT NOT NULL DEFAULT 0,"                                   \
  "  attempts BIGINT NOT NULL DEFAULT 0,"                                    \
  "  next_attempt_at BIGINT NOT NULL,"                                       \
  "  lease_token TEXT,"                                                      \
  "  lease_until BIGINT,"                                                    \
  "  parked_at BIGINT,"                                                      \
  "  created_at BIGINT NOT NULL,"                                            \
  "  updated_at BIGINT NOT NULL,"                                            \
  "  first_call_at BIGINT,"                                                  \
  "  first_call_observed_ms BIGINT,"                                         \
  "  park_cause TEXT,"                                                       \
  "  clock_ref BIGINT,"                                                      \
  "  lookup_reference TEXT);"                                                \
  "CREATE INDEX effect_open ON effect(next_attempt_at)"                      \
  "  WHERE state IN ('pending','unknown') AND parked_at IS NULL;"            \
  "CREATE INDEX effect_reference ON effect(reference)"                       \
  "  WHERE reference IS NOT NULL;"                                           \
  "CREATE INDEX effect_clock_ref ON effect(clock_ref)"                       \
  "  WHERE clock_ref IS NOT NULL;"                                           \
                                                                             \
  "CREATE TABLE retention_clock ("                                           \
  "  id BIGINT PRIMARY KEY CHECK (id = 1),"                                  \
  "  observed_ms BIGINT NOT NULL);"                                          \
  "CREATE TABLE retention_swept ("                                           \
  "  id BIGINT PRIMARY KEY CHECK (id = 1),"                                  \
  "  outbox_created_before_ms BIGINT NOT NULL DEFAULT -1,"                   \
  "  processed_before_ms BIGINT NOT NULL DEFAULT -1);"                       \
  "CREATE TABLE schema_migration ("                                          \
  "  name TEXT NOT NULL,"                                                    \
  "  version BIGINT NOT NULL CHECK (version >= 1),"                          \
  "  applied_at BIGINT NOT NULL,"                                            \
  "  PRIMARY KEY (name, version));"

/* 1 -> 2: SQLite's 12 -> 13 (docs/decisions/0019): the engine clock's
** recorded value (the largest any host's engine recorded), and per event
** how far the wall clock was behind the engine clock when it was made. */
#define OB__PG_SCHEMA_2                                                      \
  "CREATE TABLE engine_clock ("                                              \
  "  id BIGINT PRIMARY KEY CHECK (id = 1),"                                  \
  "  ms BIGINT NOT NULL);"                                                   \
  "ALTER TABLE outbox_event ADD COLUMN wall_behind_ms BIGINT;"

/* 2 -> 3: SQLite's 13 -> 14 (docs/offline.md): an effect's amount and
** currency, the running totals of the open ones per provider and
** currency, and each provider's link. */
#define OB__PG_SCHEMA_3                                                      \
  "ALTER TABLE effect ADD COLUMN amount BIGINT;"                             \
  "ALTER TABLE effect ADD COLUMN currency TEXT;"                             \
  "CREATE TABLE effect_stored ("                                             \
  "  provider TEXT NOT NULL,"                                                \
  "  currency TEXT NOT NULL,"                                                \
  "  stored_count BIGINT NOT NULL,"                                          \
  "  stored_total BIGINT NOT NULL,"                                          \
  "  PRIMARY KEY (provider, currency));"                                     \
  "CREATE TABLE effect_provider_link ("                                      \
  "  provider TEXT PRIMARY KEY,"                                             \
  "  offline_since BIGINT,"                                                  \
  "  online_since BIGINT);"

#endif
