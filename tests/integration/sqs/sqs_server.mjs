// SPDX-License-Identifier: Apache-2.0
// SQS test server: fauxqs (npm) on 127.0.0.1, behind a TLS terminator that
// checks every request's SigV4 signature with @smithy/signature-v4 (fauxqs
// checks none) and can be told to inject faults.
//
//   node sqs_server.mjs PKI_DIR ACCESS_KEY_ID SECRET_ACCESS_KEY [REGION]
//   env OB_SQS_SESSION_TOKEN   expected X-Amz-Security-Token (optional)
//   env OB_INTEROP_DIR         folder with node_modules (default ../../interop)
//   env OB_SQS_TLS_MIN/MAX     the TLS versions the front accepts (TLSv1.2,
//                              TLSv1.3; default both)
//   env OB_SQS_BACKEND         what answers the SQS requests behind the
//                              terminator:
//     fauxqs      (default, also when unset) fauxqs 1.9.2, as always
//     fifo-rules  fifo_sqs.mjs (next to this file): our in-memory SQS that
//                 follows AWS's documented FIFO rules (fauxqs returns one
//                 message per group per receive; real SQS as many of one
//                 group as it can). fauxqs is then not loaded at all.
//                 Everything else is the same: SigV4 check, faults, REQ
//                 lines, ports, /_test/create. The FAUXQS line then gives
//                 the plain-HTTP port of fifo_sqs.mjs (same queues, no SigV4
//                 check, no faults, no REQ lines), and /_test/clock exists.
//
// stdout, one line per event (the C tests read it):
//   BACKEND fifo-rules                    first line, with that backend only
//   FAUXQS <port>                         the backend listening (plain HTTP)
//   PORT <port>                           the TLS terminator listening
//   REQ <target> <status> <sig>           an SQS request answered; sig is
//                                         ok | bad | expired | unknown-key | none
//   FAULT <target> <mode> <status>        a scripted fault was served
//
// TLS certificate: PKI_DIR/good.{crt,key} (SAN sqs.test), from
// tests/integration/http/gen_pki.sh.
//
// Test-only routes on the TLS port (no signature needed):
//   POST /_test/create {"QueueName","Attributes"}  CreateQueue on fauxqs
//   POST /_test/fault  {"count","mode","status","code","query","message",
//                       "target","retryAfterMs"}   queue N faults for the
//                       next SQS requests (of that X-Amz-Target if given).
//                       mode: error (default) | reset | hang | lost-reply |
//                             echo (an error echoing the request headers)
//   POST /_test/clear                               drop queued faults
//   POST /_test/purge  {"QueueUrl"}                 PurgeQueue on the backend
//                       (a benchmark frees the memory of a queue it has
//                       checked)
//   GET  /_test/stats                               {"requests","sigBad",...,
//                       "queues": {QueueUrl: {"requests","byTarget",
//                       "entries","notOk"}}}: per queue (the QueueUrl of the
//                       JSON body; "-" if none), the SQS requests, the
//                       entries of its SendMessageBatch requests, and the
//                       answers that were not 2xx (signature refused, a
//                       fault, the backend's error): what a benchmark reads
//                       to count requests per event on the server side
//   POST /_test/clock  {"advanceMs"}                fifo-rules only: move the
//                       model's clock (visibility, delays, the 5-minute
//                       deduplication interval); signatures keep real time
// Everything listens on 127.0.0.1 only, with TCP_NODELAY on every
// connection the terminator accepts or opens to the backend, so that Nagle's
// algorithm delays no client's requests or replies (Node >= 18 sets it by
// default on both; set here so it does not depend on that). Node core
// modules plus the two npm packages pinned in tests/interop/package.json.
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const interop = process.env.OB_INTEROP_DIR || path.resolve(here, '../../interop');
const require = createRequire(path.join(interop, 'package.json'));
const { SignatureV4 } = require('@smithy/signature-v4');
const { Sha256 } = require('@aws-crypto/sha256-js');
const backend = process.env.OB_SQS_BACKEND || 'fauxqs';
if (backend !== 'fauxqs' && backend !== 'fifo-rules') {
  console.error(`sqs_server.mjs: OB_SQS_BACKEND must be fauxqs or fifo-rules, not ${backend}`);
  process.exit(2);
}

