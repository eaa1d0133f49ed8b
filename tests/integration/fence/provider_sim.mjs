// SPDX-License-Identifier: Apache-2.0
// A payment provider for the fence tests: charges over HTTPS with
// Idempotency-Key, state that survives kill -9, and scripted faults.
// See README.md next to this file. Node core modules only; Node >= 18.
//
//   node provider_sim.mjs --cert C --key K --state FILE [--port N]
//                         [--no-idempotency] [--no-lookup]
//                         [--require-auth VALUE]
//                         [--profile default|stripe|ietf]
//                         [--key-retention-ms N] [--clock-offset-ms N]
//
// Profiles: how keys are kept and refused (see "profiles" below, README.md).
//   default  this simulator's rules before profiles existed, unchanged: key
//            required (400), other parameters 422, in progress 409, keys
//            kept forever unless --key-retention-ms is given.
//   stripe   Stripe API v1's published rules: key optional, other
//            parameters 400 idempotency_error, in progress 409
//            idempotency_key_in_use, keys pruned after 24 h.
//   ietf     draft-ietf-httpapi-idempotency-key-header: key required (400),
//            other payload 422, in progress 409, all application/problem+json;
//            keys expire after 24 h (the policy this server publishes).
// Time: the simulator's own clock is Date.now() + an offset that only grows
// (--clock-offset-ms at start, the `advance` command, kept in the state file),
// so a test can age keys without touching the terminal's clock.
//
// stdout, one line per event (the tests read it):
//   PORT <port>                          listening on 127.0.0.1
//   REQ <method> <path> <status|DROP>    a request was answered (or not)
//   CHARGED <order_id> <charge_id>       a real charge was made
//   PRUNED <key>                         a stored key past its retention was
//                                        forgotten (its next use is new)
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
                '[--port N] [--no-idempotency] [--no-lookup] [--require-auth VALUE] ' +
                '[--profile default|stripe|ietf] [--key-retention-ms N] [--clock-offset-ms N]');
  process.exit(2);
}

const DAY_MS = 24 * 60 * 60 * 1000;
const PROFILES = new Set(['default', 'stripe', 'ietf']);
const opt = { cert: null, key: null, state: null, port: 0,
              idempotency: true, lookup: true, auth: null,
              profile: 'default', retentionMs: null, clockOffsetMs: 0 };
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
      case '--profile': {
        const v = needValue();
        if (!PROFILES.has(v)) usage(`unknown profile ${v} (default, stripe or ietf)`);
        opt.profile = v;
        break;
      }
      case '--key-retention-ms': {
        const v = needValue();
        if (!/^[0-9]+$/.test(v) || !Number.isSafeInteger(Number(v)) || Number(v) < 1)
          usage(`bad --key-retention-ms ${v} (an integer >= 1)`);
        opt.retentionMs = Number(v);
        break;
      }
      case '--clock-offset-ms': {
        const v = needValue();
        if (!/^[0-9]+$/.test(v) || !Number.isSafeInteger(Number(v)))
          usage(`bad --clock-offset-ms ${v} (an integer >= 0)`);
        opt.clockOffsetMs = Number(v);
        break;
      }
      default: usage(`unknown argument ${a[i]}`);
    }
  }
  if (!opt.cert || !opt.key || !opt.state) usage('--cert, --key and --state are required');
  // Retention by profile when not given: the default profile never prunes
  // (as before profiles); stripe: "You can remove keys from the system
  // automatically after they're at least 24 hours old" (Stripe API reference,
  // Idempotent requests); ietf: the draft leaves expiry to the server ("The
  // resource MAY enforce time based idempotency keys ... SHOULD define such
  // expiration policy and publish it", Idempotency Key Validity and Expiry):
  // this server publishes 24 h, in README.md.
  if (opt.retentionMs === null && opt.profile !== 'default') opt.retentionMs = DAY_MS;
}

// ---- state ------------------------------------------------------------------------
// Persisted: every charge, every stored idempotent answer
// (key -> {fingerprint, status, body, created_ms, charge_id}), and the offset
// of the simulator's clock. Counters of requests are per process.
// created_ms is on the simulator's clock; charge_id is the charge the answer
// made, or null (a decline, a saved 500 without a charge). A record from an
// older state file has neither: it is never pruned, and its lookup falls back
// to the first charge made with the key.
// keys has no prototype: a key named "constructor" or "__proto__" is a key
// like any other.
const state = { version: 1, charges: [], keys: Object.create(null), clock_offset_ms: 0 };
const perOrder = new Map();   // order_id -> real charges
const byKey = new Map();      // idempotency_key -> first charge made with it
const byId = new Map();       // charge id -> charge

