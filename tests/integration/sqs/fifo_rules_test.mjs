// SPDX-License-Identifier: Apache-2.0
// The AWS FIFO rules of fifo_sqs.mjs, seen through the real AWS SDK for
// JavaScript (@aws-sdk/client-sqs, which signs every request and checks
// MD5OfMessageBody on send, batch and receive) talking HTTPS to
// sqs_server.mjs with OB_SQS_BACKEND=fifo-rules (SigV4 checked, test CA,
// sqs.test resolved to 127.0.0.1 by the agent's lookup). ctest sqs_fifo_rules.
//
//   node tests/integration/sqs/fifo_rules_test.mjs
//   exit 0 all passed, 1 a rule broken, 77 skipped (no Node >= 20,
//   tests/interop/node_modules, openssl or faketime)
//
// The rules and the AWS documents they come from are listed in fifo_sqs.mjs.
// Timing: one real 1 s visibility expiry and two short long polls; the
// 5-minute deduplication interval and queue delays use the model's clock
// (POST /_test/clock), never real waiting.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import dns from 'node:dns';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const src = process.env.OB_SOURCE_DIR || path.resolve(here, '../../..');
const interop = path.join(src, 'tests/interop');

function skip(why) {
  console.log(`skipped: ${why}`);
  process.exit(77);
}
if (Number(process.versions.node.split('.')[0]) < 20) skip(`node ${process.versions.node} found, Node.js >= 20 needed`);
for (const p of ['@aws-sdk/client-sqs/package.json', '@smithy/node-http-handler/package.json',
  '@smithy/signature-v4/package.json', '@aws-crypto/sha256-js/package.json'])
  if (!fs.existsSync(path.join(interop, 'node_modules', p)))
    skip(`${path.join(interop, 'node_modules', p)} missing (run: cd ${interop} && npm ci)`);
for (const tool of ['openssl', 'faketime'])
  try { execFileSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' }); } catch { skip(`${tool} not found (gen_pki.sh needs it)`); }

const require = createRequire(path.join(interop, 'package.json'));
const sdk = require('@aws-sdk/client-sqs');
const { NodeHttpHandler } = require('@smithy/node-http-handler');
const {
  SQSClient, CreateQueueCommand, GetQueueAttributesCommand, GetQueueUrlCommand, SendMessageCommand,
  SendMessageBatchCommand, ReceiveMessageCommand, DeleteMessageCommand, DeleteMessageBatchCommand,
  ChangeMessageVisibilityCommand, ChangeMessageVisibilityBatchCommand, PurgeQueueCommand,
} = sdk;

const AKID = 'AKIDFIFORULES';
const SECRET = 'fifo/rules+SECRET/key0123456789abcdefgh';
const REGION = 'us-east-1';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---- the server --------------------------------------------------------------
let dir; let server; let port; let plainPort; let agent; let sqs;
const serverOut = [];

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ob-fifo-rules-'));
  execFileSync('sh', [path.join(src, 'tests/integration/http/gen_pki.sh'), path.join(dir, 'pki')], { stdio: 'ignore' });
  server = spawn(process.execPath, [path.join(here, 'sqs_server.mjs'), path.join(dir, 'pki'), AKID, SECRET, REGION],
    { env: { ...process.env, OB_SQS_BACKEND: 'fifo-rules', OB_INTEROP_DIR: interop }, stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise((resolve, reject) => {
    let buf = '';
    server.stdout.on('data', (c) => {
      buf += c;
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        serverOut.push(line);
        if (line.startsWith('FAUXQS ')) plainPort = Number(line.slice(7));
        if (line.startsWith('PORT ')) { port = Number(line.slice(5)); resolve(); }
      }
    });
    server.on('exit', (code) => reject(new Error(`sqs_server.mjs exited ${code}`)));
  });
  const lookup = (host, opts, cb) => (host === 'sqs.test'
    ? (opts.all ? cb(null, [{ address: '127.0.0.1', family: 4 }]) : cb(null, '127.0.0.1', 4))
    : dns.lookup(host, opts, cb));
  agent = new https.Agent({ keepAlive: true, ca: fs.readFileSync(path.join(dir, 'pki/ca.crt')), lookup });
  sqs = client(SECRET);
});