const [pkiDir, accessKeyId, secretAccessKey, regionArg] = process.argv.slice(2);
if (!pkiDir || !accessKeyId || !secretAccessKey) {
  console.error('usage: sqs_server.mjs PKI_DIR ACCESS_KEY_ID SECRET [REGION]');
  process.exit(2);
}
const region = regionArg || 'us-east-1';
const sessionToken = process.env.OB_SQS_SESSION_TOKEN || undefined;
const log = (s) => process.stdout.write(s + '\n');

// ---- the backend, loopback only -----------------------------------------------
if (backend !== 'fauxqs') log(`BACKEND ${backend}`);
let app = null;   // fauxqs (fastify)
let fifo = null;  // fifo_sqs.mjs model, and its plain-HTTP server
let plain = null;
let fport;
if (backend === 'fauxqs') {
  const { buildApp } = await import(
    pathToFileURL(path.join(interop, 'node_modules/fauxqs/dist/app.js')).href);
  app = buildApp({ logger: false });
  await app.listen({ port: 0, host: '127.0.0.1' });
  fport = app.server.address().port;
} else {
  const { createSqsModel } = await import(pathToFileURL(path.join(here, 'fifo_sqs.mjs')).href);
  fifo = createSqsModel({ region });
  plain = http.createServer(fifo.httpHandler);
  await new Promise((ok) => plain.listen(0, '127.0.0.1', ok));
  fport = plain.address().port;
}
log(`FAUXQS ${fport}`);

// ---- SigV4 verification ------------------------------------------------------
const stats = { requests: 0, sigOk: 0, sigBad: 0, faults: 0, byTarget: {}, queues: {} };
const faults = [];

// The per-queue record of one SQS request (see /_test/stats), counted.
function countQueue(body, target) {
  let url = '-';
  let entries = 0;
  try {
    const j = JSON.parse(body.toString('utf8'));
    if (typeof j.QueueUrl === 'string') url = j.QueueUrl;
    if (target === 'AmazonSQS.SendMessageBatch' && Array.isArray(j.Entries)) entries = j.Entries.length;
  } catch { /* not JSON: counted under "-" */ }
  const q = stats.queues[url] ||= { requests: 0, byTarget: {}, entries: 0, notOk: 0 };
  q.requests++;
  q.byTarget[target] = (q.byTarget[target] || 0) + 1;
  q.entries += entries;
  return q;
}

function parseAuth(h) {
  const m = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$/.exec(h || '');
  if (!m) return null;
  return { akid: m[1], day: m[2], region: m[3], service: m[4],
           signed: m[5].split(';'), signature: m[6] };
}

function amzDate(s) {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(s || '');
  if (!m) return null;
  return new Date(Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6]));
}

// Returns null when the signature is right, else [status, code, message, tag].
async function verify(req, body) {
  const a = parseAuth(req.headers.authorization);
  if (!a) return [403, 'IncompleteSignature', 'Authorization header missing or malformed', 'none'];
  if (a.akid !== accessKeyId)
    return [403, 'InvalidClientTokenId', 'The security token included in the request is invalid.', 'unknown-key'];
  const date = amzDate(req.headers['x-amz-date']);
  if (!date) return [403, 'IncompleteSignature', 'X-Amz-Date missing or malformed', 'none'];
  // Real SQS refuses a request more than 15 minutes off its clock.
  if (Math.abs(Date.now() - date.getTime()) > 15 * 60 * 1000)
    return [400, 'RequestExpired', `Request has expired. X-Amz-Date is ${req.headers['x-amz-date']}`, 'expired'];
  if (sessionToken !== undefined && req.headers['x-amz-security-token'] !== sessionToken)
    return [403, 'InvalidClientTokenId', 'The security token included in the request is invalid.', 'bad'];
  const headers = {};
  for (const name of a.signed) {
    if (name === 'x-amz-date') continue;   // the signer sets it
    if (req.headers[name] === undefined)
      return [403, 'SignatureDoesNotMatch', `Signed header ${name} missing`, 'bad'];
    headers[name] = req.headers[name];
  }
  const signer = new SignatureV4({
    credentials: { accessKeyId, secretAccessKey, sessionToken: a.signed.includes('x-amz-security-token') ? req.headers['x-amz-security-token'] : undefined },
    region: a.region, service: a.service, sha256: Sha256,
    uriEscapePath: true, applyChecksum: false,
  });
  const [hostname] = (req.headers.host || '').split(':');
  const out = await signer.sign({
    method: req.method, protocol: 'https:', hostname, path: req.url.split('?')[0],
    query: {}, headers, body,
  }, { signingDate: date, signingRegion: a.region, signingService: a.service });
  const want = parseAuth(out.headers.authorization);
  if (!want || want.signature !== a.signature || want.signed.join(';') !== a.signed.join(';'))
    return [403, 'SignatureDoesNotMatch',
      'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method.', 'bad'];
  return null;
}

