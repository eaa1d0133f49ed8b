// SPDX-License-Identifier: Apache-2.0
// An in-memory SQS (JSON 1.0 protocol) that follows AWS's documented FIFO
// rules, for tests. Written from the public AWS documentation; the rule each
// piece follows is cited next to it. Node core modules only.
//
//   import { createSqsModel } from './fifo_sqs.mjs';
//   const sqs = createSqsModel({ region: 'us-east-1' });
//   const r = await sqs.dispatch('AmazonSQS.SendMessage', bodyBuffer,
//                                { baseUrl: 'https://sqs.test:4443' });
//   // r = { status, headers, body }   (body: a JSON string)
//   http.createServer(sqs.httpHandler)  // or serve it directly
//   sqs.advance(ms)                     // move the model's clock forward
//
//   node fifo_sqs.mjs [PORT] [REGION]   standalone on 127.0.0.1 (plain HTTP,
//                                       no signature check); prints PORT <n>
//
// Docs cited (AWS, Amazon SQS Developer Guide [DG] and API Reference [API];
// the API texts are also in @aws-sdk/client-sqs dist-types/models/models_0.d.ts,
// generated from the same service model):
//   [DG-fifo-logic]  SQSDeveloperGuide/FIFO-queues-understanding-logic.html
//   [DG-group]       SQSDeveloperGuide/using-messagegroupid-property.html
//   [DG-interleave]  SQSDeveloperGuide/interleaving-multiple-ordered-message-groups.html
//   [DG-visibility]  SQSDeveloperGuide/sqs-visibility-timeout.html
//   [DG-dlq]         SQSDeveloperGuide/sqs-dead-letter-queues.html and
//                    sqs-configure-dead-letter-queue.html
//   [DG-dlq-retention] SQSDeveloperGuide/setting-up-dead-letter-queue-retention.html
//   [DG-json-errors] SQSDeveloperGuide/sqs-json-api-responses.html
//   [API-Send]       APIReference/API_SendMessage.html (MessageGroupId,
//                    MessageDeduplicationId, DelaySeconds)
//   [API-SendMessageBatch] APIReference/API_SendMessageBatch.html
//   [API-Receive]    APIReference/API_ReceiveMessage.html (attribute names,
//                    ReceiveRequestAttemptId, WaitTimeSeconds)
//   [API-Delete]     APIReference/API_DeleteMessage.html
//   [API-CMV]        APIReference/API_ChangeMessageVisibility.html
//   [API-Create]     APIReference/API_CreateQueue.html (attributes, RedrivePolicy)
//   [API-Purge]      APIReference/API_PurgeQueue.html
//   [KC-handle]      AWS Knowledge Center, repost.aws/knowledge-center/sqs-receipt-handle-error
//                    (FIFO: an expired receipt handle is refused)
//
// Modelled (FIFO queues):
//   * MessageGroupId required (MissingParameter) [API-Send].
//   * MessageDeduplicationId, or ContentBasedDeduplication = SHA-256 (hex) of
//     the body only, an explicit ID overriding it; neither: InvalidParameterValue.
//     A duplicate inside the 5-minute interval succeeds, returns the first
//     message's MessageId and SequenceNumber, and enqueues nothing; the ID stays
//     tracked after the message is received and deleted. DeduplicationScope
//     messageGroup makes the key (group, ID) [API-Send, API-Create].
//   * Per-message DelaySeconds refused (InvalidParameterValue) [API-Send]; an
//     explicit 0 is accepted and ignored (what AWS does per the emulator
//     projects that compared with it, e.g. localstack #6612, elasticmq #273:
//     not in the docs). The queue's DelaySeconds applies.
//   * SequenceNumber: 20 digits, non-consecutive, increasing per queue (AWS
//     promises per group, so this is stricter) [API-Send].
//   * ReceiveMessage: messages in order; as many of one group as possible
//     first (the group of the oldest receivable message), then other groups in
//     the order of their oldest message; never a message of a group that has a
//     message in flight; never a message before an earlier one of its group
//     [DG-fifo-logic, DG-group, DG-interleave, API-Receive].
//   * Visibility: per receive (VisibilityTimeout) or the queue's; expiry makes
//     the message receivable again; ChangeMessageVisibility counts from the call,
//     0 makes it receivable at once, the total from the receive may not pass
//     12 h (InvalidParameterValue), a message not in flight: MessageNotInflight
//     [API-CMV, DG-visibility].
//   * Receipt handles: a new one per receive. On a FIFO queue a handle is only
//     valid while it is the message's latest and the message is in flight with
//     it; otherwise DeleteMessage and ChangeMessageVisibility fail with
//     InvalidParameterValue "... Reason: The receipt handle has expired." A
//     handle this server never issued: ReceiptHandleIsInvalid (404) [KC-handle,
//     API-Delete]. A second delete with the still-valid handle succeeds (not
//     documented; chosen as the harmless reading).
//   * ReceiveRequestAttemptId: a retry within 5 minutes returns the same
//     messages and receipt handles and resets their visibility timeout, as long
//     as none was deleted, had its visibility changed or was received by
//     another call [API-Receive].
//   * Attributes: ApproximateReceiveCount (counts across queues, so it goes on
//     in the DLQ), ApproximateFirstReceiveTimestamp, SentTimestamp (ms),
//     SenderId, MessageGroupId, MessageDeduplicationId, SequenceNumber,
//     AWSTraceHeader, DeadLetterQueueSourceArn; All; message attributes by
//     name, All, .* and prefix.* [API-Receive].
//   * Redrive: a message whose receive count already reached maxReceiveCount
//     is moved to the dead-letter queue when a receive would return it ("when
//     the ReceiveCount exceeds maxReceiveCount"), and the receive goes on with
//     the next message; a FIFO queue's DLQ must be FIFO and a standard queue's
//     standard; the DLQ must exist [API-Create, DG-dlq]. The enqueue time
//     resets in a FIFO DLQ and is kept in a standard one [DG-dlq-retention].
//   * MD5OfMessageBody / MD5OfBody: MD5 of the body's UTF-8 bytes;
//     MD5OfMessageAttributes (and ...SystemAttributes): the encoding of
//     core/sqs/sqs_md5.c (names sorted; length-prefixed name, type, then 1 +
//     text or 2 + bytes), over the attributes returned.
//   * Long polling (WaitTimeSeconds or ReceiveMessageWaitTimeSeconds, 0-20):
//     returns as soon as something is receivable.
//   * Errors as [DG-json-errors]: HTTP status, {"__type":"com.amazonaws.sqs#X",
//     "message"}, x-amzn-query-error "<query code>;Sender", x-amzn-RequestId.
//   * Standard queues, simply: no groups (MessageGroupId is kept and returned,
//     fair queues are not modelled), no deduplication, per-message delay,
//     any handle the message was given deletes it, redrive as above.
//   * PurgeQueue: immediate; another within 60 s: PurgeQueueInProgress [API-Purge].
//   * Retention (MessageRetentionPeriod), checked lazily.
//
// Not modelled (documented by AWS):
//   * Actions other than those in `actions` below (DeleteQueue, ListQueues,
//     SetQueueAttributes, tags, permissions, ListDeadLetterSourceQueues,
//     message move tasks): InvalidAction.
//   * The 20,000-message look-ahead for available groups [DG-fifo-logic, AWS
//     Knowledge Center sqs-fifo-messages-not-returned], in-flight limits
//     (120,000 standard with OverLimit; FIFO 120,000 silently), throughput
//     quotas and throttling, partitions, high-throughput mode's behaviour.
//   * Standard queues' at-least-once duplicates and out-of-order delivery.
//   * Propagation delays (CreateQueue takes up to a second; attribute changes
//     up to 60 s; PurgeQueue up to 60 s), QueueDeletedRecently.
//   * RedriveAllowPolicy enforcement, KMS, Policy (stored, not applied).
//   * Queue URLs: looked up by the last path segment only (any host works).
// Undocumented, chosen here:
//   * The receive that moves a message to the DLQ does not count as a
//     receive, so its first receive from the DLQ shows maxReceiveCount + 1
//     (fauxqs shows + 2).
//   * A ReceiveRequestAttemptId retry does not count as another receive.
//   * PurgeQueue keeps the deduplication IDs of the purged messages.
//   * A duplicate send answers the first message's MessageId and
//     SequenceNumber with the MD5s of the body it sent (the SDK checks them).
//   * SenderId is the account ID.
import crypto from 'node:crypto';
import http from 'node:http';
import { pathToFileURL } from 'node:url';