after(() => {
  if (sqs) sqs.destroy();
  if (agent) agent.destroy();
  if (server) server.kill('SIGTERM');
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

function client(secret) {
  return new SQSClient({
    endpoint: `https://sqs.test:${port}`, region: REGION, useQueueUrlAsEndpoint: false,
    credentials: { accessKeyId: AKID, secretAccessKey: secret },
    requestHandler: new NodeHttpHandler({ httpsAgent: agent }), maxAttempts: 1,
  });
}

// A test route of sqs_server.mjs over the same TLS agent.
function control(route, obj) {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify(obj);
    const req = https.request({ host: 'sqs.test', port, path: route, method: 'POST', agent,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      let b = '';
      res.on('data', (c) => { b += c; });
      res.on('end', () => resolve({ status: res.statusCode, body: JSON.parse(b || '{}') }));
    });
    req.on('error', reject);
    req.end(body);
  });
}
const advance = (ms) => control('/_test/clock', { advanceMs: ms });

// ---- helpers -------------------------------------------------------------------
let serial = 0;
async function queue(base, attrs = {}, fifo = true) {
  const name = `${base}-${++serial}${fifo ? '.fifo' : ''}`;
  const Attributes = fifo ? { FifoQueue: 'true', ...attrs } : attrs;
  const r = await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes }));
  return r.QueueUrl;
}
const send = (QueueUrl, MessageBody, MessageGroupId, extra = {}) =>
  sqs.send(new SendMessageCommand({ QueueUrl, MessageBody, MessageGroupId,
    MessageDeduplicationId: extra.dedup === null ? undefined : (extra.dedup ?? `d-${++serial}`),
    ...extra.more }));
const receive = async (QueueUrl, max = 10, extra = {}) =>
  (await sqs.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: max,
    MessageSystemAttributeNames: ['All'], WaitTimeSeconds: 0, ...extra }))).Messages || [];
const bodies = (msgs) => msgs.map((m) => m.Body);
const del = (QueueUrl, ReceiptHandle) => sqs.send(new DeleteMessageCommand({ QueueUrl, ReceiptHandle }));
const cmv = (QueueUrl, ReceiptHandle, VisibilityTimeout) =>
  sqs.send(new ChangeMessageVisibilityCommand({ QueueUrl, ReceiptHandle, VisibilityTimeout }));
const attrs = async (QueueUrl, names = ['All']) =>
  (await sqs.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: names }))).Attributes || {};
// An SDK error with this code (the x-amzn-query-error code, which a
// query-compatible client prefers) and HTTP status.
const refused = (code, status = 400, text) => (e) => {
  assert.equal(e.Code ?? e.name, code, `${e.name}: ${e.message}`);
  assert.equal(e.$metadata.httpStatusCode, status);
  if (text) assert.match(e.message, text);
  return true;
};

// MD5OfMessageAttributes, written here from the description in
// core/sqs/sqs_md5.c, to check subsets (the full set is checked against a
// fixed vector).
function md5Attrs(a) {
  const parts = [];
  const put = (b) => { const l = Buffer.alloc(4); l.writeUInt32BE(b.length); parts.push(l, b); };
  for (const n of Object.keys(a).sort()) {
    put(Buffer.from(n)); put(Buffer.from(a[n].DataType));
    const bin = a[n].DataType.startsWith('Binary');
    parts.push(Buffer.from([bin ? 2 : 1]));
    put(bin ? Buffer.from(a[n].BinaryValue) : Buffer.from(a[n].StringValue));
  }
  return crypto.createHash('md5').update(Buffer.concat(parts)).digest('hex');
}

