// A payment provider for the fence tests: charges over HTTPS with
// Idempotency-Key, state that survives kill -9, and scripted faults.
// See README.md next to this file. Node core modules only; Node >= 18.
//
//   node provider_sim.mjs --cert C --key K --state FILE [--port N]
//                         [--no-idempotency] [--no-lookup]
//                         [--require-auth VALUE]
//
// stdout, one line per event (the tests read it):
//   PORT <port>                          listening on 127.0.0.1
//   REQ <method> <path> <status|DROP>    a request was answered (or not)
//   CHARGED <order_id> <charge_id>       a real charge was made
//   HELD <order_id>                      a request is held (mode slow)
//   DROPPED <order_id>                   processed, socket destroyed unanswered
//   DYING                                about to process.exit(1)
//   ACK <seq> <json>                     answer to a control command
//   TLSERR <code>                        a handshake failed on the server side
//
// Control: one JSON object per line on stdin (see README.md).
import crypto from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import readline from 'node:readline';

// ---- arguments ----------------------------------------------------------------
function usage(msg) {
  if (msg) console.error(`provider_sim: ${msg}`);
  console.error('usage: provider_sim.mjs --cert C --key K --state FILE ' +
                '[--port N] [--no-idempotency] [--no-lookup] [--require-auth VALUE]');
  process.exit(2);
}

const opt = { cert: null, key: null, state: null, port: 0,
              idempotency: true, lookup: true, auth: null };
{
  const a = process.argv.slice(2);
  for (let i = 0; i < a.length; i++) {
    const needValue = () => {
      if (i + 1 >= a.length) usage(`${a[i]} needs a value`);
      return a[++i];
    };
    switch (a[i]) {
      case '--cert': opt.cert = needValue(); break;
      case '--key': opt.key = needValue(); break;
      case '--state': opt.state = needValue(); break;
      case '--port': {
        const v = needValue();
        if (!/^[0-9]+$/.test(v) || Number(v) > 65535) usage(`bad port ${v}`);
        opt.port = Number(v);
        break;
      }
      case '--no-idempotency': opt.idempotency = false; break;
      case '--no-lookup': opt.lookup = false; break;
      case '--require-auth': {
        const v = needValue();
        if (v.length === 0) usage('--require-auth needs a non-empty value');
        opt.auth = Buffer.from(v, 'utf8');
        break;
      }
      default: usage(`unknown argument ${a[i]}`);
    }
  }
  if (!opt.cert || !opt.key || !opt.state) usage('--cert, --key and --state are required');
}

// ---- state ------------------------------------------------------------------------
// Persisted: every charge, and every stored idempotent answer
// (key -> {fingerprint, status, body}). Counters of requests are per process.
const state = { version: 1, charges: [], keys: {} };
const perOrder = new Map();   // order_id -> real charges
const byKey = new Map();      // idempotency_key -> first charge made with it

function indexCharge(ch) {
  perOrder.set(ch.order_id, (perOrder.get(ch.order_id) || 0) + 1);
  if (ch.idempotency_key != null && !byKey.has(ch.idempotency_key))
    byKey.set(ch.idempotency_key, ch);
}

function loadState() {
  let text;
  try {
    text = fs.readFileSync(opt.state, 'utf8');
  } catch (e) {
    if (e.code === 'ENOENT') return;
    console.error(`provider_sim: cannot read ${opt.state}: ${e.message}`);
    process.exit(2);
  }
  let s;
  try {
    s = JSON.parse(text);
  } catch (e) {
    // Never start from an empty state over a file we could not read: the
    // tests would see charges vanish.
    console.error(`provider_sim: ${opt.state} is not valid JSON: ${e.message}`);
    process.exit(2);
  }
  if (!s || !Array.isArray(s.charges) || typeof s.keys !== 'object' || s.keys === null) {
    console.error(`provider_sim: ${opt.state} has no charges/keys`);
    process.exit(2);
  }
  state.charges = s.charges;
  state.keys = s.keys;
  for (const ch of state.charges) indexCharge(ch);
}

// open/write/fsync/close a temporary file, rename it over the state file,
// fsync the directory: the state is on disk before anything is answered.
function saveState() {
  const tmp = `${opt.state}.tmp`;
  const data = Buffer.from(JSON.stringify(state));
  const fd = fs.openSync(tmp, 'w', 0o600);
  try {
    let off = 0;
    while (off < data.length) off += fs.writeSync(fd, data, off, data.length - off);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, opt.state);
  try {
    const dfd = fs.openSync(path.dirname(path.resolve(opt.state)), 'r');
    try { fs.fsyncSync(dfd); } finally { fs.closeSync(dfd); }
  } catch (e) { /* directory fsync is best effort */ }
}

loadState();