const DEDUP_INTERVAL_MS = 5 * 60 * 1000;    // [API-Send] "5-minute deduplication interval"
const ATTEMPT_INTERVAL_MS = 5 * 60 * 1000;  // [API-Receive] ReceiveRequestAttemptId "only for 5 minutes"
const MAX_VISIBILITY_S = 43200;             // [API-CMV] 12 hours
const PURGE_INTERVAL_MS = 60 * 1000;        // [API-Purge]
const BATCH_MAX_BYTES = 1048576;            // [API-SendMessageBatch] 1 MiB in all

// ---- errors ------------------------------------------------------------------
class SqsError extends Error {
  constructor(status, type, message, query) {
    super(message);
    this.status = status;
    this.type = type;           // __type suffix
    this.query = query || type; // x-amzn-query-error code
  }
}
const err = {
  missing: (p) => new SqsError(400, 'MissingParameter', `The request must contain the parameter ${p}.`),
  invalid: (p, v, why) => new SqsError(400, 'InvalidParameterValue',
    `Value ${v} for parameter ${p} is invalid. Reason: ${why}.`),
  plain: (type, msg, status = 400, query) => new SqsError(status, type, msg, query),
  noQueue: () => new SqsError(400, 'QueueDoesNotExist', 'The specified queue does not exist.',
    'AWS.SimpleQueueService.NonExistentQueue'),
  handleInvalid: (h) => new SqsError(404, 'ReceiptHandleIsInvalid',
    `The input receipt handle "${h}" is not a valid receipt handle.`),
  // [KC-handle]: FIFO, handle used after its visibility timeout.
  handleExpired: (h) => err.invalid('ReceiptHandle', h, 'The receipt handle has expired'),
  notInflight: () => new SqsError(400, 'MessageNotInflight', 'The message referred to is not in flight.',
    'AWS.SimpleQueueService.MessageNotInflight'),
  batch: (type, msg) => new SqsError(400, type, msg, `AWS.SimpleQueueService.${type}`),
};

// ---- checksums (core/sqs/sqs_md5.c) -----------------------------------------
const md5 = (buf) => crypto.createHash('md5').update(buf).digest('hex');