// ---- the rules -------------------------------------------------------------------
test('ten messages of one group come in one receive, in order, with their attributes', async () => {
  const q = await queue('ten');
  const sent = await sqs.send(new SendMessageBatchCommand({ QueueUrl: q, Entries: Array.from({ length: 10 }, (_, i) => ({
    Id: `e${i}`, MessageBody: `m${i}`, MessageGroupId: 'g', MessageDeduplicationId: `d${i}` })) }));
  assert.equal(sent.Successful.length, 10);
  assert.equal((sent.Failed || []).length, 0);
  const seqs = sent.Successful.map((s) => BigInt(s.SequenceNumber));
  for (let i = 1; i < 10; i++) assert.ok(seqs[i] > seqs[i - 1], 'SequenceNumber increases in a batch');
  const before = Date.now();
  const got = await receive(q, 10);
  assert.deepEqual(bodies(got), ['m0', 'm1', 'm2', 'm3', 'm4', 'm5', 'm6', 'm7', 'm8', 'm9']);
  got.forEach((m, i) => {
    assert.equal(m.MessageId, sent.Successful[i].MessageId);
    assert.equal(m.Attributes.MessageGroupId, 'g');
    assert.equal(m.Attributes.MessageDeduplicationId, `d${i}`);
    assert.equal(m.Attributes.SequenceNumber, sent.Successful[i].SequenceNumber);
    assert.equal(m.Attributes.ApproximateReceiveCount, '1');
    assert.match(m.Attributes.SenderId, /./);
    const sentAt = Number(m.Attributes.SentTimestamp);
    const first = Number(m.Attributes.ApproximateFirstReceiveTimestamp);
    assert.ok(sentAt <= first && first >= before - 1000 && first <= Date.now() + 1000, 'timestamps in ms');
  });
  // Only the requested system attributes come back.
  const q2 = await queue('ten-names');
  await send(q2, 'x', 'g');
  const [m] = await receive(q2, 1, { MessageSystemAttributeNames: ['ApproximateReceiveCount'] });
  assert.deepEqual(m.Attributes, { ApproximateReceiveCount: '1' });
});