// ---- counters and fault mode ----------------------------------------------------
const stats = { requests: 0, posts: 0, replays: 0, lookups: 0, held: 0, unauthorized: 0 };
const MODES = new Set(['normal', 'slow', 'drop_after_charge', 'error_5xx',
  'error_5xx_after_charge', 'rate_limited', 'die_after_charge',
  'die_before_charge', 'lookup_error_5xx']);
let mode = { name: 'normal', count: 0, delayMs: 0, chargeFirst: false };
const inProgress = new Set();   // keys whose first request is still held

// The mode for this request, consuming one unit of its count. Lookups only
// see lookup_* modes; charge POSTs only see the others.
function takeMode(isLookup) {
  if (mode.name === 'normal' || mode.count <= 0) return 'normal';
  if (mode.name.startsWith('lookup_') !== isLookup) return 'normal';
  const m = { ...mode };
  mode.count--;
  if (mode.count <= 0) mode = { name: 'normal', count: 0, delayMs: 0, chargeFirst: false };
  return m;
}

// ---- responses ----------------------------------------------------------------------
const ERR = {
  keyRequired: { type: 'invalid_request_error', message: 'Idempotency-Key header is required' },
  keyMismatch: { type: 'idempotency_error',
    message: 'Keys for idempotent requests can only be used with the same parameters they were first used with.' },
  keyInUse: { type: 'idempotency_error', code: 'idempotency_key_in_use',
    message: 'There is currently another in-progress request using this Idempotency Key. Please try again later.' },
  declined: { type: 'card_error', code: 'card_declined', message: 'Your card was declined.' },
  noSuchCharge: { type: 'invalid_request_error', message: 'No such charge' },
  unavailable: { type: 'api_error', message: 'Service unavailable' },
  internal: { type: 'api_error', message: 'Internal server error' },
  rateLimited: { type: 'rate_limit_error', message: 'Too many requests' },
  notFound: { type: 'invalid_request_error', message: 'Unrecognized request URL' },
  unauthorized: { type: 'authentication_error', message: 'Invalid API key provided' },
};

const errBody = (e) => JSON.stringify({ error: e });
const invalid = (message) => errBody({ type: 'invalid_request_error', message });

function routeOf(req) {
  const q = req.url.indexOf('?');
  return q < 0 ? req.url : req.url.slice(0, q);
}

function send(req, res, status, body, headers = {}) {
  console.log(`REQ ${req.method} ${routeOf(req)} ${status}`);
  // Skip only a connection that is gone (a client that gave up). Not
  // res.socket == null: that is also a response Node has queued behind the
  // previous one on the same keep-alive connection (the previous one not yet
  // 'finish'ed, as after a held answer); it is sent once that one finishes.
  // Skipping it left the client waiting for an answer that never came.
  if (res.destroyed || req.socket == null || req.socket.destroyed) return;
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    ...headers,
  });
  res.end(body);
}

function dropSocket(req) {
  console.log(`REQ ${req.method} ${routeOf(req)} DROP`);
  req.socket.destroy();
}

function die() {
  console.log('DYING');
  process.exit(1);
}

// ---- charges --------------------------------------------------------------------------
// Parse and check a charge body: {params, fingerprint} or {error}.
function parseCharge(buf, tooBig) {
  if (tooBig) return { error: 'Request body is too large' };
  let v;
  try {
    v = JSON.parse(buf.toString('utf8'));
  } catch (e) {
    return { error: 'Invalid JSON in request body' };
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v))
    return { error: 'Request body must be a JSON object' };
  for (const k of Object.keys(v))
    if (k !== 'order_id' && k !== 'amount_minor' && k !== 'currency')
      return { error: `Received unknown parameter: ${k}` };
  if (typeof v.order_id !== 'string' || v.order_id.length === 0 || v.order_id.length > 255)
    return { error: 'order_id must be a string of 1 to 255 characters' };
  if (typeof v.amount_minor !== 'number' || !Number.isSafeInteger(v.amount_minor) ||
      v.amount_minor <= 0)
    return { error: 'amount_minor must be a positive integer' };
  if (typeof v.currency !== 'string' || !/^[A-Z]{3}$/.test(v.currency))
    return { error: 'currency must be 3 upper-case letters' };
  const params = { order_id: v.order_id, amount_minor: v.amount_minor, currency: v.currency };
  return { params, fingerprint: JSON.stringify([params.order_id, params.amount_minor, params.currency]) };
}

