// SPDX-License-Identifier: Apache-2.0
// Sends CloudEvents to an SQS queue the way a producer using the official
// CloudEvents SDK for JavaScript (cloudevents 10.0.0) and the AWS SDK for
// JavaScript v3 (@aws-sdk/client-sqs) does: each event is built strictly
// (`new CloudEvent({...})`, which validates), serialized in structured mode
// (`HTTP.structured(event).body`, i.e. `event.toString()`, content type
// application/cloudevents+json) and sent as the SQS message body.
// tests/integration/consumer/ce_interop_util.c (ci_send) runs it.
//
//   node ce_send.mjs --endpoint URL --queue-url URL --ca FILE
//                    [--region R] [--resolve HOST=IP] < specs.json
//
// stdin: a JSON array of specs, one per message, in this order:
//   id, source, type, subject, datacontenttype, dataschema, time
//        CloudEvents attributes, passed to the SDK as given (wrong types
//        reach the SDK's validation). id must be present and truthy: the
//        SDK silently replaces "" / 0 / a missing id with a random UUID, so
//        that is refused here (send such bodies with raw). Without time the
//        SDK adds the current time; a given time is rewritten by the SDK as
//        UTC with milliseconds (Date.toISOString).
//   data        any JSON value (the event's data)
//   binary      hex string: the bytes go to the SDK as a Buffer, so the
//               body carries data_base64 (excludes data)
//   traceparent, tracestate   the distributed-tracing extension attributes
//   extensions  object of more extension attributes (names [a-z0-9]+; the
//               SDK refuses others)
//   groupId     MessageGroupId (FIFO queues)
//   dedupId     MessageDeduplicationId
//   messageAttributes  name -> {"DataType": "String"|"Number"|"Binary"|...,
//               "StringValue": "..."} or {"DataType", "BinaryValue": base64}
//   raw         a body string sent as is, without the CloudEvents SDK
//               (malformed cases); excludes every CloudEvents field above
//               (groupId, dedupId, messageAttributes still apply)
// Any other field is refused (a typo would otherwise go unnoticed).
//
// stdout: "SENT <index> <SQS MessageId>" per message, in spec order, then
// "DONE <n>". stderr: errors, with the spec index and the SDK's message.
// Exit status: 0 all sent, 1 a spec was refused (by this script or by the
// SDK's validation: nothing is sent then) or an SQS call failed (SENT lines
// of the batches already accepted are printed), 2 usage.
//
// Credentials come from the environment (AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY, optional AWS_SESSION_TOKEN) through the SDK's own
// provider chain; the region from --region, else AWS_REGION, else us-east-1.
// The endpoint is used as given (never the queue URL's host), over HTTPS
// trusting FILE only; --resolve makes HOST resolve to IP (sqs.test ->
// 127.0.0.1 for the test server).
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

import fs from 'node:fs';

import { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import { CloudEvent, HTTP } from 'cloudevents';

import { parseArgs, sqsClient } from './ce_common.mjs';

const args = parseArgs('ce_send.mjs', process.argv.slice(2), {
  endpoint: true, 'queue-url': true, ca: true, region: false, resolve: false,
});

const CE_FIELDS = ['id', 'source', 'type', 'subject', 'datacontenttype',
  'dataschema', 'time', 'data', 'binary', 'traceparent', 'tracestate',
  'extensions'];
const SQS_FIELDS = ['groupId', 'dedupId', 'messageAttributes'];
const ALL_FIELDS = new Set([...CE_FIELDS, ...SQS_FIELDS, 'raw']);
// SQS: at most 10 entries and 256 KiB of bodies + attributes per batch.
const BATCH_BYTES = 250 * 1024;

function refuse(i, msg) {
  console.error(`ce_send: spec ${i}: ${msg}`);
  process.exit(1);
}

function bodyOf(spec, i) {
  if (spec.raw !== undefined) {
    if (typeof spec.raw !== 'string') refuse(i, 'raw must be a string');
    const mixed = CE_FIELDS.filter((f) => spec[f] !== undefined);
    if (mixed.length > 0) refuse(i, `raw excludes ${mixed.join(', ')}`);
    return spec.raw;
  }
  if (!spec.id) {
    refuse(i, `id ${JSON.stringify(spec.id)}: missing or falsy; the SDK would `
      + 'replace it with a random UUID (use raw for such a body)');
  }
  if (spec.data !== undefined && spec.binary !== undefined) {
    refuse(i, 'data and binary exclude each other');
  }
  const attrs = {};
  for (const f of ['id', 'source', 'type', 'subject', 'datacontenttype',
    'dataschema', 'time', 'data', 'traceparent', 'tracestate']) {
    if (spec[f] !== undefined) attrs[f] = spec[f];
  }
  if (spec.binary !== undefined) {
    if (typeof spec.binary !== 'string' || !/^([0-9a-fA-F]{2})*$/.test(spec.binary)) {
      refuse(i, 'binary must be a hex string of whole bytes');
    }
    attrs.data = Buffer.from(spec.binary, 'hex');
  }
  if (spec.extensions !== undefined) {
    if (typeof spec.extensions !== 'object' || spec.extensions === null
        || Array.isArray(spec.extensions)) {
      refuse(i, 'extensions must be an object');
    }
    for (const [k, v] of Object.entries(spec.extensions)) {
      if (ALL_FIELDS.has(k) || k === 'specversion' || k === 'data_base64') {
        refuse(i, `extension ${k} names an attribute or a spec field`);
      }
      attrs[k] = v;
    }
  }
  let event;
  try {
    event = new CloudEvent(attrs); // strict: validates
  } catch (e) {
    refuse(i, `the CloudEvents SDK refused the event: ${e.name}: ${String(e.message).replace(/\s*\n\s*/g, ' ')}`);
  }
  // The SDK's structured mode: this body, content type
  // application/cloudevents+json (SQS carries the body only).
  return HTTP.structured(event).body;
}

function attributesOf(spec, i) {
  if (spec.messageAttributes === undefined) return undefined;
  const m = spec.messageAttributes;
  if (typeof m !== 'object' || m === null || Array.isArray(m)) {
    refuse(i, 'messageAttributes must be an object');
  }
  const out = {};
  for (const [name, v] of Object.entries(m)) {
    if (typeof v !== 'object' || v === null || typeof v.DataType !== 'string') {
      refuse(i, `messageAttributes.${name}: needs DataType`);
    }
    if ((v.StringValue === undefined) === (v.BinaryValue === undefined)) {
      refuse(i, `messageAttributes.${name}: exactly one of StringValue, BinaryValue`);
    }
    out[name] = v.StringValue !== undefined
      ? { DataType: v.DataType, StringValue: String(v.StringValue) }
      : { DataType: v.DataType, BinaryValue: Buffer.from(String(v.BinaryValue), 'base64') };
  }
  return out;
}

function entriesOf(specs) {
  return specs.map((spec, i) => {
    if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) {
      refuse(i, 'not an object');
    }
    const unknown = Object.keys(spec).filter((k) => !ALL_FIELDS.has(k));
    if (unknown.length > 0) refuse(i, `unknown field(s) ${unknown.join(', ')}`);
    const e = { Id: `m${i}`, MessageBody: bodyOf(spec, i) };
    const a = attributesOf(spec, i);
    if (a !== undefined) e.MessageAttributes = a;
    if (spec.groupId !== undefined) e.MessageGroupId = String(spec.groupId);
    if (spec.dedupId !== undefined) e.MessageDeduplicationId = String(spec.dedupId);
    return e;
  });
}

function sizeOf(e) {
  let n = Buffer.byteLength(e.MessageBody);
  for (const [k, v] of Object.entries(e.MessageAttributes || {})) {
    n += Buffer.byteLength(k) + Buffer.byteLength(v.DataType)
      + (v.StringValue !== undefined ? Buffer.byteLength(v.StringValue) : v.BinaryValue.length);
  }
  return n;
}

// Batches of at most 10 entries and BATCH_BYTES, in order.
function batchesOf(entries) {
  const out = [];
  let cur = [];
  let bytes = 0;
  for (const e of entries) {
    const n = sizeOf(e);
    if (cur.length > 0 && (cur.length === 10 || bytes + n > BATCH_BYTES)) {
      out.push(cur);
      cur = [];
      bytes = 0;
    }
    cur.push(e);
    bytes += n;
  }
  if (cur.length > 0) out.push(cur);
  return out;
}

let specs;
try {
  specs = JSON.parse(fs.readFileSync(0, 'utf8'));
} catch (e) {
  console.error(`ce_send: stdin is not JSON: ${e.message}`);
  process.exit(1);
}
if (!Array.isArray(specs)) {
  console.error('ce_send: stdin must be a JSON array of specs');
  process.exit(1);
}
// Every spec is built (and validated) before anything is sent.
const entries = entriesOf(specs);

const { client, close } = sqsClient(args);
const guard = setTimeout(() => {
  console.error('ce_send: not done after 60 s');
  process.exit(1);
}, 60000);
guard.unref();

try {
  let sent = 0;
  for (const batch of batchesOf(entries)) {
    const r = await client.send(new SendMessageBatchCommand({
      QueueUrl: args['queue-url'],
      Entries: batch,
    }));
    const ok = new Map((r.Successful || []).map((s) => [s.Id, s.MessageId]));
    for (const e of batch) {
      if (!ok.has(e.Id)) continue;
      process.stdout.write(`SENT ${e.Id.slice(1)} ${ok.get(e.Id)}\n`);
      sent++;
    }
    if (r.Failed && r.Failed.length > 0) {
      for (const f of r.Failed) {
        console.error(`ce_send: spec ${f.Id.slice(1)}: SQS refused it: `
          + `${f.Code}${f.SenderFault ? ' (sender fault)' : ''}: ${f.Message || ''}`);
      }
      process.exitCode = 1;
      break;
    }
  }
  if (process.exitCode !== 1) process.stdout.write(`DONE ${sent}\n`);
} catch (e) {
  console.error(`ce_send: ${e.name || 'Error'}: ${e.message}`);
  process.exitCode = 1;
} finally {
  close();
}