test('a group is locked while one of its messages is in flight; other groups flow', async () => {
  const q = await queue('lock');
  for (const b of ['a1', 'a2', 'a3']) await send(q, b, 'a');
  await send(q, 'b1', 'b');
  const [a1] = await receive(q, 1);
  assert.equal(a1.Body, 'a1');
  assert.deepEqual(bodies(await receive(q, 10)), ['b1'], 'only the other group while a1 is in flight');
  assert.deepEqual(await receive(q, 10), [], 'a stays locked, b is in flight');
  const a = await attrs(q, ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible']);
  assert.deepEqual(a, { ApproximateNumberOfMessages: '2', ApproximateNumberOfMessagesNotVisible: '2' });
  await del(q, a1.ReceiptHandle);
  assert.deepEqual(bodies(await receive(q, 10)), ['a2', 'a3'], 'deleting a1 frees the group');
});

test('ChangeMessageVisibility 0 releases a message at once; only the latest handle is valid', async () => {
  const q = await queue('release');
  await send(q, 'x1', 'g');
  await send(q, 'x2', 'g');
  const [first] = await receive(q, 1, { VisibilityTimeout: 30 });
  await cmv(q, first.ReceiptHandle, 0);
  const again = await receive(q, 10);
  assert.deepEqual(bodies(again), ['x1', 'x2'], 'released: the group is free and in order');
  assert.equal(again[0].Attributes.ApproximateReceiveCount, '2');
  assert.notEqual(again[0].ReceiptHandle, first.ReceiptHandle, 'a new receipt handle per receive');
  // [KC-handle]: an old FIFO handle is expired, for both calls.
  const expired = refused('InvalidParameterValue', 400, /receipt handle has expired/);
  await assert.rejects(del(q, first.ReceiptHandle), expired);
  await assert.rejects(cmv(q, first.ReceiptHandle, 10), expired);
  await assert.rejects(del(q, 'AQEBnot-a-handle-of-ours'), refused('ReceiptHandleIsInvalid', 404));
  // CMV beyond 12 h from the receive is refused, not clamped.
  await assert.rejects(cmv(q, again[0].ReceiptHandle, 43200 + 1), refused('InvalidParameterValue'));
  await del(q, again[0].ReceiptHandle);
  await del(q, again[0].ReceiptHandle);   // the still-valid handle again: fine
  const b = await sqs.send(new ChangeMessageVisibilityBatchCommand({ QueueUrl: q, Entries: [
    { Id: 'ok', ReceiptHandle: again[1].ReceiptHandle, VisibilityTimeout: 0 },
    { Id: 'old', ReceiptHandle: first.ReceiptHandle, VisibilityTimeout: 0 }] }));
  assert.deepEqual(b.Successful.map((s) => s.Id), ['ok']);
  assert.deepEqual(b.Failed.map((f) => [f.Id, f.Code, f.SenderFault]), [['old', 'InvalidParameterValue', true]]);
  assert.deepEqual(bodies(await receive(q, 10)), ['x2']);
});

test('two groups interleaved: as many of one group as possible first, then the other', async () => {
  const q = await queue('two');
  for (const b of ['a1', 'b1', 'a2', 'b2', 'a3', 'b3']) await send(q, b, b[0]);
  assert.deepEqual(bodies(await receive(q, 10)), ['a1', 'a2', 'a3', 'b1', 'b2', 'b3']);

  const q2 = await queue('two-small');
  for (const b of ['b1', 'a1', 'b2', 'a2', 'b3', 'a3']) await send(q2, b, b[0]);
  const first = await receive(q2, 2);
  assert.deepEqual(bodies(first), ['b1', 'b2'], 'the group of the oldest message first');
  assert.deepEqual(bodies(await receive(q2, 10)), ['a1', 'a2', 'a3'], 'b locked (b1, b2 in flight)');
  await sqs.send(new DeleteMessageBatchCommand({ QueueUrl: q2,
    Entries: first.map((m, i) => ({ Id: `d${i}`, ReceiptHandle: m.ReceiptHandle })) }));
  assert.deepEqual(bodies(await receive(q2, 10)), ['b3'], 'b free again once b1, b2 are deleted; a in flight');
});

test('visibility expiry makes the head of the group receivable again, in order', async () => {
  const q = await queue('expiry', { VisibilityTimeout: '1' });
  await send(q, 'e1', 'g');
  await send(q, 'e2', 'g');
  const [e1] = await receive(q, 1);
  assert.equal(e1.Body, 'e1');
  assert.deepEqual(await receive(q, 10), [], 'locked while e1 is in flight');
  await sleep(1150);
  const got = await receive(q, 10);
  assert.deepEqual(bodies(got), ['e1', 'e2']);
  assert.equal(got[0].Attributes.ApproximateReceiveCount, '2');
  assert.equal(got[0].Attributes.ApproximateFirstReceiveTimestamp, e1.Attributes.ApproximateFirstReceiveTimestamp);
  await assert.rejects(del(q, e1.ReceiptHandle), refused('InvalidParameterValue', 400, /expired/));
});

test('deduplication ID: a duplicate within 5 minutes succeeds with the first MessageId, enqueues nothing', async () => {
  const q = await queue('dedup');
  const one = await send(q, 'one', 'g', { dedup: 'k' });
  const two = await send(q, 'two', 'g', { dedup: 'k' });   // the SDK checked two's MD5
  assert.equal(two.MessageId, one.MessageId);
  assert.equal(two.SequenceNumber, one.SequenceNumber);
  assert.equal((await attrs(q, ['ApproximateNumberOfMessages'])).ApproximateNumberOfMessages, '1');
  const [m] = await receive(q, 10);
  assert.equal(m.Body, 'one');
  await del(q, m.ReceiptHandle);
  // Still tracked after the message was received and deleted.
  await advance(4 * 60 * 1000);
  assert.equal((await send(q, 'three', 'g', { dedup: 'k' })).MessageId, one.MessageId);
  assert.deepEqual(await receive(q, 10), []);
  // The interval counts from the first send: past 5 minutes it is a new message.
  await advance(60 * 1000 + 1000);
  const four = await send(q, 'four', 'g', { dedup: 'k' });
  assert.notEqual(four.MessageId, one.MessageId);
  assert.ok(BigInt(four.SequenceNumber) > BigInt(one.SequenceNumber));
  assert.deepEqual(bodies(await receive(q, 10)), ['four']);
});

test('content-based deduplication: SHA-256 of the body only; an explicit ID overrides it', async () => {
  const q = await queue('cbd', { ContentBasedDeduplication: 'true' });
  const a = await send(q, 'same', 'g', { dedup: null });
  const b = await send(q, 'same', 'g', { dedup: null,
    more: { MessageAttributes: { x: { DataType: 'String', StringValue: 'other attrs' } } } });
  assert.equal(b.MessageId, a.MessageId, 'attributes are not part of the hash');
  const c = await send(q, 'same', 'g', { dedup: 'explicit' });
  assert.notEqual(c.MessageId, a.MessageId, 'an explicit ID overrides the hash');
  const sha = crypto.createHash('sha256').update('same').digest('hex');
  const d = await send(q, 'different body', 'g', { dedup: sha });
  assert.equal(d.MessageId, a.MessageId, 'an explicit ID equal to the hash is a duplicate');
  const got = await receive(q, 10);
  assert.deepEqual(bodies(got), ['same', 'same']);
  assert.equal(got[0].Attributes.MessageDeduplicationId, sha);
  assert.equal(got[1].Attributes.MessageDeduplicationId, 'explicit');
});

test('FIFO sends: MessageGroupId required, a deduplication ID or CBD required, no per-message delay', async () => {
  const q = await queue('send-rules');
  await assert.rejects(send(q, 'x', undefined), refused('MissingParameter'));
  await assert.rejects(send(q, 'x', 'g', { dedup: null }), refused('InvalidParameterValue', 400, /ContentBasedDeduplication/));
  await assert.rejects(send(q, 'x', 'g', { more: { DelaySeconds: 5 } }), refused('InvalidParameterValue', 400, /DelaySeconds/));
  await send(q, 'zero delay', 'g', { more: { DelaySeconds: 0 } });   // 0 is accepted
  const batch = await sqs.send(new SendMessageBatchCommand({ QueueUrl: q, Entries: [
    { Id: 'ok', MessageBody: 'b-ok', MessageGroupId: 'g', MessageDeduplicationId: 'b1' },
    { Id: 'nogroup', MessageBody: 'b-bad', MessageDeduplicationId: 'b2' }] }));
  assert.deepEqual(batch.Successful.map((s) => s.Id), ['ok']);
  assert.deepEqual(batch.Failed.map((f) => [f.Id, f.Code, f.SenderFault]), [['nogroup', 'MissingParameter', true]]);
  assert.deepEqual(bodies(await receive(q, 10)), ['zero delay', 'b-ok']);
});

test('redrive: past maxReceiveCount a receive moves the message to the DLQ and goes on', async () => {
  const dlq = await queue('dlq');
  const dlqArn = (await attrs(dlq, ['QueueArn'])).QueueArn;
  const policy = JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: 2 });
  const q = await queue('src', { RedrivePolicy: policy });
  assert.deepEqual(JSON.parse((await attrs(q, ['RedrivePolicy'])).RedrivePolicy), JSON.parse(policy));
  await send(q, 'p1', 'g');
  await send(q, 'p2', 'g');
  for (const n of ['1', '2']) {
    const [m] = await receive(q, 1, { VisibilityTimeout: 0 });
    assert.deepEqual([m.Body, m.Attributes.ApproximateReceiveCount], ['p1', n]);
  }
  const [next] = await receive(q, 1);
  assert.deepEqual([next.Body, next.Attributes.ApproximateReceiveCount], ['p2', '1'], 'p1 moved, p2 next');
  const [dead] = await receive(dlq, 10);
  assert.equal(dead.Body, 'p1');
  assert.equal(dead.Attributes.ApproximateReceiveCount, '3', 'counted across queues');
  assert.equal(dead.Attributes.DeadLetterQueueSourceArn, (await attrs(q, ['QueueArn'])).QueueArn);
  assert.equal(dead.Attributes.MessageGroupId, 'g');
  // A FIFO queue's DLQ must be FIFO (and the other way round).
  const std = await queue('std-dlq', {}, false);
  const stdArn = (await attrs(std, ['QueueArn'])).QueueArn;
  await assert.rejects(queue('bad-src', { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: stdArn, maxReceiveCount: 1 }) }),
    refused('InvalidParameterValue', 400, /FIFO/));
  // Standard queues too.
  const ssrc = await queue('std-src', { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: stdArn, maxReceiveCount: 1 }) }, false);
  await sqs.send(new SendMessageCommand({ QueueUrl: ssrc, MessageBody: 's1' }));
  assert.equal((await receive(ssrc, 1, { VisibilityTimeout: 0 }))[0].Body, 's1');
  assert.deepEqual(await receive(ssrc, 10), []);
  assert.deepEqual(bodies(await receive(std, 10)), ['s1']);
});

