// SPDX-License-Identifier: Apache-2.0
// Receives every message of an SQS queue with the AWS SDK for JavaScript v3
// (@aws-sdk/client-sqs), deletes each one after it was printed, and prints
// one JSON line per message:
//
//   {"messageId":"...","body":"...","attributes":{"eventType":"...",...}}
//
// (attributes: the message attributes, name -> StringValue). Used by
// tests/integration/relay/test_relay_sdk.c to check what oncebox's relay
// published from the point of view of a real AWS SDK consumer.
//
//   node sdk_receive.mjs ENDPOINT REGION QUEUE_URL CA_FILE
//
// Credentials come from the environment (AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY, optional AWS_SESSION_TOKEN) through the SDK's own
// provider chain. The endpoint is used as given (never the queue URL's
// host), over HTTPS trusting CA_FILE only.
//
// The queue is read until EMPTY_RECEIVES (default 2) receives in a row come
// back empty (short polling: WaitTimeSeconds 0, or OB_SDK_WAIT_SECONDS).
// Exit status: 0 done, 1 an SDK call failed or a delete was refused,
// 2 usage.
// The pinned SDK supports Node 20; its notice about releases after January
// 2027 needing Node 22 is not about this pin: keep it off the test output.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

import fs from 'node:fs';
import https from 'node:https';

import {
  DeleteMessageBatchCommand,
  ReceiveMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { NodeHttpHandler } from '@smithy/node-http-handler';

const [endpoint, region, queueUrl, caFile] = process.argv.slice(2);
if (!endpoint || !region || !queueUrl || !caFile) {
  console.error('usage: sdk_receive.mjs ENDPOINT REGION QUEUE_URL CA_FILE');
  process.exit(2);
}
const emptyReceives = Number(process.env.OB_SDK_EMPTY_RECEIVES || 2);
const waitSeconds = Number(process.env.OB_SDK_WAIT_SECONDS || 0);

const agent = new https.Agent({ keepAlive: true, ca: fs.readFileSync(caFile) });
const client = new SQSClient({
  endpoint,
  region,
  useQueueUrlAsEndpoint: false,
  requestHandler: new NodeHttpHandler({ httpsAgent: agent }),
  maxAttempts: 5,
});

function attributesOf(m) {
  const out = {};
  for (const [name, v] of Object.entries(m.MessageAttributes || {})) {
    // Every attribute oncebox sets is a String; keep others visible too.
    out[name] = v.StringValue !== undefined ? v.StringValue
      : v.BinaryValue !== undefined ? { binary: Buffer.from(v.BinaryValue).toString('base64') }
      : null;
  }
  return out;
}

async function main() {
  let empty = 0;
  let total = 0;
  while (empty < emptyReceives) {
    const r = await client.send(new ReceiveMessageCommand({
      QueueUrl: queueUrl,
      MaxNumberOfMessages: 10,
      WaitTimeSeconds: waitSeconds,
      VisibilityTimeout: 60,
      MessageAttributeNames: ['All'],
    }));
    const msgs = r.Messages || [];
    if (msgs.length === 0) {
      empty++;
      continue;
    }
    empty = 0;
    for (const m of msgs) {
      process.stdout.write(JSON.stringify({
        messageId: m.MessageId,
        body: m.Body,
        attributes: attributesOf(m),
      }) + '\n');
    }
    const d = await client.send(new DeleteMessageBatchCommand({
      QueueUrl: queueUrl,
      Entries: msgs.map((m, i) => ({ Id: `d${i}`, ReceiptHandle: m.ReceiptHandle })),
    }));
    if (d.Failed && d.Failed.length > 0) {
      console.error(`sdk_receive: delete refused: ${JSON.stringify(d.Failed)}`);
      process.exitCode = 1;
    }
    total += msgs.length;
  }
  console.error(`sdk_receive: ${total} message(s) received and deleted`);
}

try {
  await main();
} catch (e) {
  console.error(`sdk_receive: ${e.name || 'Error'}: ${e.message}`);
  process.exitCode = 1;
} finally {
  client.destroy();
  agent.destroy();
}