function indexCharge(ch) {
  perOrder.set(ch.order_id, (perOrder.get(ch.order_id) || 0) + 1);
  byId.set(ch.id, ch);
  if (ch.idempotency_key != null && !byKey.has(ch.idempotency_key))
    byKey.set(ch.idempotency_key, ch);
}

// The simulator's clock: its own, so tests can move it without moving the
// terminal's. The offset only grows: the larger of the saved one and
// --clock-offset-ms at start, then `advance`.
const simNow = () => Date.now() + state.clock_offset_ms;

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
  state.keys = Object.assign(Object.create(null), s.keys);
  if (Number.isSafeInteger(s.clock_offset_ms) && s.clock_offset_ms > 0)
    state.clock_offset_ms = s.clock_offset_ms;
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
if (opt.clockOffsetMs > state.clock_offset_ms) state.clock_offset_ms = opt.clockOffsetMs;

// ---- key retention -------------------------------------------------------------
// A stored key is forgotten once it is at least retentionMs old on the
// simulator's clock (Stripe: "at least 24 hours old"; "We generate a new
// request if a key is reused after the original is pruned."). Pruning is
// lazy, at the key's next use (a request, a lookup, the `key` command), and
// a sweep at `advance`; the file is rewritten before anything is answered.
const expired = (rec) => opt.retentionMs !== null && Number.isSafeInteger(rec.created_ms) &&
  simNow() - rec.created_ms >= opt.retentionMs;

function forget(key) {
  delete state.keys[key];
  stats.pruned++;
  console.log(`PRUNED ${key}`);
}

// The live record stored under key, or null; prunes (and persists) an
// expired one.
function liveKey(key) {
  if (key === null || !Object.prototype.hasOwnProperty.call(state.keys, key)) return null;
  const rec = state.keys[key];
  if (!expired(rec)) return rec;
  forget(key);
  saveState();
  return null;
}

function sweep() {
  let n = 0;
  for (const key of Object.keys(state.keys))
    if (expired(state.keys[key])) {
      forget(key);
      n++;
    }
  return n;
}

// ---- counters and fault mode ----------------------------------------------------
const stats = { requests: 0, posts: 0, replays: 0, lookups: 0, held: 0, unauthorized: 0,
  pruned: 0 };
const MODES = new Set(['normal', 'slow', 'drop_after_charge', 'error_5xx',
  'error_5xx_after_charge', 'rate_limited', 'die_after_charge',
  'die_before_charge', 'lookup_error_5xx', 'error_500_saved', 'echo_headers']);
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

// ---- profiles ---------------------------------------------------------------------
// The answers that differ by profile: a missing key, a key reused with other
// parameters, a key whose first request is still in progress. Each returns
// {status, body, headers}, or null for "no refusal" (a missing key that the
// profile does not require).
//
// stripe: Stripe API reference, "Idempotent requests"
// (https://docs.stripe.com/api/idempotent_requests) and "Low-level error
// handling", Idempotency (https://docs.stripe.com/error-low-level#idempotency):
//   - the key is optional ("provide an additional Idempotency-Key header");
//     a request without one is executed, and nothing is saved for it;
//   - "The idempotency layer compares incoming parameters to those of the
//     original request and errors if they're not the same": 400,
//     type idempotency_error, the message Stripe sends;
//   - a request that "conflicts with another request that's executing
//     concurrently" saves nothing: 409 idempotency_error,
//     code idempotency_key_in_use;
//   - replays carry Idempotent-Replayed: true.
// ietf: draft-ietf-httpapi-idempotency-key-header, "Error Scenarios":
//   - missing key on an operation that requires it: "SHOULD reply with an
//     HTTP 400 status code with body containing a link pointing to relevant
//     documentation" (the draft's examples use RFC 9457 problem details);
//   - "an attempt to reuse an idempotency key with a different request
//     payload": 422 (Unprocessable Content);
//   - "retried, while the original request is still being processed": 409;
//   - a retry after completion gets "the result of the previously completed
//     operation, success or an error" ("Idempotency Enforcement Scenarios");
//     the draft defines no replay marker, so none is sent.
// default: this simulator's answers from before profiles, unchanged.
const IETF_TYPE = 'https://developer.example.com/idempotency';   // the draft's example
const problem = (status, title, detail) => ({
  status,
  body: JSON.stringify({ type: IETF_TYPE, title, status, detail }),
  headers: { 'content-type': 'application/problem+json', 'content-language': 'en' },
});

