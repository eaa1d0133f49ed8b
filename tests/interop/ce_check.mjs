// SPDX-License-Identifier: Apache-2.0
// Reads CloudEvents from an SQS queue the way a consumer using the AWS SDK
// for JavaScript v3 (@aws-sdk/client-sqs) and the official CloudEvents SDK
// for JavaScript (cloudevents 10.0.0) does, and says whether each one is
// valid. tests/integration/consumer/ce_interop_util.c (ci_check) runs it.
//
//   node ce_check.mjs --endpoint URL --queue-url URL --ca FILE --count N
//                     --timeout-ms T [--keep] [--wait-seconds S]
//                     [--visibility S] [--region R] [--resolve HOST=IP]
//
// Receives until N messages were read (never more: each receive asks for at
// most the rest) or T ms passed. Each message is deleted after its line was
// printed, unless --keep: then the messages read are made visible again at
// the end (ChangeMessageVisibility 0), for the consumer under test.
// --wait-seconds: the receives' long poll (default 1, capped by the time
// left); --visibility: their VisibilityTimeout (default 30). A MessageId
// seen twice (a redelivery) is printed once.
//
// Each body is checked, in this order; the first failure makes it invalid:
//   1. the SDK's structured mode parses it:
//      HTTP.toEvent({headers: {'content-type': 'application/cloudevents+json'}, body})
//   2. the parsed event passes the SDK's strict event.validate() (which
//      answers false, not an error, for a specversion other than 1.0);
//   3. the body itself, as JSON, passes the SDK's JSON schema and attribute
//      name rule (validateCloudEvent): toEvent silently replaces a missing
//      or empty id with a random UUID and a missing or unparseable time with
//      the current time, and drops attributes whose value is falsy ("", 0,
//      false, null), so step 2 alone accepts such bodies;
//   4. data_base64, if present, is canonical base64 by the SDK's isBase64
//      (round-trips through Buffer: padding required, no other characters;
//      toEvent decodes leniently and re-encodes);
//   5. data and data_base64 are not both present (CloudEvents 1.0 JSON
//      format; the SDK keeps data_base64 and drops data).
//
// stdout: one JSON line per message, in receive order:
//   {"index":k, "messageId":"...", "id","source","type","specversion",
//    "subject","datacontenttype","dataschema","time",
//    "data": <JSON> | "data_base64":"...", "traceparent","tracestate",
//    "extensions": {other extension attributes},
//    "filled": [attributes the SDK made up: absent or falsy in the body,
//               e.g. "time" (always when the body has none), "id"],
//    "attributes": {message attribute name -> StringValue, or
//                   {"binary": base64}},
//    "groupId","dedupId" (FIFO only), "valid":true|false,
//    "error": null | "step: message", "body": "the raw body"}
// The CloudEvents members are the SDK's parsed event's (absent ones left
// out; time as the SDK rewrote it: UTC, milliseconds; data_base64 as the SDK
// re-encoded the bytes); when step 1 failed only index, messageId,
// attributes, valid, error, body are there.
// Then "DONE <n> <invalid>" (n < N when the time ran out).
// stderr: notes and errors. Exit status: 0 (also with invalid events or a
// timeout: the caller asserts), 1 an SQS call failed or a delete / the
// release was refused (no DONE line), 2 usage.
//
// Credentials, region, endpoint, CA and --resolve: as in ce_send.mjs.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

import { createRequire } from 'node:module';

import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  ReceiveMessageCommand,
} from '@aws-sdk/client-sqs';
import { HTTP } from 'cloudevents';

import { parseArgs, sqsClient } from './ce_common.mjs';

const require = createRequire(import.meta.url);
// The SDK's own validators (the package has no "exports" map).
const { validateCloudEvent } = require('cloudevents/dist/event/spec.js');
const { isBase64 } = require('cloudevents/dist/event/validation.js');

const args = parseArgs('ce_check.mjs', process.argv.slice(2), {
  endpoint: true, 'queue-url': true, ca: true, count: true, 'timeout-ms': true,
  keep: 'flag', 'wait-seconds': false, visibility: false, region: false,
  resolve: false,
});
const count = Number(args.count);
const timeoutMs = Number(args['timeout-ms']);
const waitSeconds = args['wait-seconds'] !== undefined ? Number(args['wait-seconds']) : 1;
const visibility = args.visibility !== undefined ? Number(args.visibility) : 30;
for (const [k, v] of [['count', count], ['timeout-ms', timeoutMs],
  ['wait-seconds', waitSeconds], ['visibility', visibility]]) {
  if (!Number.isInteger(v) || v < 0) {
    console.error(`ce_check: --${k} must be a whole number >= 0`);
    process.exit(2);
  }
}

const CORE = ['id', 'source', 'type', 'specversion', 'subject',
  'datacontenttype', 'dataschema', 'time'];
const KNOWN = new Set([...CORE, 'data', 'data_base64', 'traceparent', 'tracestate',
  'datacontentencoding', 'schemaurl']);

function errorText(e) {
  return `${e.name || 'Error'}: ${String(e.message).replace(/\s*\n\s*/g, ' ')}`;
}

