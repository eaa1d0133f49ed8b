// SPDX-License-Identifier: Apache-2.0
// Another consumer of an SQS queue, written with the AWS SDK for JavaScript
// v3 (@aws-sdk/client-sqs): receives messages and never deletes them, the way
// a consumer that dies (or keeps working on them) leaves them in flight.
// tests/integration/consumer/test_consumer_until_idle.c runs it next to
// `oncebox run --until-idle`.
//
//   node sdk_hold.mjs ENDPOINT REGION QUEUE_URL CA_FILE
//
//   OB_SDK_HOLD_N       messages to receive before holding (default 1)
//   OB_SDK_VISIBILITY   VisibilityTimeout of the receives, seconds; unset:
//                       omitted, the queue's own applies
//   OB_SDK_EXTEND_S     0 (default): print HELD and exit 0 at once, the
//                       messages left in flight (a consumer that crashed);
//                       N > 0: keep them in flight, ChangeMessageVisibilityBatch
//                       to N s every N/3 s, until SIGTERM / SIGKILL (a live
//                       consumer that holds them longer than the queue's
//                       visibility timeout)
//
// stdout: "HELD <n> <visibility>" once it holds n messages (the C test waits
// for it), then "EXTENDED <n>" after each extension. stderr: errors.
// Exit status: 0 held (or stopped by SIGTERM), 1 an SDK call failed or the
// messages did not come within 30 s, 2 usage.
// Credentials come from the environment through the SDK's own provider
// chain; the endpoint is used as given, over HTTPS trusting CA_FILE only.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

import fs from 'node:fs';
import https from 'node:https';

import {
  ChangeMessageVisibilityBatchCommand,
  ReceiveMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { NodeHttpHandler } from '@smithy/node-http-handler';

const [endpoint, region, queueUrl, caFile] = process.argv.slice(2);
if (!endpoint || !region || !queueUrl || !caFile) {
  console.error('usage: sdk_hold.mjs ENDPOINT REGION QUEUE_URL CA_FILE');
  process.exit(2);
}
const want = Number(process.env.OB_SDK_HOLD_N || 1);
const visibility = process.env.OB_SDK_VISIBILITY !== undefined
  ? Number(process.env.OB_SDK_VISIBILITY) : undefined;
const extendS = Number(process.env.OB_SDK_EXTEND_S || 0);

const agent = new https.Agent({ keepAlive: true, ca: fs.readFileSync(caFile) });
const client = new SQSClient({
  endpoint,
  region,
  useQueueUrlAsEndpoint: false,
  requestHandler: new NodeHttpHandler({ httpsAgent: agent }),
  maxAttempts: 5,
});

let stopping = false;
process.on('SIGTERM', () => { stopping = true; });

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const held = [];
  const deadline = Date.now() + 30000;
  while (held.length < want) {
    if (Date.now() > deadline) {
      console.error(`sdk_hold: only ${held.length} of ${want} message(s) came`);
      process.exitCode = 1;
      return;
    }
    const r = await client.send(new ReceiveMessageCommand({
      QueueUrl: queueUrl,
      MaxNumberOfMessages: Math.min(10, want - held.length),
      WaitTimeSeconds: 1,
      ...(visibility !== undefined ? { VisibilityTimeout: visibility } : {}),
    }));
    held.push(...(r.Messages || []));
  }
  process.stdout.write(`HELD ${held.length} ${visibility ?? 'queue'}\n`);
  if (extendS <= 0) return;
  while (!stopping) {
    await sleep(Math.max(200, (extendS * 1000) / 3));
    if (stopping) break;
    for (let i = 0; i < held.length; i += 10) {
      const part = held.slice(i, i + 10);
      const d = await client.send(new ChangeMessageVisibilityBatchCommand({
        QueueUrl: queueUrl,
        Entries: part.map((m, k) => ({
          Id: `v${k}`, ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: extendS,
        })),
      }));
      if (d.Failed && d.Failed.length > 0) {
        console.error(`sdk_hold: extension refused: ${JSON.stringify(d.Failed)}`);
        process.exitCode = 1;
        return;
      }
    }
    process.stdout.write(`EXTENDED ${held.length}\n`);
  }
}

try {
  await main();
} catch (e) {
  console.error(`sdk_hold: ${e.name || 'Error'}: ${e.message}`);
  process.exitCode = 1;
} finally {
  client.destroy();
  agent.destroy();
}