const PROFILE = {
  default: {
    keyRequired: true,
    replayHeader: true,
    missingKey: () => ({ status: 400, body: errBody(ERR.keyRequired) }),
    mismatch: () => ({ status: 422, body: errBody(ERR.keyMismatch) }),
    inUse: () => ({ status: 409, body: errBody(ERR.keyInUse) }),
  },
  stripe: {
    keyRequired: false,
    replayHeader: true,
    missingKey: () => null,
    mismatch: (key) => ({ status: 400, body: errBody({ type: 'idempotency_error',
      message: 'Keys for idempotent requests can only be used with the same parameters ' +
        `they were first used with. Try using a key other than '${key}' if you meant ` +
        'to execute a different request.' }) }),
    inUse: () => ({ status: 409, body: errBody(ERR.keyInUse) }),
  },
  ietf: {
    keyRequired: true,
    replayHeader: false,
    missingKey: () => problem(400, 'Idempotency-Key is missing',
      'This operation is idempotent and it requires correct usage of Idempotency Key.'),
    mismatch: () => problem(422, 'Idempotency-Key is already used',
      'This operation is idempotent and it requires correct usage of Idempotency Key. ' +
      'Idempotency Key MUST not be reused across different payloads of this operation.'),
    inUse: () => problem(409, 'A request is outstanding for this Idempotency-Key',
      'A request with the same Idempotency-Key for the same operation is being processed ' +
      'or is outstanding.'),
  },
}[opt.profile];