function check(body) {
  let event;
  try {
    event = HTTP.toEvent({
      headers: { 'content-type': 'application/cloudevents+json' }, body,
    });
  } catch (e) {
    return { error: `toEvent: ${errorText(e)}` };
  }
  if (Array.isArray(event)) return { error: 'toEvent: a batch, not one event' };
  const out = { event };
  try {
    const raw = JSON.parse(body);
    out.filled = CORE.filter((k) => event[k] !== undefined
      && !(raw && typeof raw === 'object' && raw[k]));
  } catch (e) {
    out.filled = [];
  }
  try {
    if (event.validate() !== true) {
      out.error = `validate: false (specversion ${JSON.stringify(event.specversion)}: `
        + 'the SDK validates 1.0 only)';
      return out;
    }
  } catch (e) {
    out.error = `validate: ${errorText(e)}`;
    return out;
  }
  let raw;
  try {
    raw = JSON.parse(body);
  } catch (e) {
    out.error = `body: ${errorText(e)}`;
    return out;
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    out.error = 'body: not a JSON object';
    return out;
  }
  try {
    validateCloudEvent(raw);
  } catch (e) {
    out.error = `body schema: ${errorText(e)}`;
    return out;
  }
  if ('data_base64' in raw
      && !(typeof raw.data_base64 === 'string' && isBase64(raw.data_base64))) {
    out.error = 'body data_base64: not canonical base64 (the SDK\'s isBase64)';
    return out;
  }
  if ('data' in raw && 'data_base64' in raw) {
    out.error = 'body: data and data_base64 both present';
  }
  return out;
}

function attributesOf(m) {
  const out = {};
  for (const [name, v] of Object.entries(m.MessageAttributes || {})) {
    out[name] = v.StringValue !== undefined ? v.StringValue
      : v.BinaryValue !== undefined ? { binary: Buffer.from(v.BinaryValue).toString('base64') }
      : null;
  }
  return out;
}

function lineOf(index, m) {
  const body = m.Body ?? '';
  const r = check(body);
  const line = { index, messageId: m.MessageId };
  const e = r.event;
  if (e) {
    for (const k of CORE) if (e[k] !== undefined) line[k] = e[k];
    if (e.data_base64) line.data_base64 = e.data_base64;
    else if (e.data !== undefined) line.data = e.data;
    if (e.traceparent !== undefined) line.traceparent = e.traceparent;
    if (e.tracestate !== undefined) line.tracestate = e.tracestate;
    const ext = {};
    for (const k of Object.keys(e)) if (!KNOWN.has(k) && e[k] !== undefined) ext[k] = e[k];
    line.extensions = ext;
    line.filled = r.filled;
  }
  line.attributes = attributesOf(m);
  const sys = m.Attributes || {};
  if (sys.MessageGroupId !== undefined) line.groupId = sys.MessageGroupId;
  if (sys.MessageDeduplicationId !== undefined) line.dedupId = sys.MessageDeduplicationId;
  line.valid = r.error === undefined;
  line.error = r.error ?? null;
  line.body = body;
  return line;
}

const { client, close } = sqsClient(args);
const guard = setTimeout(() => {
  console.error(`ce_check: not done ${timeoutMs + 30000} ms after the start`);
  process.exit(1);
}, timeoutMs + 30000);
guard.unref();

async function main() {
  const deadline = Date.now() + timeoutMs;
  const seen = new Set();
  const held = [];
  let n = 0;
  let invalid = 0;
  let repeats = 0;
  while (n < count) {
    const left = deadline - Date.now();
    if (left <= 0) break;
    const r = await client.send(new ReceiveMessageCommand({
      QueueUrl: args['queue-url'],
      MaxNumberOfMessages: Math.min(10, count - n),
      WaitTimeSeconds: Math.min(waitSeconds, Math.floor(left / 1000)),
      VisibilityTimeout: visibility,
      MessageAttributeNames: ['All'],
      MessageSystemAttributeNames: ['All'],
    }));
    const msgs = r.Messages || [];
    const fresh = [];
    for (const m of msgs) {
      if (seen.has(m.MessageId)) {
        repeats++;
      } else {
        seen.add(m.MessageId);
        fresh.push(m);
      }
    }
    for (const m of fresh) {
      const line = lineOf(n++, m);
      if (!line.valid) invalid++;
      process.stdout.write(`${JSON.stringify(line)}\n`);
    }
    if (msgs.length === 0) continue;
    if (args.keep) {
      held.push(...msgs);
      continue;
    }
    const d = await client.send(new DeleteMessageBatchCommand({
      QueueUrl: args['queue-url'],
      Entries: msgs.map((m, i) => ({ Id: `d${i}`, ReceiptHandle: m.ReceiptHandle })),
    }));
    if (d.Failed && d.Failed.length > 0) {
      console.error(`ce_check: delete refused: ${JSON.stringify(d.Failed)}`);
      process.exitCode = 1;
      return;
    }
  }
  for (let i = 0; i < held.length; i += 10) {
    const part = held.slice(i, i + 10);
    const d = await client.send(new ChangeMessageVisibilityBatchCommand({
      QueueUrl: args['queue-url'],
      Entries: part.map((m, k) => ({ Id: `v${k}`, ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0 })),
    }));
    if (d.Failed && d.Failed.length > 0) {
      console.error(`ce_check: release refused: ${JSON.stringify(d.Failed)}`);
      process.exitCode = 1;
      return;
    }
  }
  if (repeats > 0) console.error(`ce_check: ${repeats} redelivered message(s) not printed again`);
  if (n < count) console.error(`ce_check: ${n} of ${count} message(s) within ${timeoutMs} ms`);
  process.stdout.write(`DONE ${n} ${invalid}\n`);
}

try {
  await main();
} catch (e) {
  console.error(`ce_check: ${errorText(e)}`);
  process.exitCode = 1;
} finally {
  close();
}
