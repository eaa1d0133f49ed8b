// SPDX-License-Identifier: Apache-2.0
// pg-boss (npm, pinned in package.json) doing oncebox's payout work on
// PostgreSQL, for tests/bench/bench_pg.c (docs/postgresql.md, "Throughput").
//
//   node pgboss_bench.mjs SOCKET_DIR PORT DATABASE USER NDJSON N K BATCH
//
// NDJSON: one {"id","type","body"} object a line (the messages oncebox
// handles in the same run). The tables are oncebox's three, plain (no
// partitions): processed_message with its key, merchant_payout with the
// UNIQUE on the payment, outbox_event. The first N lines become pg-boss jobs
// (insert, 1000 a statement, not timed). Then K worker processes (forked
// here) each fetch batches of BATCH jobs and complete them (boss.fetch,
// boss.complete) until a fetch finds none; a batch's handler does, in
// ONE transaction of its own, what oncebox's payout module does per
// message: the dedup claim INSERT .. ON CONFLICT DO NOTHING RETURNING (skip
// if claimed), the body's checks, the payout row, the outbox row with its
// JSON payload, UUIDv7 ids. pg-boss then completes the batch in its own
// statement (it has no way to ack inside the handler's transaction).
// synchronous_commit is the server's (on: the bench's server is durable).
//
// Prints one JSON line: {"impl","n","k","seconds"}. Timed: from the
// connected workers' start to the last one's exit. Exit 1 if any count is
// off (N jobs completed; payouts, outbox rows and dedup rows equal).
import fs from 'node:fs';
import crypto from 'node:crypto';
import { fork } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import PgBoss from 'pg-boss';

const self = fileURLToPath(import.meta.url);
const [sock, port, database, user, ndjson, nArg, kArg, bArg, role] =
  process.argv.slice(2);
const n = Number.parseInt(nArg, 10);
const k = Number.parseInt(kArg, 10);
const batch = Number.parseInt(bArg, 10);
if (!sock || !(n > 0) || !(k > 0) || !(batch > 0)) {
  console.error('usage: pgboss_bench.mjs SOCKET_DIR PORT DATABASE USER NDJSON N K BATCH');
  process.exit(2);
}
const conn = { host: sock, port: Number(port), database, user };
const QUEUE = 'payments';
const CONSUMER = 'create-merchant-payout-v1';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