test('MD5OfBody and MD5OfMessageAttributes are what AWS computes (the SDK accepts them)', async () => {
  const q = await queue('md5');
  const body = 'h\u00e9llo \u2713 \u{1D11E}';   // BMP and supplementary characters
  const MessageAttributes = {
    traceId: { DataType: 'String', StringValue: 'abc' },
    n: { DataType: 'Number', StringValue: '42' },
    b: { DataType: 'Binary', BinaryValue: Uint8Array.from([1, 2, 3]) },
  };
  const VECTOR = 'b3fe5ec1575f78f289dc718fd17660f8';   // /work/shared/SQS-PROTOCOL.md §B.7
  const s = await send(q, body, 'g', { more: { MessageAttributes } });
  assert.equal(s.MD5OfMessageBody, crypto.createHash('md5').update(Buffer.from(body, 'utf8')).digest('hex'));
  assert.equal(s.MD5OfMessageAttributes, VECTOR);
  const [m] = await receive(q, 1, { MessageAttributeNames: ['All'], VisibilityTimeout: 0 });
  assert.equal(m.Body, body);
  assert.equal(m.MD5OfMessageAttributes, VECTOR);
  assert.deepEqual(Buffer.from(m.MessageAttributes.b.BinaryValue), Buffer.from([1, 2, 3]));
  // A subset: only the requested attributes, and the MD5 of those.
  const [sub] = await receive(q, 1, { MessageAttributeNames: ['n'], VisibilityTimeout: 0 });
  assert.deepEqual(Object.keys(sub.MessageAttributes), ['n']);
  assert.equal(sub.MD5OfMessageAttributes, md5Attrs({ n: MessageAttributes.n }));
  const [none] = await receive(q, 1, { VisibilityTimeout: 0 });
  assert.equal(none.MessageAttributes, undefined, 'none requested, none returned');
  assert.equal(none.MD5OfMessageAttributes, undefined);
  // Prefixes.
  const q2 = await queue('md5-prefix');
  await send(q2, 'p', 'g', { more: { MessageAttributes: {
    'ctx.a': { DataType: 'String', StringValue: '1' }, 'ctx.b': { DataType: 'String.label', StringValue: '2' },
    other: { DataType: 'String', StringValue: '3' } } } });
  const [p] = await receive(q2, 1, { MessageAttributeNames: ['ctx.*'] });
  assert.deepEqual(Object.keys(p.MessageAttributes).sort(), ['ctx.a', 'ctx.b']);
  assert.equal(p.MD5OfMessageAttributes, md5Attrs(p.MessageAttributes));
});