// The key of a request, or null (none, empty). ietf: the draft makes the
// field a Structured Field String (RFC 8941 sf-string), so a quoted value is
// unquoted ("k" and k are the same key); a bare value is taken as it is.
function requestKey(req) {
  let key = req.headers['idempotency-key'];
  if (Array.isArray(key)) key = key[0];
  if (typeof key !== 'string' || key.length === 0) return null;
  if (opt.profile === 'ietf') {
    const m = /^"((?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\])*)"$/.exec(key);
    if (m) key = m[1].replace(/\\(["\\])/g, '$1');
    if (key.length === 0) return null;
  }
  return key;
}

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
// charge, stored under the key (with the time the request arrived, on the
// simulator's clock) and persisted before returning the answer
// {status, body}.
// save500 (mode error_500_saved): the answer is a 500 and the 500 is what
// the key keeps, as Stripe API v1 does: "Stripe saves the status code and
// body of the first request made with a given idempotency key after
// endpoint execution begins. Retries with the same key return the saved
// response, including 500 errors." (Idempotent requests). With charge the
// charge (or decline) is made first, and still answered and saved as 500.
function execute(params, key, arrivedMs, save500, charge) {
  let result = null;
  let ch = null;
  if (!save500 || charge) {
    if (params.amount_minor === 402) {
      result = { status: 402, body: errBody(ERR.declined) };
    } else {
      ch = {
        id: `ch_${crypto.randomBytes(8).toString('hex')}`,
        object: 'charge',
        order_id: params.order_id,
        amount_minor: params.amount_minor,
        currency: params.currency,
        status: 'succeeded',
        idempotency_key: key,
        created: Math.floor(simNow() / 1000),
      };
      state.charges.push(ch);
      indexCharge(ch);
      result = { status: 200, body: JSON.stringify(ch) };
    }
  }
  if (save500) result = { status: 500, body: errBody(ERR.internal) };
  if (opt.idempotency && key !== null)
    state.keys[key] = { fingerprint: params.fingerprint, status: result.status, body: result.body,
                        created_ms: arrivedMs, charge_id: ch ? ch.id : null };
  saveState();
  if (ch) console.log(`CHARGED ${params.order_id} ${ch.id}`);
  return result;
}

// Decide a charge request: {status, body, headers}. Executes (charges) only
// when the request is valid, new (or its key pruned) and not conflicting.
// Nothing is saved for a refused request (Stripe: "We save results only
// after the execution of an endpoint begins. If incoming parameters fail
// validation, or the request conflicts with another request that's
// executing concurrently, no idempotent result is saved").
function decide(key, parsed, arrivedMs, save500 = false, charge = false) {
  if (parsed.error) return { status: 400, body: invalid(parsed.error) };
  if (opt.idempotency && key !== null) {
    const stored = liveKey(key);
    if (stored) {
      if (stored.fingerprint !== parsed.fingerprint) return PROFILE.mismatch(key);
      stats.replays++;
      return { status: stored.status, body: stored.body,
               headers: PROFILE.replayHeader ? { 'idempotent-replayed': 'true' } : {} };
    }
    if (inProgress.has(key)) return PROFILE.inUse(key);
  }
  const params = { ...parsed.params, fingerprint: parsed.fingerprint };
  return execute(params, key, arrivedMs, save500, charge);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function handleCharge(req, res, buf, tooBig) {
  stats.posts++;
  const arrivedMs = simNow();
  const key = requestKey(req);
  const m = takeMode(false);
  const parsed = parseCharge(buf, tooBig);
  const orderId = parsed.params ? parsed.params.order_id : '-';

  switch (m.name) {
    case 'error_5xx': return send(req, res, 503, errBody(ERR.unavailable));
    case 'rate_limited':
      return send(req, res, 429, errBody(ERR.rateLimited), { 'retry-after': '1' });
    case 'die_before_charge': return die();
    case 'echo_headers': {
      // Some gateways and debugging proxies answer an error that echoes the
      // request's headers (the Authorization value included), with control
      // characters: nothing is charged.
      const hdrs = Object.entries(req.headers).map(([k, v]) => `${k}: ${v}`).join('\r\n');
      return send(req, res, 402, JSON.stringify({ error: { type: 'card_error',
        code: 'card_declined', message: `declined; request was:\r\n${hdrs}\r\n\u001b[2J` } }));
    }
    default: break;
  }

  if (opt.idempotency) {
    if (key === null && PROFILE.keyRequired) {
      const r = PROFILE.missingKey();
      return send(req, res, r.status, r.body, r.headers);
    }
    // Stripe: "Idempotency keys are up to 255 characters long."
    if (key !== null && key.length > 255)
      return send(req, res, 400, invalid('Idempotency-Key must be at most 255 characters'));
  }

  let out;
  if (m.name === 'slow') {
    stats.held++;
    console.log(`HELD ${orderId}`);
    try {
      if (m.chargeFirst) {
        out = decide(key, parsed, arrivedMs);
        await sleep(m.delayMs);
      } else {
        const reserve = opt.idempotency && key !== null && !parsed.error && !liveKey(key) &&
          !inProgress.has(key);
        if (reserve) inProgress.add(key);
        try {
          await sleep(m.delayMs);
        } finally {
          if (reserve) inProgress.delete(key);
        }
        out = decide(key, parsed, arrivedMs);
      }
    } finally {
      stats.held--;
    }
    return send(req, res, out.status, out.body, out.headers);
  }

  out = m.name === 'error_500_saved' ? decide(key, parsed, arrivedMs, true, m.chargeFirst)
    : decide(key, parsed, arrivedMs);
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
  // With keys: the charge the key's live record made (none for a decline, a
  // saved 500 without a charge, a pruned key); without: the first charge.
  let ch;
  if (opt.idempotency) {
    const rec = liveKey(key);
    ch = !rec ? null : rec.charge_id === undefined ? byKey.get(key)
      : rec.charge_id === null ? null : byId.get(rec.charge_id);
  } else {
    ch = byKey.get(key);
  }
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
    keys: Object.values(state.keys).filter((r) => !expired(r)).length,
    pruned: stats.pruned,
    profile: opt.profile,
    key_retention_ms: opt.retentionMs,
    clock_offset_ms: state.clock_offset_ms,
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
    case 'advance': {
      // Moves the simulator's clock (only) forward; keys it ages past the
      // retention are pruned now, and the offset is on disk before the ACK.
      if (!Number.isSafeInteger(c.ms) || c.ms < 0) return fail('ms must be an integer >= 0');
      if (!Number.isSafeInteger(state.clock_offset_ms + c.ms)) return fail('ms is too large');
      state.clock_offset_ms += c.ms;
      const pruned = sweep();
      saveState();
      return ack(seq, { ok: true, offset_ms: state.clock_offset_ms, now_ms: simNow(), pruned });
    }
    case 'clock':
      return ack(seq, { now_ms: simNow(), offset_ms: state.clock_offset_ms });
    case 'key': {
      if (typeof c.key !== 'string') return fail('key must be a string');
      const rec = opt.idempotency ? liveKey(c.key) : null;
      if (!rec) return ack(seq, { found: false });
      const created = Number.isSafeInteger(rec.created_ms) ? rec.created_ms : null;
      return ack(seq, {
        found: true,
        status: rec.status,
        charge_id: rec.charge_id === undefined ? null : rec.charge_id,
        created_ms: created,
        age_ms: created === null ? null : simNow() - created,
        expires_in_ms: created === null || opt.retentionMs === null ? null
          : created + opt.retentionMs - simNow(),
      });
    }
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