// UUIDv7: 48-bit ms timestamp, version 7, random rest (RFC 9562).
function uuid7() {
  const b = crypto.randomBytes(16);
  b.writeUIntBE(Date.now(), 0, 6);
  b[6] = 0x70 | (b[6] & 0x0f);
  b[8] = 0x80 | (b[8] & 0x3f);
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS processed_message(consumer_name TEXT NOT NULL,
  message_id TEXT NOT NULL, processed_at BIGINT NOT NULL,
  PRIMARY KEY (consumer_name, message_id));
CREATE TABLE IF NOT EXISTS merchant_payout(id TEXT PRIMARY KEY,
  source_payment_id TEXT NOT NULL UNIQUE, merchant_id TEXT NOT NULL,
  amount_minor BIGINT NOT NULL, currency TEXT NOT NULL,
  source_event_id TEXT NOT NULL, created_at BIGINT NOT NULL);
CREATE TABLE IF NOT EXISTS outbox_event(id TEXT PRIMARY KEY,
  causation_id TEXT NOT NULL, event_type TEXT NOT NULL,
  aggregate_id TEXT NOT NULL, payload TEXT NOT NULL,
  created_at BIGINT NOT NULL, next_attempt_at BIGINT NOT NULL,
  published_at BIGINT);`;

async function handleBatch(client, jobs) {
  await client.query('BEGIN');
  try {
    for (const job of jobs) {
      const { id, body } = job.data;
      const now = Date.now();
      const c = await client.query(
        'INSERT INTO processed_message(consumer_name, message_id, processed_at)' +
        ' VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING 1',
        [CONSUMER, id, now]);
      if (c.rowCount === 0) continue;  // duplicate
      const p = JSON.parse(body);
      if (typeof p !== 'object' || p === null || !UUID.test(p.paymentId) ||
          !UUID.test(p.merchantId) || !Number.isSafeInteger(p.amountInMinorUnits) ||
          p.amountInMinorUnits <= 0 || !/^[A-Z]{3}$/.test(p.currency))
        throw new Error(`bad PaymentCaptured ${id}`);
      const payoutId = uuid7();
      const r = await client.query(
        'INSERT INTO merchant_payout(id, source_payment_id, merchant_id,' +
        ' amount_minor, currency, source_event_id, created_at)' +
        ' VALUES ($1, $2, $3, $4, $5, $6, $7)' +
        ' ON CONFLICT (source_payment_id) DO NOTHING RETURNING 1',
        [payoutId, p.paymentId, p.merchantId, p.amountInMinorUnits, p.currency,
         id, now]);
      if (r.rowCount === 0) throw new Error(`payment ${p.paymentId} already paid`);
      const payload = JSON.stringify({
        payoutId, paymentId: p.paymentId, merchantId: p.merchantId,
        amountInMinorUnits: p.amountInMinorUnits, currency: p.currency,
      });
      await client.query(
        'INSERT INTO outbox_event(id, causation_id, event_type, aggregate_id,' +
        ' payload, created_at, next_attempt_at) VALUES ($1, $2, $3, $4, $5, $6, $7)',
        [uuid7(), id, 'MerchantPayoutCreated', p.paymentId, payload, now, now]);
    }
    await client.query('COMMIT');
  } catch (e) {
    await client.query('ROLLBACK');
    throw e;
  }
}

const quiet = (b) => b.on('error', (e) => console.error('pg-boss:', e.message));

if (role === '--worker') {
  // pg-boss's own fetch and complete in a loop: its work() waits out the
  // polling interval (0.5 s at least) after every batch, even a full one,
  // which would measure the interval, not the queue. This is its best case.
  const boss = new PgBoss({ ...conn, supervise: false, schedule: false,
    migrate: false, max: 2 });
  quiet(boss);
  await boss.start();
  const client = new pg.Client(conn);
  await client.connect();
  await new Promise((resolve) => {
    process.once('message', resolve);
    process.send('ready');
  });
  for (;;) {
    const jobs = await boss.fetch(QUEUE, { batchSize: batch });
    if (!jobs || jobs.length === 0) break;
    await handleBatch(client, jobs);
    await boss.complete(QUEUE, jobs.map((j) => j.id));
  }
  await client.end();
  await boss.stop({ graceful: false, wait: true });
  process.exit(0);
} else {
  const boss = new PgBoss({ ...conn, supervise: false, schedule: false });
  quiet(boss);
  await boss.start();
  await boss.createQueue(QUEUE);
  const admin = new pg.Client(conn);
  await admin.connect();
  await admin.query(SCHEMA);
  const lines = fs.readFileSync(ndjson, 'utf8').split('\n').filter(Boolean)
    .slice(0, n).map((l) => JSON.parse(l));
  if (lines.length !== n) {
    console.error(`pg-boss: ${ndjson} has ${lines.length} lines, want ${n}`);
    process.exit(1);
  }
  for (let i = 0; i < n; i += 1000)
    await boss.insert(lines.slice(i, i + 1000).map((m) => ({
      name: QUEUE, data: { id: m.id, body: m.body } })));
  const workers = [];
  const ready = [];
  const exited = [];
  for (let i = 0; i < k; i++) {
    const w = fork(self, [sock, port, database, user, ndjson, nArg, kArg, bArg,
      '--worker'], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    workers.push(w);
    ready.push(new Promise((resolve) => w.once('message', resolve)));
    exited.push(new Promise((resolve) => w.once('exit', resolve)));
  }
  // The clock starts when every worker is connected (oncebox's workers are
  // timed from their fork, their open included: pg-boss's start-up is not
  // counted, in its favour) and stops when the last one found nothing left.
  await Promise.all(ready);
  const t0 = performance.now();
  for (const w of workers) w.send('go');
  const codes = await Promise.all(exited);
  const seconds = (performance.now() - t0) / 1000;
  if (codes.some((x) => x !== 0)) {
    console.error(`pg-boss: worker exit codes ${codes.join(' ')}`);
    process.exit(1);
  }
  const done = (await admin.query(
    "SELECT count(*)::int AS c FROM pgboss.job WHERE name = $1 AND state = 'completed'",
    [QUEUE])).rows[0].c;
  if (done !== n) {
    console.error(`pg-boss: ${done} jobs completed, want ${n}`);
    process.exit(1);
  }
  const c = await admin.query(
    'SELECT (SELECT count(*) FROM merchant_payout)::int AS p,' +
    ' (SELECT count(*) FROM outbox_event)::int AS o,' +
    ' (SELECT count(*) FROM processed_message)::int AS d');
  const { p, o, d } = c.rows[0];
  await admin.end();
  await boss.stop({ graceful: false, wait: false });
  if (p !== o || p !== d || p > n) {
    console.error(`pg-boss: payouts ${p}, outbox ${o}, dedup ${d}, n ${n}`);
    process.exit(1);
  }
  console.log(JSON.stringify({ impl: 'pg-boss', n, k, seconds }));
  process.exit(0);
}