test('ReceiveRequestAttemptId: a retry returns the same messages and handles until one is modified', async () => {
  const q = await queue('attempt');
  for (const b of ['r1', 'r2', 'r3']) await send(q, b, 'g');
  const first = await receive(q, 2, { ReceiveRequestAttemptId: 'A' });
  const retry = await receive(q, 2, { ReceiveRequestAttemptId: 'A' });
  assert.deepEqual(bodies(retry), ['r1', 'r2']);
  assert.deepEqual(retry.map((m) => m.ReceiptHandle), first.map((m) => m.ReceiptHandle));
  assert.equal(retry[0].Attributes.ApproximateReceiveCount, '1', 'a retry is not another receive');
  assert.deepEqual(await receive(q, 10, { ReceiveRequestAttemptId: 'B' }), [], 'another attempt: the group is locked');
  await del(q, first[0].ReceiptHandle);
  await del(q, first[1].ReceiptHandle);
  assert.deepEqual(bodies(await receive(q, 2, { ReceiveRequestAttemptId: 'A' })), ['r3'], 'modified: a new receive');
});

test('long polling waits for a message and answers as soon as one arrives', async () => {
  const q = await queue('poll');
  let t = Date.now();
  assert.deepEqual(await receive(q, 10, { WaitTimeSeconds: 1 }), []);
  assert.ok(Date.now() - t >= 900, 'an empty long poll waits WaitTimeSeconds');
  t = Date.now();
  const waiting = receive(q, 10, { WaitTimeSeconds: 5 });
  await sleep(300);
  await send(q, 'late', 'g');
  assert.deepEqual(bodies(await waiting), ['late']);
  assert.ok(Date.now() - t < 2000, 'woken by the send');
});