function md5OfAttributes(attrs) {
  const names = Object.keys(attrs || {}).sort();
  if (names.length === 0) return undefined;
  const parts = [];
  const put = (b) => { const l = Buffer.alloc(4); l.writeUInt32BE(b.length); parts.push(l, b); };
  for (const n of names) {
    const a = attrs[n];
    put(Buffer.from(n, 'utf8'));
    put(Buffer.from(a.DataType, 'utf8'));
    if (baseType(a.DataType) === 'Binary') {
      parts.push(Buffer.from([2]));
      put(Buffer.from(a.BinaryValue, 'base64'));
    } else {
      parts.push(Buffer.from([1]));
      put(Buffer.from(a.StringValue, 'utf8'));
    }
  }
  return md5(Buffer.concat(parts));
}

// ---- input checks ------------------------------------------------------------
const baseType = (t) => String(t).split('.')[0];
// [API-Send] MessageBody: #x9 #xA #xD #x20-#xD7FF #xE000-#xFFFD #x10000-#x10FFFF
const BAD_CHARS = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/u;
// [API-Send] group / dedup IDs, [API-Receive] attempt IDs: <= 128 of these.
const TOKEN128 = /^[A-Za-z0-9!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~]{1,128}$/;
const BATCH_ID = /^[A-Za-z0-9_-]{1,80}$/;

function intParam(input, name, lo, hi) {
  const v = input[name];
  if (v === undefined || v === null) return undefined;
  if (!Number.isInteger(v) || v < lo || v > hi)
    throw err.invalid(name, v, `Must be between ${lo} and ${hi}, if provided`);
  return v;
}

function need(input, name) {
  const v = input[name];
  if (v === undefined || v === null || v === '') throw err.missing(name);
  return v;
}

// Message attributes: validated, normalized ({DataType, StringValue|BinaryValue}).
function checkAttributes(attrs, what) {
  if (attrs === undefined || attrs === null) return {};
  if (typeof attrs !== 'object' || Array.isArray(attrs)) throw err.invalid(what, '', 'Not a map');
  const out = {};
  const names = Object.keys(attrs);
  if (names.length > 10) throw err.invalid(what, names.length, 'Number of message attributes [' + names.length + '] exceeds the allowed maximum [10]');
  for (const n of names) {
    if (!/^[A-Za-z0-9_.-]{1,256}$/.test(n) || /^(aws\.|amazon\.)/i.test(n) ||
        n.startsWith('.') || n.endsWith('.') || n.includes('..'))
      throw err.invalid(`${what}.Name`, n, 'Invalid message attribute name');
    const a = attrs[n] || {};
    const t = a.DataType;
    if (typeof t !== 'string' || !/^(String|Number|Binary)(\..{1,250})?$/.test(t))
      throw err.invalid(`${what}.${n}.DataType`, t, 'Invalid data type');
    if (baseType(t) === 'Binary') {
      if (typeof a.BinaryValue !== 'string' || a.BinaryValue === '')
        throw err.invalid(`${what}.${n}`, '', `Message attribute '${n}' must contain a non-empty value of type 'Binary'`);
      out[n] = { DataType: t, BinaryValue: Buffer.from(a.BinaryValue, 'base64').toString('base64') };
    } else {
      if (typeof a.StringValue !== 'string' || a.StringValue === '')
        throw err.invalid(`${what}.${n}`, '', `Message attribute '${n}' must contain a non-empty message attribute value for message attribute type '${t}'`);
      if (BAD_CHARS.test(a.StringValue)) throw err.plain('InvalidMessageContents', `Invalid characters found in message attribute ${n}.`);
      if (baseType(t) === 'Number' && !Number.isFinite(Number(a.StringValue)))
        throw err.invalid(`${what}.${n}`, a.StringValue, `Can't cast the value of message (user) attribute '${n}' to a number`);
      out[n] = { DataType: t, StringValue: a.StringValue };
    }
  }
  return out;
}

function attributesSize(attrs) {
  let n = 0;
  for (const [name, a] of Object.entries(attrs)) {
    n += Buffer.byteLength(name) + Buffer.byteLength(a.DataType);
    n += a.BinaryValue !== undefined ? Buffer.from(a.BinaryValue, 'base64').length : Buffer.byteLength(a.StringValue);
  }
  return n;
}

function checkBatch(entries) {
  if (!Array.isArray(entries) || entries.length === 0)
    throw err.batch('EmptyBatchRequest', 'There should be at least one SendMessageBatchRequestEntry in the request.');
  if (entries.length > 10)
    throw err.batch('TooManyEntriesInBatchRequest', `Maximum number of entries per request are 10. You have sent ${entries.length}.`);
  const seen = new Set();
  for (const e of entries) {
    if (!e || typeof e.Id !== 'string' || !BATCH_ID.test(e.Id))
      throw err.batch('InvalidBatchEntryId', 'A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long.');
    if (seen.has(e.Id)) throw err.batch('BatchEntryIdsNotDistinct', `Id ${e.Id} repeated.`);
    seen.add(e.Id);
  }
}

// Runs one batch entry; an SqsError becomes a Failed entry.
function batchEntry(e, fn, ok, failed) {
  try {
    ok.push({ Id: e.Id, ...(fn(e) || {}) });
  } catch (x) {
    if (!(x instanceof SqsError)) throw x;
    failed.push({ Id: e.Id, SenderFault: x.status < 500, Code: x.query, Message: x.message });
  }
}

