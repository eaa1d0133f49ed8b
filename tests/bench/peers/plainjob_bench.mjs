// SPDX-License-Identifier: Apache-2.0
// plainjob (npm) on better-sqlite3 doing oncebox's payout work, for
// tests/bench/bench_peers.c (docs/performance.md, "Peers").
//
//   node plainjob_bench.mjs DB NDJSON N
//
// NDJSON: one {"id","type","body"} object a line (the messages oncebox
// handles in the same run; body is the PaymentCaptured JSON text).
// The queue: plainjob's own (defineQueue), WAL; plainjob sets
// synchronous=NORMAL, the bench sets it back to FULL on the same connection
// right after, as oncebox runs. The first N lines are added with addMany
// (one transaction, not timed). Then one worker (defineWorker, jobs one by
// one, as plainjob does) handles them; the handler does in ONE transaction
// (better-sqlite3 .immediate()) what oncebox's payout module does: the
// dedup claim INSERT .. ON CONFLICT DO NOTHING RETURNING (skip if already
// claimed), parse and check the body, the payout row, the outbox row with
// its JSON payload, UUIDv7 ids. plainjob then acks (markJobAsDone) in its
// own statement: it has no way to ack inside the handler's transaction.
//
// Prints one JSON line: {"impl","n","seconds","sqlite","synchronous",
// "maxRssKiB"}. Timed: from worker.start() to the N-th completed job.
// Exit 1 if any count is off.
import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { better, defineQueue, defineWorker } from 'plainjob';

const here = path.dirname(fileURLToPath(import.meta.url));
const [dbPath, ndjson, nArg] = process.argv.slice(2);
const n = Number.parseInt(nArg, 10);
if (!dbPath || !ndjson || !(n > 0)) {
  console.error('usage: plainjob_bench.mjs DB NDJSON N');
  process.exit(2);
}

const CONSUMER = 'create-merchant-payout-v1';
const silent = { debug() {}, info() {}, warn: console.error, error: console.error };

// UUIDv7: 48-bit ms timestamp, version 7, random rest (RFC 9562).
function uuid7() {
  const b = crypto.randomBytes(16);
  const ms = Date.now();
  b.writeUIntBE(ms, 0, 6);
  b[6] = 0x70 | (b[6] & 0x0f);
  b[8] = 0x80 | (b[8] & 0x3f);
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const db = new Database(dbPath);
const queue = defineQueue({
  connection: better(db),
  logger: silent,
  maintenanceInterval: 3600 * 1000,
});
db.pragma('synchronous = FULL');
db.exec(fs.readFileSync(path.join(here, 'schema.sql'), 'utf8'));
const sync = db.pragma('synchronous', { simple: true });
const mode = db.pragma('journal_mode', { simple: true });
if (sync !== 2 || mode !== 'wal') {
  console.error(`plainjob: synchronous=${sync} journal_mode=${mode}`);
  process.exit(1);
}

const claim = db.prepare(
  'INSERT INTO processed_message(consumer_name, message_id, processed_at)' +
  ' VALUES (?, ?, ?) ON CONFLICT DO NOTHING RETURNING 1');
const pay = db.prepare(
  'INSERT INTO merchant_payout(id, source_payment_id, merchant_id,' +
  ' amount_minor, currency, source_event_id, created_at)' +
  ' VALUES (?, ?, ?, ?, ?, ?, ?)' +
  ' ON CONFLICT(source_payment_id) DO NOTHING RETURNING 1');
const out = db.prepare(
  'INSERT INTO outbox_event(id, causation_id, event_type, aggregate_id,' +
  ' payload, created_at, next_attempt_at) VALUES (?, ?, ?, ?, ?, ?, ?)');

const handle = db.transaction((id, body) => {
  const now = Date.now();
  if (claim.get(CONSUMER, id, now) === undefined) return;  // duplicate
  const p = JSON.parse(body);
  if (typeof p !== 'object' || p === null || !UUID.test(p.paymentId) ||
      !UUID.test(p.merchantId) || !Number.isSafeInteger(p.amountInMinorUnits) ||
      p.amountInMinorUnits <= 0 || !/^[A-Z]{3}$/.test(p.currency))
    throw new Error(`bad PaymentCaptured ${id}`);
  const payoutId = uuid7();
  if (pay.get(payoutId, p.paymentId, p.merchantId, p.amountInMinorUnits,
              p.currency, id, now) === undefined)
    throw new Error(`payment ${p.paymentId} already paid`);
  const payload = JSON.stringify({
    payoutId, paymentId: p.paymentId, merchantId: p.merchantId,
    amountInMinorUnits: p.amountInMinorUnits, currency: p.currency,
  });
  out.run(uuid7(), id, 'MerchantPayoutCreated', p.paymentId, payload, now, now);
});

// Enqueue (not timed).
const lines = fs.readFileSync(ndjson, 'utf8').split('\n').filter(Boolean)
  .slice(0, n).map((l) => JSON.parse(l));
if (lines.length !== n) {
  console.error(`plainjob: ${ndjson} has ${lines.length} lines, want ${n}`);
  process.exit(1);
}
queue.addMany('PaymentCaptured', lines.map((m) => ({ id: m.id, body: m.body })));

let done = 0;
let failed = 0;
let t1 = 0;
let finish;
const finished = new Promise((resolve) => { finish = resolve; });
const worker = defineWorker('PaymentCaptured', (job) => {
  const m = JSON.parse(job.data);
  handle.immediate(m.id, m.body);
}, {
  queue,
  logger: silent,
  onCompleted: () => {
    if (++done === n) { t1 = performance.now(); finish(); }
  },
  onFailed: (job, err) => {
    failed++;
    console.error(`plainjob: job ${job.id} failed: ${err}`);
    finish();
  },
});

const t0 = performance.now();
const running = worker.start();
await finished;
await worker.stop();
await running;

const count = (sql) => db.prepare(sql).pluck().get();
const payouts = count('SELECT count(*) FROM merchant_payout');
const events = count('SELECT count(*) FROM outbox_event');
const claims = count('SELECT count(*) FROM processed_message');
const jobsDone = queue.countJobs({ status: 2 });
const ok = failed === 0 && payouts === n && events === n && claims === n &&
  jobsDone === n;
if (!ok)
  console.error(`plainjob: payouts ${payouts} events ${events} claims ${claims}` +
                ` done ${jobsDone} failed ${failed}, want ${n}`);
const version = count('SELECT sqlite_version()');
queue.close();
process.stdout.write(JSON.stringify({
  impl: 'plainjob', n, seconds: (t1 - t0) / 1000, sqlite: version,
  synchronous: sync, maxRssKiB: process.resourceUsage().maxRSS,
}) + '\n');
process.exit(ok ? 0 : 1);