// The real work of a valid charge request that is not a replay: decline or
// charge, stored under the key and persisted before returning the answer
// {status, body}.
function execute(params, key) {
  let result;
  if (params.amount_minor === 402) {
    result = { status: 402, body: errBody(ERR.declined) };
  } else {
    const ch = {
      id: `ch_${crypto.randomBytes(8).toString('hex')}`,
      object: 'charge',
      order_id: params.order_id,
      amount_minor: params.amount_minor,
      currency: params.currency,
      status: 'succeeded',
      idempotency_key: key,
      created: Math.floor(Date.now() / 1000),
    };
    state.charges.push(ch);
    indexCharge(ch);
    result = { status: 200, body: JSON.stringify(ch), charge: ch };
  }
  if (opt.idempotency)
    state.keys[key] = { fingerprint: params.fingerprint, status: result.status, body: result.body };
  saveState();
  if (result.charge) console.log(`CHARGED ${params.order_id} ${result.charge.id}`);
  return result;
}

// Decide a charge request: {status, body, headers}. Executes (charges) only
// when the request is valid, new and not conflicting.
function decide(key, parsed) {
  if (parsed.error) return { status: 400, body: invalid(parsed.error) };
  if (opt.idempotency) {
    const stored = state.keys[key];
    if (stored) {
      if (stored.fingerprint !== parsed.fingerprint)
        return { status: 422, body: errBody(ERR.keyMismatch) };
      stats.replays++;
      return { status: stored.status, body: stored.body,
               headers: { 'idempotent-replayed': 'true' } };
    }
    if (inProgress.has(key)) return { status: 409, body: errBody(ERR.keyInUse) };
  }
  const params = { ...parsed.params, fingerprint: parsed.fingerprint };
  return execute(params, key);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function handleCharge(req, res, buf, tooBig) {
  stats.posts++;
  let key = req.headers['idempotency-key'];
  if (Array.isArray(key)) key = key[0];
  if (typeof key !== 'string' || key.length === 0) key = null;
  const m = takeMode(false);
  const parsed = parseCharge(buf, tooBig);
  const orderId = parsed.params ? parsed.params.order_id : '-';

  switch (m.name) {
    case 'error_5xx': return send(req, res, 503, errBody(ERR.unavailable));
    case 'rate_limited':
      return send(req, res, 429, errBody(ERR.rateLimited), { 'retry-after': '1' });
    case 'die_before_charge': return die();
    default: break;
  }

  if (opt.idempotency) {
    if (key === null) return send(req, res, 400, errBody(ERR.keyRequired));
    if (key.length > 255)
      return send(req, res, 400, invalid('Idempotency-Key must be at most 255 characters'));
  }

  let out;
  if (m.name === 'slow') {
    stats.held++;
    console.log(`HELD ${orderId}`);
    try {
      if (m.chargeFirst) {
        out = decide(key, parsed);
        await sleep(m.delayMs);
      } else {
        const reserve = opt.idempotency && !parsed.error && !state.keys[key] && !inProgress.has(key);
        if (reserve) inProgress.add(key);
        try {
          await sleep(m.delayMs);
        } finally {
          if (reserve) inProgress.delete(key);
        }
        out = decide(key, parsed);
      }
    } finally {
      stats.held--;
    }
    return send(req, res, out.status, out.body, out.headers);
  }

  out = decide(key, parsed);
  switch (m.name) {
    case 'drop_after_charge':
      console.log(`DROPPED ${orderId}`);
      return dropSocket(req);
    case 'error_5xx_after_charge': return send(req, res, 500, errBody(ERR.internal));
    case 'die_after_charge':
      console.log(`REQ ${req.method} ${routeOf(req)} DROP`);
      return die();
    default: return send(req, res, out.status, out.body, out.headers);
  }
}

function handleLookup(req, res) {
  stats.lookups++;
  if (!opt.lookup) return send(req, res, 501, JSON.stringify({ error: { message: 'lookup not supported' } }));
  const m = takeMode(true);
  if (m.name === 'lookup_error_5xx') return send(req, res, 503, errBody(ERR.unavailable));
  const q = new URL(req.url, 'https://localhost').searchParams;
  const key = q.get('idempotency_key');
  if (!key) return send(req, res, 400, invalid('idempotency_key query parameter is required'));
  const ch = byKey.get(key);
  if (!ch) return send(req, res, 404, errBody(ERR.noSuchCharge));
  return send(req, res, 200, JSON.stringify(ch));
}

// --require-auth: the request's Authorization header is exactly the value
// (compared in constant time). Never printed: the tests look for the value
// in every output.
function authorized(req) {
  if (opt.auth === null) return true;
  const h = req.headers.authorization;
  if (typeof h !== 'string') return false;
  const got = Buffer.from(h, 'utf8');
  return got.length === opt.auth.length && crypto.timingSafeEqual(got, opt.auth);
}

// ---- server ----------------------------------------------------------------------------
const MAX_BODY = 1024 * 1024;

const server = https.createServer({
  cert: fs.readFileSync(opt.cert),
  key: fs.readFileSync(opt.key),
  keepAliveTimeout: 60000,
  headersTimeout: 65000,   // above keepAliveTimeout
}, (req, res) => {
  const chunks = [];
  let n = 0;
  let tooBig = false;
  req.on('data', (c) => {
    n += c.length;
    if (n > MAX_BODY) tooBig = true;
    else chunks.push(c);
  });
  req.on('end', () => {
    stats.requests++;
    const route = routeOf(req);
    const buf = Buffer.concat(chunks);
    try {
      if (!authorized(req)) {
        // Before anything else: no charge, no idempotency key stored or
        // consumed, no fault mode used up, lookups included.
        stats.unauthorized++;
        send(req, res, 401, errBody(ERR.unauthorized),
             { 'www-authenticate': 'Bearer realm="provider_sim"' });
      } else if (req.method === 'POST' && route === '/v1/charges') {
        handleCharge(req, res, buf, tooBig).catch((e) => {
          // saveState failing is fatal: an unpersisted charge must not be
          // answered.
          console.error(`provider_sim: ${e.stack || e}`);
          die();
        });
      } else if (req.method === 'GET' && route === '/v1/charges') {
        handleLookup(req, res);
      } else {
        send(req, res, 404, errBody(ERR.notFound));
      }
    } catch (e) {
      console.error(`provider_sim: ${e.stack || e}`);
      die();
    }
  });
});
server.on('tlsClientError', (err) => console.log(`TLSERR ${err.code || err.message}`));

// A fixed port (a restart) may still be held for a moment: retry for ~10 s.
let listenTries = 0;
server.on('error', (e) => {
  if (e.code === 'EADDRINUSE' && opt.port !== 0 && ++listenTries < 100) {
    setTimeout(() => server.listen(opt.port, '127.0.0.1'), 100);
    return;
  }
  console.error(`provider_sim: listen: ${e.message}`);
  process.exit(3);
});
server.on('listening', () => console.log(`PORT ${server.address().port}`));
server.listen(opt.port, '127.0.0.1');

// ---- control -----------------------------------------------------------------------------
function ack(seq, obj) {
  console.log(`ACK ${seq} ${JSON.stringify(obj)}`);
}

function statsJson() {
  let max = 0;
  const twice = [];
  for (const [order, n] of perOrder) {
    if (n > max) max = n;
    if (n >= 2 && twice.length < 20) twice.push(order);
  }
  return {
    charges_total: state.charges.length,
    orders_charged: perOrder.size,
    max_charges_per_order: max,
    orders_charged_twice: twice,
    requests: stats.requests,
    posts: stats.posts,
    replays: stats.replays,
    lookups: stats.lookups,
    held: stats.held,
    unauthorized: stats.unauthorized,
  };
}

function control(line) {
  if (line.trim() === '') return;
  let c;
  try {
    c = JSON.parse(line);
  } catch (e) {
    return ack('-', { ok: false, error: 'invalid JSON' });
  }
  if (c === null || typeof c !== 'object' || Array.isArray(c))
    return ack('-', { ok: false, error: 'command must be a JSON object' });
  const seq = Number.isSafeInteger(c.seq) ? c.seq : '-';
  const fail = (error) => ack(seq, { ok: false, error });
  switch (c.cmd) {
    case 'mode': {
      if (typeof c.mode !== 'string' || !MODES.has(c.mode)) return fail(`unknown mode ${c.mode}`);
      const count = c.count === undefined ? 1 : c.count;
      const delay = c.delay_ms === undefined ? 0 : c.delay_ms;
      if (!Number.isSafeInteger(count) || count < 0) return fail('count must be an integer >= 0');
      if (!Number.isSafeInteger(delay) || delay < 0) return fail('delay_ms must be an integer >= 0');
      if (c.charge_first !== undefined && typeof c.charge_first !== 'boolean')
        return fail('charge_first must be a boolean');
      mode = { name: c.mode, count: c.mode === 'normal' ? 0 : count, delayMs: delay,
               chargeFirst: c.charge_first === true };
      return ack(seq, { ok: true });
    }
    case 'stats': return ack(seq, statsJson());
    case 'charges':
      if (typeof c.order_id !== 'string') return fail('order_id must be a string');
      return ack(seq, { count: perOrder.get(c.order_id) || 0 });
    case 'exit':
      ack(seq, { ok: true });
      return process.exit(0);
    default: return fail(`unknown cmd ${c.cmd}`);
  }
}

// Stay up when stdin ends (a hand-run simulator); only `exit` or a signal
// stop it.
readline.createInterface({ input: process.stdin, terminal: false }).on('line', control);

process.on('SIGTERM', () => process.exit(0));
process.on('SIGINT', () => process.exit(0));