test('queue attributes: defaults, counts (visible, in flight, delayed), CreateQueue idempotence', async () => {
  const q = await queue('attrs', { DelaySeconds: '60', VisibilityTimeout: '45' });
  const all = await attrs(q);
  for (const [k, v] of Object.entries({ FifoQueue: 'true', ContentBasedDeduplication: 'false', DelaySeconds: '60',
    VisibilityTimeout: '45', MessageRetentionPeriod: '345600', MaximumMessageSize: '1048576',
    ApproximateNumberOfMessages: '0', ApproximateNumberOfMessagesNotVisible: '0', ApproximateNumberOfMessagesDelayed: '0' }))
    assert.equal(all[k], v, k);
  assert.match(all.QueueArn, /^arn:aws:sqs:us-east-1:\d{12}:attrs-\d+\.fifo$/);
  assert.deepEqual(Object.keys(await attrs(q, ['VisibilityTimeout'])), ['VisibilityTimeout']);
  await send(q, 'd1', 'g');
  assert.equal((await attrs(q, ['ApproximateNumberOfMessagesDelayed'])).ApproximateNumberOfMessagesDelayed, '1');
  assert.deepEqual(await receive(q, 10), [], 'the queue delay applies to FIFO messages');
  await advance(61 * 1000);
  assert.deepEqual(bodies(await receive(q, 10)), ['d1']);
  assert.equal((await attrs(q, ['ApproximateNumberOfMessagesNotVisible'])).ApproximateNumberOfMessagesNotVisible, '1');
  await assert.rejects(attrs(q, ['NoSuchAttribute']), refused('InvalidAttributeName'));
  // Same name, same attributes: the same URL; different: QueueNameExists.
  const name = q.split('/').pop();
  const same = await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: { FifoQueue: 'true', DelaySeconds: '60' } }));
  assert.equal(same.QueueUrl, q);
  await assert.rejects(sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: { FifoQueue: 'true', DelaySeconds: '0' } })),
    refused('QueueAlreadyExists'));
  assert.equal((await sqs.send(new GetQueueUrlCommand({ QueueName: name }))).QueueUrl, q);
  await assert.rejects(sqs.send(new GetQueueUrlCommand({ QueueName: 'nope.fifo' })), refused('AWS.SimpleQueueService.NonExistentQueue'));
  await assert.rejects(sqs.send(new CreateQueueCommand({ QueueName: 'no-suffix', Attributes: { FifoQueue: 'true' } })),
    refused('InvalidParameterValue'));
});