// ---- queue attributes ----------------------------------------------------------
// [API-Create]: name -> [min, max] for integers, or a validator.
const INT_ATTRS = {
  DelaySeconds: [0, 900], MaximumMessageSize: [1024, 1048576],
  MessageRetentionPeriod: [60, 1209600], ReceiveMessageWaitTimeSeconds: [0, 20],
  VisibilityTimeout: [0, 43200], KmsDataKeyReusePeriodSeconds: [60, 86400],
};
const BOOL_ATTRS = new Set(['SqsManagedSseEnabled', 'FifoQueue', 'ContentBasedDeduplication']);
const FIFO_ONLY = new Set(['FifoQueue', 'ContentBasedDeduplication', 'DeduplicationScope', 'FifoThroughputLimit']);
const ENUM_ATTRS = { DeduplicationScope: ['messageGroup', 'queue'], FifoThroughputLimit: ['perQueue', 'perMessageGroupId'] };
const TEXT_ATTRS = new Set(['Policy', 'RedrivePolicy', 'RedriveAllowPolicy', 'KmsMasterKeyId']);
const COMPUTED = ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible',
  'ApproximateNumberOfMessagesDelayed', 'CreatedTimestamp', 'LastModifiedTimestamp', 'QueueArn'];
const DEFAULTS = { DelaySeconds: '0', MaximumMessageSize: '1048576', MessageRetentionPeriod: '345600',
  ReceiveMessageWaitTimeSeconds: '0', VisibilityTimeout: '30', SqsManagedSseEnabled: 'true' };
const FIFO_DEFAULTS = { FifoQueue: 'true', ContentBasedDeduplication: 'false',
  DeduplicationScope: 'queue', FifoThroughputLimit: 'perQueue' };