// ---- answers -----------------------------------------------------------------
function sqsError(res, status, code, message, query, extra = {}) {
  const body = JSON.stringify({ __type: `com.amazonaws.sqs#${code}`, message });
  const h = { 'content-type': 'application/x-amz-json-1.0',
              'content-length': Buffer.byteLength(body),
              'x-amzn-requestid': 'test-' + stats.requests, ...extra };
  if (query) h['x-amzn-query-error'] = query;
  res.writeHead(status, h);
  res.end(body);
}

// TCP_NODELAY on a connection to the backend (a reused keep-alive one too:
// Node skips the call when it is already set).
const noDelay = (s) => s.setNoDelay(true);

// The backend's answer to one request: {statusCode, headers, body (Buffer)}.
function upstream(req, body) {
  if (fifo) {
    return fifo.dispatch(req.headers['x-amz-target'], body, { baseUrl: `https://${req.headers.host}` })
      .then((r) => ({ statusCode: r.status, headers: r.headers, body: Buffer.from(r.body) }));
  }
  return new Promise((resolve, reject) => {
    const up = http.request({
      host: '127.0.0.1', port: fport, method: req.method, path: req.url,
      headers: { ...req.headers, 'content-length': body.length },
    }, (ur) => {
      const chunks = [];
      ur.on('data', (c) => chunks.push(c));
      ur.on('end', () => resolve({ statusCode: ur.statusCode, headers: ur.headers, body: Buffer.concat(chunks) }));
    });
    up.on('socket', noDelay);
    up.on('error', reject);
    up.end(body);
  });
}

function forward(req, body, res, target, sig, loseReply, q) {
  upstream(req, body).then((ur) => {
    const b = ur.body;
    if (ur.statusCode >= 300) q.notOk++;
    if (loseReply) {   // applied by the backend, the reply never arrives
      log(`FAULT ${target} lost-reply ${ur.statusCode}`);
      req.socket.destroy();
      return;
    }
    const h = {};
    for (const [k, v] of Object.entries(ur.headers))
      if (!['connection', 'keep-alive', 'transfer-encoding', 'content-length'].includes(k)) h[k] = v;
    h['content-length'] = b.length;
    // Logged before the answer leaves, so a test that has the answer
    // also finds the line.
    log(`REQ ${target} ${ur.statusCode} ${sig}`);
    res.writeHead(ur.statusCode, h);
    res.end(b);
  }, (e) => { q.notOk++; sqsError(res, 500, 'InternalFailure', String(e), null); });
}

// A test route's SQS action, sent straight to the backend; its answer goes
// to json(status, object).
function backendAction(req, target, payload, json) {
  const b = Buffer.from(JSON.stringify(payload));
  if (fifo) {
    fifo.dispatch(target, b, { baseUrl: `https://${req.headers.host}` })
      .then((r) => json(r.status, JSON.parse(r.body)));
    return;
  }
  // The way a signed client would reach fauxqs: the region comes from the
  // Authorization scope (fauxqs reads nothing else from it).
  const up = http.request({
    host: '127.0.0.1', port: fport, method: 'POST', path: '/',
    headers: { host: req.headers.host, 'content-type': 'application/x-amz-json-1.0',
               'x-amz-target': target, 'content-length': b.length,
               authorization: `AWS4-HMAC-SHA256 Credential=${accessKeyId}/20260101/${region}/sqs/aws4_request, SignedHeaders=host, Signature=${'0'.repeat(64)}` },
  }, (ur) => {
    const chunks = [];
    ur.on('data', (c) => chunks.push(c));
    ur.on('end', () => json(ur.statusCode, JSON.parse(Buffer.concat(chunks).toString() || '{}')));
  });
  up.on('socket', noDelay);
  up.end(b);
}

