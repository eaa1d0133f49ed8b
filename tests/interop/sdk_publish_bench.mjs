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
// Credentials come from the environment (AWS_ACCESS_KEY_ID, ...). Reading
// the file and loading the SDK are not timed; the clock runs from the first
// send to the last reply, TLS handshake included (as for the relay).
//
// stdout, one JSON line:
//   {"events","batches","failed","seconds","rate","maxRssKiB","heapUsedKiB"}
// maxRssKiB: process.resourceUsage().maxRSS, this process's peak RSS.
// Exit status: 0, 1 when an SDK call failed or an entry was refused, 2 usage.

// The pinned SDK supports Node 20; its notice about releases after January
// 2027 needing Node 22 is not about this pin: keep it off the output.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

import fs from 'node:fs';
import https from 'node:https';

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

let events = fs.readFileSync(eventsFile, 'utf8').split('\n')
  .filter((l) => l.length > 0).map((l) => JSON.parse(l));
if (limitArg) events = events.slice(0, Number(limitArg));

// Build the batches up front, as the relay has its rows' bodies in memory
// before it sends: what is timed is the publishing.
const batches = [];
for (let i = 0; i < events.length; i += 10) {
  batches.push(events.slice(i, i + 10).map((ev, k) => ({
    Id: `e${k}`,
    MessageBody: ev.body,
    MessageAttributes: Object.fromEntries(Object.entries(ev.attributes).map(
      ([name, value]) => [name, { DataType: 'String', StringValue: value }])),
  })));
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
let next = 0;
async function worker() {
  while (next < batches.length) {
    const entries = batches[next++];
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
  await Promise.all(Array.from({ length: inFlight }, worker));
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const ru = process.resourceUsage();
  process.stdout.write(JSON.stringify({
    events: events.length,
    batches: batches.length,
    failed,
    seconds,
    rate: events.length / seconds,
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
}