// ---- the model -------------------------------------------------------------------
export function createSqsModel({ region = 'us-east-1', account = '000000000000', now = Date.now } = {}) {
  let offset = 0;
  const clock = () => now() + offset;
  const queues = new Map();   // name -> queue
  const handles = new Map();  // receipt handle -> { queue, msg }

  const arnOf = (name) => `arn:aws:sqs:${region}:${account}:${name}`;
  const byArn = (arn) => [...queues.values()].find((q) => q.arn === arn);

  function queueOf(input) {
    const url = need(input, 'QueueUrl');
    const name = String(url).split('?')[0].replace(/\/+$/, '').split('/').pop();
    const q = queues.get(name);
    if (!q) throw err.noQueue();
    expire(q);
    return q;
  }
  const num = (q, a) => Number(q.attributes[a]);
  const inFlight = (m, t) => m.visibleAt > t;

  function wake(q) {
    for (const w of q.waiters) w();
    q.waiters.clear();
  }

  // Retention (lazy): drop messages older than MessageRetentionPeriod.
  function expire(q) {
    const t = clock();
    const keep = num(q, 'MessageRetentionPeriod') * 1000;
    q.messages = q.messages.filter((m) => {
      if (t - m.enqueuedAt < keep) return true;
      m.gone = true;
      return false;
    });
  }

  // Normalized attribute map of a CreateQueue request.
  function checkQueueAttributes(name, given) {
    const a = {};
    for (const [k, v0] of Object.entries(given || {})) {
      const v = String(v0);
      if (INT_ATTRS[k]) {
        const [lo, hi] = INT_ATTRS[k];
        if (!/^\d+$/.test(v) || +v < lo || +v > hi) throw err.plain('InvalidAttributeValue', `Invalid value for the parameter ${k}.`);
        a[k] = String(+v);
      } else if (BOOL_ATTRS.has(k)) {
        if (!/^(true|false)$/i.test(v)) throw err.plain('InvalidAttributeValue', `Invalid value for the parameter ${k}.`);
        a[k] = v.toLowerCase();
      } else if (ENUM_ATTRS[k]) {
        if (!ENUM_ATTRS[k].includes(v)) throw err.plain('InvalidAttributeValue', `Invalid value for the parameter ${k}.`);
        a[k] = v;
      } else if (TEXT_ATTRS.has(k)) {
        a[k] = v;
      } else {
        throw err.plain('InvalidAttributeName', `Unknown Attribute ${k}.`);
      }
    }
    const fifo = a.FifoQueue === 'true';
    // [API-Create] names: <= 80 of [A-Za-z0-9_-]; a FIFO queue's ends in .fifo.
    if (fifo ? !/^[A-Za-z0-9_-]{1,75}\.fifo$/.test(name) : !/^[A-Za-z0-9_-]{1,80}$/.test(name))
      throw err.invalid('QueueName', name, fifo
        ? 'The name of a FIFO queue can only include alphanumeric characters, hyphens, or underscores, must end with .fifo suffix and be 1 to 80 in length'
        : 'Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length');
    if (!fifo) {
      for (const k of Object.keys(a))
        if (FIFO_ONLY.has(k) && !(k === 'FifoQueue' && a[k] === 'false'))
          throw err.plain('InvalidAttributeName', `Unknown Attribute ${k}.`);
      delete a.FifoQueue;
    }
    if (a.RedrivePolicy !== undefined) a.RedrivePolicy = checkRedrive(a.RedrivePolicy, fifo);
    return { a, fifo };
  }

  // [API-Create] RedrivePolicy {deadLetterTargetArn, maxReceiveCount}; the
  // DLQ of a FIFO queue must be FIFO, of a standard queue standard [DG-dlq].
  function checkRedrive(text, fifo) {
    const bad = (why) => err.invalid('RedrivePolicy', text, why);
    let p;
    try { p = JSON.parse(text); } catch { throw bad('Redrive policy is not a valid JSON map'); }
    if (!p || typeof p !== 'object') throw bad('Redrive policy is not a valid JSON map');
    const n = Number(p.maxReceiveCount);
    if (!Number.isInteger(n) || n < 1 || n > 1000) throw bad('Invalid value for maxReceiveCount: must be an integer from 1 to 1000');
    const dlq = byArn(p.deadLetterTargetArn);
    if (!dlq) throw bad('Dead-letter target does not exist');
    if (dlq.fifo !== fifo) throw bad(fifo ? 'Dead-letter queue of a FIFO queue must be a FIFO queue' : 'Dead-letter queue of a standard queue must be a standard queue');
    return JSON.stringify({ deadLetterTargetArn: p.deadLetterTargetArn, maxReceiveCount: n });
  }

  function nextSequence(q) {
    // 20 digits, increasing, non-consecutive [API-Send].
    q.seq += 1n + BigInt(crypto.randomInt(0, 1000));
    return q.seq.toString();
  }

  // ---- SendMessage -----------------------------------------------------------
  function send(q, e) {
    const t = clock();
    if (e.MessageBody === undefined || e.MessageBody === null || e.MessageBody === '') throw err.missing('MessageBody');
    const body = String(e.MessageBody);
    if (BAD_CHARS.test(body))
      throw err.plain('InvalidMessageContents', 'Invalid characters found. Valid values: #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF');
    const attrs = checkAttributes(e.MessageAttributes, 'MessageAttributes');
    const sys = checkAttributes(e.MessageSystemAttributes, 'MessageSystemAttributes');
    for (const k of Object.keys(sys))
      if (k !== 'AWSTraceHeader') throw err.invalid('MessageSystemAttributes', k, 'Only AWSTraceHeader is supported');
    const max = num(q, 'MaximumMessageSize');
    if (Buffer.byteLength(body) + attributesSize(attrs) > max)
      throw err.invalid('MessageBody', '', `One or more parameters are invalid. Reason: Message must be shorter than ${max} bytes`);
    const delay = intParam(e, 'DelaySeconds', 0, 900);
    const group = e.MessageGroupId;
    if (group !== undefined && (typeof group !== 'string' || !TOKEN128.test(group)))
      throw err.invalid('MessageGroupId', group, 'MessageGroupId can only include alphanumeric and punctuation characters. 1 to 128 in length');
    const answer = {
      MD5OfMessageBody: md5(Buffer.from(body, 'utf8')),
      ...(md5OfAttributes(attrs) && { MD5OfMessageAttributes: md5OfAttributes(attrs) }),
      ...(md5OfAttributes(sys) && { MD5OfMessageSystemAttributes: md5OfAttributes(sys) }),
    };
    let dedupId;
    if (q.fifo) {
      if (group === undefined) throw err.missing('MessageGroupId');               // [API-Send]
      if (delay) throw err.invalid('DelaySeconds', delay, 'The request include parameter that is not valid for this queue type');
      dedupId = e.MessageDeduplicationId;
      if (dedupId !== undefined && (typeof dedupId !== 'string' || !TOKEN128.test(dedupId)))
        throw err.invalid('MessageDeduplicationId', dedupId, 'MessageDeduplicationId can only include alphanumeric and punctuation characters. 1 to 128 in length');
      if (dedupId === undefined) {
        if (q.attributes.ContentBasedDeduplication !== 'true')
          throw err.plain('InvalidParameterValue', 'The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly');
        dedupId = crypto.createHash('sha256').update(body, 'utf8').digest('hex');  // body only
      }
      const key = q.attributes.DeduplicationScope === 'messageGroup' ? `${group}\u0000${dedupId}` : dedupId;
      const seen = q.dedup.get(key);
      if (seen && t - seen.at < DEDUP_INTERVAL_MS)  // accepted, not delivered
        return { MessageId: seen.id, ...answer, SequenceNumber: seen.seq };
      const m = enqueue(q, { body, attrs, sys, group, dedupId, delay: num(q, 'DelaySeconds') });
      q.dedup.set(key, { id: m.id, seq: m.seq, at: t });
      return { MessageId: m.id, ...answer, SequenceNumber: m.seq };
    }
    if (e.MessageDeduplicationId !== undefined)
      throw err.invalid('MessageDeduplicationId', e.MessageDeduplicationId, 'The request include parameter that is not valid for this queue type');
    const m = enqueue(q, { body, attrs, sys, group, delay: delay ?? num(q, 'DelaySeconds') });
    return { MessageId: m.id, ...answer };
  }

  function enqueue(q, { body, attrs, sys, group, dedupId, delay }) {
    const t = clock();
    const m = {
      id: crypto.randomUUID(), body, attrs, sys, group, dedupId,
      seq: q.fifo ? nextSequence(q) : undefined,
      sentAt: t, enqueuedAt: t, availableAt: t + delay * 1000,
      visibleAt: 0, receivedAt: 0, receiveCount: 0, firstReceiveAt: 0,
      handle: null, gone: false, dlqSource: undefined,
    };
    q.messages.push(m);
    wake(q);
    return m;
  }

  // ---- ReceiveMessage ----------------------------------------------------------
  // The messages one receive returns (and marks in flight).
  function pick(q, max, vt) {
    const t = clock();
    const redrive = q.attributes.RedrivePolicy ? JSON.parse(q.attributes.RedrivePolicy) : null;
    const dlq = redrive && byArn(redrive.deadLetterTargetArn);
    const take = (m) => {   // false: moved to the DLQ instead
      if (dlq && m.receiveCount >= redrive.maxReceiveCount) { moveToDlq(q, m, dlq); return false; }
      return true;
    };
    const out = [];
    if (!q.fifo) {
      for (const m of [...q.messages]) {
        if (out.length >= max) break;
        if (m.availableAt <= t && !inFlight(m, t) && take(m)) out.push(m);
      }
    } else {
      // A group with a message in flight is locked [DG-fifo-logic, DG-interleave].
      const locked = new Set(q.messages.filter((m) => inFlight(m, t)).map((m) => m.group));
      // Each unlocked group's receivable run: its messages from the oldest on,
      // up to (not past) the first not yet available (a delayed one).
      const runs = new Map();
      for (const m of q.messages) {
        if (locked.has(m.group)) continue;
        let r = runs.get(m.group);
        if (!r) runs.set(m.group, (r = { open: true, list: [] }));
        if (!r.open) continue;
        if (m.availableAt > t) { r.open = false; continue; }
        r.list.push(m);
      }
      // Groups by their oldest message; as many of one group as possible
      // first, then the next group [DG-fifo-logic "first attempts to return
      // as many messages with the same message group ID as possible"].
      for (const r of runs.values()) {
        for (const m of r.list) {
          if (out.length >= max) break;
          if (take(m)) out.push(m);
        }
        if (out.length >= max) break;
      }
    }
    for (const m of out) {
      m.receiveCount++;
      if (!m.firstReceiveAt) m.firstReceiveAt = t;
      m.receivedAt = t;
      m.visibleAt = t + vt * 1000;
      m.handle = newHandle(q, m);
    }
    if (vt === 0 && out.length) wake(q);
    return out;
  }

  function newHandle(q, m) {
    const h = 'AQEB' + crypto.randomBytes(96).toString('base64');
    handles.set(h, { queue: q, msg: m });
    return h;
  }

  // [API-Create] "When the ReceiveCount for a message exceeds the
  // maxReceiveCount for a queue, Amazon SQS moves the message to the
  // dead-letter-queue."
  function moveToDlq(q, m, dlq) {
    const t = clock();
    q.messages.splice(q.messages.indexOf(m), 1);
    m.gone = true;
    dlq.messages.push({
      ...m, handle: null, visibleAt: 0, availableAt: t, gone: false,
      seq: dlq.fifo ? nextSequence(dlq) : undefined,
      // [DG-dlq-retention]: FIFO resets the enqueue timestamp, standard keeps it.
      enqueuedAt: dlq.fifo ? t : m.enqueuedAt,
      dlqSource: q.arn,
    });
    wake(dlq);
  }

  function wantedSystem(input) {
    const names = new Set([...(input.AttributeNames || []), ...(input.MessageSystemAttributeNames || [])]);
    return names.has('All') ? null : names;  // null: all
  }

  function render(q, m, sysNames, attrNames) {
    const all = {
      SenderId: account,
      SentTimestamp: String(m.sentAt),
      ApproximateReceiveCount: String(m.receiveCount),
      ApproximateFirstReceiveTimestamp: String(m.firstReceiveAt),
      ...(m.group !== undefined && { MessageGroupId: m.group }),
      ...(q.fifo && { MessageDeduplicationId: m.dedupId, SequenceNumber: m.seq }),
      ...(m.sys.AWSTraceHeader && { AWSTraceHeader: m.sys.AWSTraceHeader.StringValue }),
      ...(m.dlqSource && { DeadLetterQueueSourceArn: m.dlqSource }),
    };
    const Attributes = {};
    for (const [k, v] of Object.entries(all)) if (sysNames === null || sysNames.has(k)) Attributes[k] = v;
    const MessageAttributes = {};
    for (const [k, v] of Object.entries(m.attrs)) {
      const hit = attrNames.some((n) => n === 'All' || n === '.*' || n === k ||
        (n.endsWith('.*') && k.startsWith(n.slice(0, -1))));
      if (hit) MessageAttributes[k] = v;
    }
    const out = { MessageId: m.id, ReceiptHandle: m.handle, MD5OfBody: md5(Buffer.from(m.body, 'utf8')), Body: m.body };
    if (Object.keys(Attributes).length) out.Attributes = Attributes;
    if (Object.keys(MessageAttributes).length) {
      out.MessageAttributes = MessageAttributes;
      out.MD5OfMessageAttributes = md5OfAttributes(MessageAttributes);
    }
    return out;
  }

  // [API-Receive] ReceiveRequestAttemptId: the same messages and handles if
  // none was modified since; resets the visibility timeout.
  function retryAttempt(q, id, vt) {
    const a = q.attempts.get(id);
    const t = clock();
    if (!a || t - a.at >= ATTEMPT_INTERVAL_MS) return null;
    if (!a.items.every((i) => !i.msg.gone && i.msg.handle === i.handle && i.msg.visibleAt === i.visibleAt)) return null;
    for (const i of a.items) i.visibleAt = i.msg.visibleAt = t + vt * 1000;
    return a.items.map((i) => i.msg);
  }

  async function receive(input) {
    const q = queueOf(input);
    const max = intParam(input, 'MaxNumberOfMessages', 1, 10) ?? 1;
    const vt = intParam(input, 'VisibilityTimeout', 0, MAX_VISIBILITY_S) ?? num(q, 'VisibilityTimeout');
    const wait = intParam(input, 'WaitTimeSeconds', 0, 20) ?? num(q, 'ReceiveMessageWaitTimeSeconds');
    const attempt = input.ReceiveRequestAttemptId;
    if (attempt !== undefined && (typeof attempt !== 'string' || !TOKEN128.test(attempt)))
      throw err.invalid('ReceiveRequestAttemptId', attempt, 'ReceiveRequestAttemptId can only include alphanumeric and punctuation characters. 1 to 128 in length');
    const sysNames = wantedSystem(input);
    const attrNames = input.MessageAttributeNames || [];
    const useAttempt = q.fifo && attempt !== undefined;   // FIFO only [API-Receive]
    let got = useAttempt ? retryAttempt(q, attempt, vt) : null;
    if (!got) {
      const deadline = Date.now() + wait * 1000;          // waiting is real time
      for (;;) {
        expire(q);
        got = pick(q, max, vt);
        if (got.length || Date.now() >= deadline) break;
        await new Promise((resolve) => {
          q.waiters.add(resolve);
          setTimeout(resolve, Math.min(100, Math.max(1, deadline - Date.now())));
        });
      }
      // Remembered from this (first) receive on; a retry does not extend it.
      if (useAttempt && got.length)
        q.attempts.set(attempt, { at: clock(), items: got.map((m) => ({ msg: m, handle: m.handle, visibleAt: m.visibleAt })) });
    }
    if (got.length === 0) return {};
    return { Messages: got.map((m) => render(q, m, sysNames, attrNames)) };
  }

  // ---- receipt handles -----------------------------------------------------------
  // The message a handle may act on, or an error [KC-handle, API-Delete].
  function byHandle(q, h, forDelete) {
    if (typeof h !== 'string' || h === '') throw err.missing('ReceiptHandle');
    const e = handles.get(h);
    if (!e || e.queue !== q) throw err.handleInvalid(h);
    const m = e.msg;
    const t = clock();
    if (q.fifo) {
      if (m.handle !== h || !inFlight(m, t)) throw err.handleExpired(h);
      return m;
    }
    if (!forDelete && (m.gone || !inFlight(m, t))) throw err.notInflight();
    return m;
  }

  function remove(q, m) {
    const i = q.messages.indexOf(m);
    if (i >= 0) q.messages.splice(i, 1);
    m.gone = true;
    wake(q);   // its group may be free now
  }

  function changeVisibility(q, h, vt0) {
    if (vt0 === undefined || vt0 === null) throw err.missing('VisibilityTimeout');
    const vt = intParam({ VisibilityTimeout: vt0 }, 'VisibilityTimeout', 0, MAX_VISIBILITY_S);
    const m = byHandle(q, h, false);
    if (m.gone) throw err.notInflight();
    const t = clock();
    // [API-CMV] the 12 h maximum counts from the receive; no clamping.
    if (t + vt * 1000 > m.receivedAt + MAX_VISIBILITY_S * 1000)
      throw err.invalid('VisibilityTimeout', vt, `Total VisibilityTimeout for the message is beyond the limit [${MAX_VISIBILITY_S} seconds]`);
    m.visibleAt = t + vt * 1000;
    if (vt === 0) wake(q);
  }

  // ---- actions ---------------------------------------------------------------------
  const actions = {
    CreateQueue(input, ctx) {
      const name = need(input, 'QueueName');
      const { a, fifo } = checkQueueAttributes(String(name), input.Attributes);
      const old = queues.get(name);
      if (old) {
        // [API-Create] same attributes: the existing URL; different: QueueNameExists.
        for (const [k, v] of Object.entries(a))
          if (old.attributes[k] !== v)
            throw err.plain('QueueNameExists', `A queue already exists with the same name and a different value for attribute ${k}`, 400, 'QueueAlreadyExists');
        if (old.fifo !== fifo) throw err.plain('QueueNameExists', 'A queue already exists with the same name and a different value for attribute FifoQueue', 400, 'QueueAlreadyExists');
        return { QueueUrl: `${ctx.baseUrl}/${account}/${name}` };
      }
      const t = clock();
      queues.set(name, {
        name, fifo, arn: arnOf(name),
        attributes: { ...DEFAULTS, ...(fifo ? FIFO_DEFAULTS : {}), ...a },
        created: t, messages: [], dedup: new Map(), attempts: new Map(), waiters: new Set(),
        seq: 18000000000000000000n + BigInt(t) * 1000n, lastPurge: -Infinity,
      });
      return { QueueUrl: `${ctx.baseUrl}/${account}/${name}` };
    },

    GetQueueUrl(input, ctx) {
      const name = need(input, 'QueueName');
      if (!queues.has(name)) throw err.noQueue();
      return { QueueUrl: `${ctx.baseUrl}/${account}/${name}` };
    },

    GetQueueAttributes(input) {
      const q = queueOf(input);
      const t = clock();
      const names = input.AttributeNames || [];
      const known = new Set([...Object.keys(INT_ATTRS), ...BOOL_ATTRS, ...Object.keys(ENUM_ATTRS), ...TEXT_ATTRS, ...COMPUTED, 'All']);
      for (const n of names) if (!known.has(n)) throw err.plain('InvalidAttributeName', `Unknown Attribute ${n}.`);
      const all = {
        ...q.attributes,
        QueueArn: q.arn,
        ApproximateNumberOfMessages: String(q.messages.filter((m) => m.availableAt <= t && !inFlight(m, t)).length),
        ApproximateNumberOfMessagesNotVisible: String(q.messages.filter((m) => inFlight(m, t)).length),
        ApproximateNumberOfMessagesDelayed: String(q.messages.filter((m) => m.availableAt > t).length),
        CreatedTimestamp: String(Math.floor(q.created / 1000)),
        LastModifiedTimestamp: String(Math.floor(q.created / 1000)),
      };
      const Attributes = {};
      for (const [k, v] of Object.entries(all)) if (names.includes('All') || names.includes(k)) Attributes[k] = v;
      return Object.keys(Attributes).length ? { Attributes } : {};
    },

    SendMessage(input) {
      return send(queueOf(input), input);
    },

    SendMessageBatch(input) {
      const q = queueOf(input);
      checkBatch(input.Entries);
      // [API-SendMessageBatch] "the maximum total payload size (the sum of the
      // individual lengths of all of the batched messages)" is 1 MiB, whatever
      // the queue's MaximumMessageSize (which each entry must fit).
      let total = 0;
      for (const e of input.Entries) {
        let a = {};
        try { a = checkAttributes(e.MessageAttributes, 'MessageAttributes'); } catch { /* that entry fails below */ }
        total += Buffer.byteLength(String(e.MessageBody ?? '')) + attributesSize(a);
      }
      if (total > BATCH_MAX_BYTES)
        throw err.batch('BatchRequestTooLong', `Batch requests cannot be longer than ${BATCH_MAX_BYTES} bytes. You have sent ${total} bytes.`);
      const Successful = [];
      const Failed = [];
      for (const e of input.Entries) batchEntry(e, (x) => send(q, x), Successful, Failed);  // in order
      return { Successful, Failed };
    },

    ReceiveMessage: receive,

    DeleteMessage(input) {
      const q = queueOf(input);
      remove(q, byHandle(q, input.ReceiptHandle, true));
      return {};
    },

    DeleteMessageBatch(input) {
      const q = queueOf(input);
      checkBatch(input.Entries);
      const Successful = [];
      const Failed = [];
      for (const e of input.Entries) batchEntry(e, (x) => { remove(q, byHandle(q, x.ReceiptHandle, true)); }, Successful, Failed);
      return { Successful, Failed };
    },

    ChangeMessageVisibility(input) {
      const q = queueOf(input);
      changeVisibility(q, input.ReceiptHandle, input.VisibilityTimeout);
      return {};
    },

    ChangeMessageVisibilityBatch(input) {
      const q = queueOf(input);
      checkBatch(input.Entries);
      const Successful = [];
      const Failed = [];
      for (const e of input.Entries) batchEntry(e, (x) => { changeVisibility(q, x.ReceiptHandle, x.VisibilityTimeout); }, Successful, Failed);
      return { Successful, Failed };
    },

    PurgeQueue(input) {
      const q = queueOf(input);
      const t = clock();
      if (t - q.lastPurge < PURGE_INTERVAL_MS)
        throw err.plain('PurgeQueueInProgress', `Only one PurgeQueue operation on ${q.name} is allowed every 60 seconds.`, 403, 'AWS.SimpleQueueService.PurgeQueueInProgress');
      q.lastPurge = t;
      for (const m of q.messages) m.gone = true;
      q.messages = [];
      return {};
    },
  };

  // ---- the wire ------------------------------------------------------------------
  function reply(status, obj, extra = {}) {
    return {
      status,
      headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': crypto.randomUUID(), ...extra },
      body: JSON.stringify(obj),
    };
  }
  const fail = (e) => reply(e.status, { __type: `com.amazonaws.sqs#${e.type}`, message: e.message },
    { 'x-amzn-query-error': `${e.query};${e.status >= 500 ? 'Receiver' : 'Sender'}` });

  // target: the X-Amz-Target header; body: the request body (Buffer or string);
  // ctx.baseUrl: scheme://host[:port] for the queue URLs CreateQueue returns.
  async function dispatch(target, body, ctx = {}) {
    try {
      if (!target) throw err.plain('MissingAction', 'The request must contain the parameter Action.');
      const name = String(target).startsWith('AmazonSQS.') ? String(target).slice(10) : '';
      if (!Object.hasOwn(actions, name)) throw err.plain('InvalidAction', `The action ${name || target} is not valid for this endpoint.`);
      let input;
      try { input = body && body.length ? JSON.parse(body.toString('utf8')) : {}; } catch { input = null; }
      if (!input || typeof input !== 'object' || Array.isArray(input))
        throw err.plain('SerializationException', 'Start of structure or map found where not expected.');
      return reply(200, await actions[name](input, { baseUrl: ctx.baseUrl || 'http://localhost' }));
    } catch (e) {
      if (e instanceof SqsError) return fail(e);
      return fail(new SqsError(500, 'InternalFailure', String(e && e.stack || e)));
    }
  }

  // A Node http(s) request listener serving dispatch.
  function httpHandler(req, res) {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', async () => {
      const scheme = req.socket.encrypted ? 'https' : 'http';
      const r = await dispatch(req.headers['x-amz-target'], Buffer.concat(chunks),
        { baseUrl: `${scheme}://${req.headers.host || 'localhost'}` });
      res.writeHead(r.status, { ...r.headers, 'content-length': Buffer.byteLength(r.body) });
      res.end(r.body);
    });
  }

  // Moves the model's clock (visibility, delays, deduplication, retention).
  function advance(ms) {
    offset += ms;
    for (const q of queues.values()) wake(q);
  }

  return { dispatch, httpHandler, advance, clock };
}

// ---- standalone --------------------------------------------------------------------
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [port, region] = process.argv.slice(2);
  const sqs = createSqsModel({ region: region || 'us-east-1' });
  const srv = http.createServer(sqs.httpHandler);
  srv.listen(Number(port || 0), '127.0.0.1', () => process.stdout.write(`PORT ${srv.address().port}\n`));
  process.on('SIGTERM', () => process.exit(0));
  process.on('SIGINT', () => process.exit(0));
}