function control(req, body, res) {
  const json = (status, obj) => {
    const b = JSON.stringify(obj);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(b) });
    res.end(b);
  };
  let arg = {};
  try { if (body.length) arg = JSON.parse(body.toString('utf8')); } catch { return json(400, { error: 'bad json' }); }
  if (req.url === '/_test/stats') return json(200, { ...stats, pendingFaults: faults.length });
  if (req.url === '/_test/clear') { faults.length = 0; return json(200, {}); }
  if (req.url === '/_test/fault') {
    for (let i = 0; i < (arg.count ?? 1); i++) faults.push(arg);
    return json(200, { pending: faults.length });
  }
  if (req.url === '/_test/clock') {
    if (!fifo) return json(404, { error: '/_test/clock needs OB_SQS_BACKEND=fifo-rules' });
    fifo.advance(Number(arg.advanceMs) || 0);
    return json(200, { now: fifo.clock() });
  }
  if (req.url === '/_test/create') {
    backendAction(req, 'AmazonSQS.CreateQueue',
                  { QueueName: arg.QueueName, Attributes: arg.Attributes || {} }, json);
    return undefined;
  }
  if (req.url === '/_test/purge') {
    backendAction(req, 'AmazonSQS.PurgeQueue', { QueueUrl: arg.QueueUrl }, json);
    return undefined;
  }
  return json(404, { error: 'no such test route' });
}

const tls = https.createServer({
  cert: fs.readFileSync(path.join(pkiDir, 'good.crt')),
  key: fs.readFileSync(path.join(pkiDir, 'good.key')),
  keepAliveTimeout: 60000,
  // A TLS 1.2-only or 1.3-only front (OB_SQS_TLS_MIN/MAX: TLSv1.2,
  // TLSv1.3): the client's negotiated version is then known (issue 42).
  minVersion: process.env.OB_SQS_TLS_MIN || 'TLSv1.2',
  maxVersion: process.env.OB_SQS_TLS_MAX || 'TLSv1.3',
}, (req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', async () => {
    const body = Buffer.concat(chunks);
    if (req.url.startsWith('/_test/')) return control(req, body, res);
    const target = req.headers['x-amz-target'] || '-';
    stats.requests++;
    stats.byTarget[target] = (stats.byTarget[target] || 0) + 1;
    const q = countQueue(body, target);
    let bad;
    try { bad = await verify(req, body); } catch (e) { bad = [403, 'IncompleteSignature', String(e), 'bad']; }
    if (bad) {
      stats.sigBad++;
      q.notOk++;
      const [status, code, message, tag] = bad;
      log(`REQ ${target} ${status} ${tag}`);
      sqsError(res, status, code, message, `${code};Sender`);
      return;
    }
    stats.sigOk++;
    const fi = faults.findIndex((f) => !f.target || f.target === target);
    if (fi >= 0) {
      const f = faults.splice(fi, 1)[0];
      stats.faults++;
      q.notOk++;
      const mode = f.mode || 'error';
      if (mode === 'reset') { log(`FAULT ${target} reset 0`); req.socket.destroy(); return; }
      if (mode === 'hang') { log(`FAULT ${target} hang 0`); return; }
      if (mode === 'lost-reply') return forward(req, body, res, target, 'ok', true, q);
      if (mode === 'echo') {
        // What some gateways and debugging proxies do: an error whose text
        // echoes the request's headers, credentials included, with a
        // control sequence and a forged log line for good measure.
        const hdrs = Object.entries(req.headers).map(([k, v]) => `${k}: ${v}`).join('\r\n');
        log(`FAULT ${target} echo ${f.status || 400}`);
        sqsError(res, f.status || 400, f.code || 'InvalidParameterValue',
                 `request rejected; headers were:\r\n${hdrs}\r\n\u001b[31m` +
                 `2026-01-01T00:00:00.000Z info FAKE LOG LINE`, f.query || null, {});
        return;
      }
      const extra = {};
      if (f.retryAfterMs !== undefined) extra['x-amz-retry-after'] = String(f.retryAfterMs);
      log(`FAULT ${target} error ${f.status || 503}`);
      sqsError(res, f.status || 503, f.code || 'ServiceUnavailable',
               f.message || 'Service is unavailable, try again', f.query || null, extra);
      return;
    }
    forward(req, body, res, target, 'ok', false, q);
  });
});
// The TCP socket under each TLS connection, before its handshake.
tls.on('connection', noDelay);
tls.listen(0, '127.0.0.1', () => log(`PORT ${tls.address().port}`));

const stop = () => {
  tls.close();
  if (plain) plain.close();
  (app ? app.close() : Promise.resolve()).finally(() => process.exit(0));
  setTimeout(() => process.exit(0), 500).unref();
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