test('standard queues, PurgeQueue', async () => {
  const q = await queue('std', {}, false);
  await sqs.send(new SendMessageCommand({ QueueUrl: q, MessageBody: 's1', DelaySeconds: 0 }));
  await assert.rejects(sqs.send(new SendMessageCommand({ QueueUrl: q, MessageBody: 's2', MessageDeduplicationId: 'x' })),
    refused('InvalidParameterValue'));
  const [m] = await receive(q, 10);
  assert.equal(m.Body, 's1');
  assert.equal(m.Attributes.SequenceNumber, undefined);
  await del(q, m.ReceiptHandle);
  // With a group ID (fair queues, not modelled): kept and returned.
  await sqs.send(new SendMessageCommand({ QueueUrl: q, MessageBody: 'f1', MessageGroupId: 'tenant' }));
  assert.equal((await receive(q, 10))[0].Attributes.MessageGroupId, 'tenant');
  const f = await queue('purge');
  await send(f, 'x', 'g');
  await send(f, 'y', 'h');
  await sqs.send(new PurgeQueueCommand({ QueueUrl: f }));
  assert.equal((await attrs(f, ['ApproximateNumberOfMessages'])).ApproximateNumberOfMessages, '0');
  await assert.rejects(sqs.send(new PurgeQueueCommand({ QueueUrl: f })), refused('AWS.SimpleQueueService.PurgeQueueInProgress', 403));
});

test('the terminator still checks SigV4; errors are SQS-shaped on the wire', async () => {
  const bad = client('wrong-secret');
  try {
    await assert.rejects(bad.send(new GetQueueUrlCommand({ QueueName: 'x' })), refused('SignatureDoesNotMatch', 403));
  } finally { bad.destroy(); }
  // The server's stdout may trail its answers a little.
  for (let i = 0; i < 50 && !serverOut.includes('REQ AmazonSQS.GetQueueUrl 403 bad'); i++) await sleep(20);
  assert.ok(serverOut.includes('REQ AmazonSQS.GetQueueUrl 403 bad'));
  assert.ok(serverOut.includes('REQ AmazonSQS.ReceiveMessage 200 ok'));
  assert.equal(serverOut[0], 'BACKEND fifo-rules');
  // The raw answer, from the backend's plain-HTTP port (the FAUXQS line).
  const raw = await new Promise((resolve, reject) => {
    const body = JSON.stringify({ QueueUrl: 'http://x/000000000000/nope' });
    const req = http.request({ host: '127.0.0.1', port: plainPort, path: '/', method: 'POST', headers: {
      'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'AmazonSQS.ReceiveMessage',
      'content-length': Buffer.byteLength(body) } }, (res) => {
      let b = '';
      res.on('data', (c) => { b += c; });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: JSON.parse(b) }));
    });
    req.on('error', reject);
    req.end(body);
  });
  assert.equal(raw.status, 400);
  assert.equal(raw.headers['content-type'], 'application/x-amz-json-1.0');
  assert.equal(raw.headers['x-amzn-query-error'], 'AWS.SimpleQueueService.NonExistentQueue;Sender');
  assert.match(raw.headers['x-amzn-requestid'], /^[0-9a-f-]{36}$/);
  assert.deepEqual(raw.body, { __type: 'com.amazonaws.sqs#QueueDoesNotExist', message: 'The specified queue does not exist.' });
});
