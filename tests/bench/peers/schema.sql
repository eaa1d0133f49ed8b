-- The payout handler's tables for the peers (tests/bench/bench_peers.c):
-- oncebox's own DDL for them (storage/schema.c, schema v3), so every peer
-- maintains the same rows and the same indexes as oncebox's payout module.
CREATE TABLE IF NOT EXISTS processed_message (
  consumer_name TEXT NOT NULL,
  message_id TEXT NOT NULL,
  processed_at INTEGER NOT NULL,
  PRIMARY KEY (consumer_name, message_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS processed_message_age
  ON processed_message(processed_at);
CREATE TABLE IF NOT EXISTS merchant_payout (
  id TEXT PRIMARY KEY,
  source_payment_id TEXT NOT NULL UNIQUE,
  merchant_id TEXT NOT NULL,
  amount_minor INTEGER NOT NULL CHECK (amount_minor > 0),
  currency TEXT NOT NULL CHECK (length(currency) = 3),
  source_event_id TEXT NOT NULL,
  created_at INTEGER NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS outbox_event (
  id TEXT PRIMARY KEY,
  causation_id TEXT NOT NULL,
  event_type TEXT NOT NULL,
  aggregate_id TEXT NOT NULL,
  payload TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  published_at INTEGER,
  attempt_count INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER NOT NULL DEFAULT 0,
  last_error TEXT,
  claim_token TEXT,
  claim_until INTEGER,
  parked_at INTEGER
) STRICT, WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS outbox_unpublished ON outbox_event(created_at, id)
  WHERE published_at IS NULL;
CREATE INDEX IF NOT EXISTS outbox_published_age ON outbox_event(published_at)
  WHERE published_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS outbox_causation ON outbox_event(causation_id);
CREATE INDEX IF NOT EXISTS outbox_unpublished_aggregate
  ON outbox_event(aggregate_id, created_at, id) WHERE published_at IS NULL;
