// SPDX-License-Identifier: Apache-2.0
// The AWS SDK for JavaScript side of tests/bench/bench_relay.c
// (docs/performance.md, "The relay: requests per event"): publish the same CloudEvents the oncebox relay publishes, with
// the same message attributes, in SendMessageBatch calls of 10 over one
// keep-alive HTTPS connection, and report the rate.
//
//   node sdk_publish_bench.mjs ENDPOINT REGION QUEUE_URL CA_FILE EVENTS_JSONL
//                              [IN_FLIGHT] [LIMIT]
//
// EVENTS_JSONL: one {"id","body","attributes":{name: string}} per line, in
// the order the relay claims them (created_at, id); written by
// ob-bench-relay from the outbox rows with oncebox's own CloudEvents encoder,
// so the bodies are byte for byte the relay's.
// IN_FLIGHT: batches in flight at once (default 1: the relay keeps one
// SendMessageBatch in flight). LIMIT: send only the first LIMIT events
// (warm-up runs).
//
// Credentials come from the environment (AWS_ACCESS_KEY_ID, ...). Loading
// the SDK is not timed; the clock runs from the first send to the last
// reply, TLS handshake included (as for the relay). The file is read as the
// sends go, BATCHES_PER_READ batches at a time (so that a backlog of 100,000
// events is not held in memory, which the relay does not do either), and
// each read is timed on its own and taken out of both the time and the CPU:
// what is left is the publishing (exactly so with IN_FLIGHT 1; with more,
// other batches are in flight during a read).
//
// stdout, one JSON line:
//   {"events","batches","failed","seconds","rate","cpuUs","readSeconds",
//    "readCpuUs","maxRssKiB","heapUsedKiB"}
// seconds, cpuUs: the publishing, the reads taken out. cpuUs: user + system
// CPU of this process (every thread) over that part, process.cpuUsage():
// the SDK's work per event without Node's start-up and the SDK's loading.
// readSeconds, readCpuUs: the reads that were taken out.
// maxRssKiB: process.resourceUsage().maxRSS, this process's peak RSS.
// Exit status: 0, 1 when an SDK call failed or an entry was refused, 2 usage.

// The pinned SDK supports Node 20; its notice about releases after January
// 2027 needing Node 22 is not about this pin: keep it off the output.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

import fs from 'node:fs';
import https from 'node:https';
import { StringDecoder } from 'node:string_decoder';

import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { NodeHttpHandler } from '@smithy/node-http-handler';

const [endpoint, region, queueUrl, caFile, eventsFile, inFlightArg, limitArg] =
  process.argv.slice(2);
if (!endpoint || !region || !queueUrl || !caFile || !eventsFile) {
  console.error('usage: sdk_publish_bench.mjs ENDPOINT REGION QUEUE_URL CA_FILE ' +
                'EVENTS_JSONL [IN_FLIGHT] [LIMIT]');
  process.exit(2);
}
const inFlight = Math.max(1, Number(inFlightArg || 1));

const limit = limitArg ? Number(limitArg) : Infinity;
const BATCHES_PER_READ = 100;

// The next lines of the file, read in chunks; null at the end.
const fd = fs.openSync(eventsFile, 'r');
const chunk = Buffer.alloc(1 << 20);
const decoder = new StringDecoder('utf8');
let pending = [];
let pendingAt = 0;
let rest = '';
let eof = false;
function nextLine() {
  while (pendingAt === pending.length && !eof) {
    const n = fs.readSync(fd, chunk, 0, chunk.length, null);
    if (n === 0) {   // the end: a last line without its newline, if any
      eof = true;
      pending = [rest + decoder.end()];
      rest = '';
    } else {
      pending = (rest + decoder.write(chunk.subarray(0, n))).split('\n');
      rest = pending.pop();
    }
    pendingAt = 0;
    pending = pending.filter((l) => l.length > 0);
  }
  return pendingAt < pending.length ? pending[pendingAt++] : null;
}

// The batches as the SDK takes them, up to BATCHES_PER_READ at a time.
let events = 0;
let nbatches = 0;
let readNs = 0n;
let readCpuUs = 0;
const ready = [];
let readyAt = 0;
function refill() {
  const t = process.hrtime.bigint();
  const c = process.cpuUsage();
  ready.length = 0;
  readyAt = 0;
  while (ready.length < BATCHES_PER_READ && events < limit) {
    const batch = [];
    let line;
    while (batch.length < 10 && events < limit && (line = nextLine()) !== null) {
      const ev = JSON.parse(line);
      batch.push({
        Id: `e${batch.length}`,
        MessageBody: ev.body,
        MessageAttributes: Object.fromEntries(Object.entries(ev.attributes).map(
          ([name, value]) => [name, { DataType: 'String', StringValue: value }])),
      });
      events++;
    }
    if (batch.length === 0) break;
    ready.push(batch);
  }
  const d = process.cpuUsage(c);
  readCpuUs += d.user + d.system;
  readNs += process.hrtime.bigint() - t;
}
function nextBatch() {
  if (readyAt === ready.length) refill();
  return readyAt < ready.length ? ready[readyAt++] : null;
}

const agent = new https.Agent({
  keepAlive: true, maxSockets: inFlight, ca: fs.readFileSync(caFile),
});
const client = new SQSClient({
  endpoint,
  region,
  useQueueUrlAsEndpoint: false,
  requestHandler: new NodeHttpHandler({ httpsAgent: agent }),
});

let failed = 0;
async function worker() {
  for (let entries; (entries = nextBatch()) !== null;) {
    nbatches++;
    const r = await client.send(new SendMessageBatchCommand({
      QueueUrl: queueUrl, Entries: entries,
    }));
    if (r.Failed && r.Failed.length > 0) {
      failed += r.Failed.length;
      console.error(`sdk_publish_bench: refused: ${JSON.stringify(r.Failed[0])}`);
    }
    if ((r.Successful || []).length + (r.Failed || []).length !== entries.length) {
      failed += entries.length;
      console.error('sdk_publish_bench: a reply does not account for every entry');
    }
  }
}

try {
  const t0 = process.hrtime.bigint();
  const c0 = process.cpuUsage();
  await Promise.all(Array.from({ length: inFlight }, worker));
  const cpu = process.cpuUsage(c0);
  const seconds = Number(process.hrtime.bigint() - t0 - readNs) / 1e9;
  const ru = process.resourceUsage();
  process.stdout.write(JSON.stringify({
    events,
    batches: nbatches,
    failed,
    seconds,
    rate: events / seconds,
    cpuUs: cpu.user + cpu.system - readCpuUs,
    readSeconds: Number(readNs) / 1e9,
    readCpuUs,
    maxRssKiB: ru.maxRSS,
    heapUsedKiB: Math.round(process.memoryUsage().heapUsed / 1024),
  }) + '\n');
  if (failed > 0) process.exitCode = 1;
} catch (e) {
  console.error(`sdk_publish_bench: ${e.name || 'Error'}: ${e.message}`);
  process.exitCode = 1;
} finally {
  client.destroy();
  agent.destroy();
  fs.closeSync(fd);
}
