// SPDX-License-Identifier: Apache-2.0
// Generates random requests signed by @smithy/signature-v4 (the AWS SDK for
// JavaScript v3 signer) and prints them as JSON lines, one request per line,
// for tests/unit/test_sigv4_smithy.c to re-sign with oncebox's C signer and
// compare byte for byte.
//
// usage: node sigv4_gen.mjs [--seed N] [--sqs N] [--generic N] [--out FILE]
//   --seed     PRNG seed (default 1); same seed, same requests
//   --sqs      SQS JSON-1.0 requests: POST / with Content-Type
//              application/x-amz-json-1.0 and X-Amz-Target (default 240)
//   --generic  requests with random methods, paths, queries and headers,
//              header-signed and presigned (default 80)
//   --out      write there instead of stdout
//
// One line:
//   {"id", "kind": "sqs"|"generic", "mode": "header"|"presign",
//    "method", "path", "query" (raw, percent-encoded, may be ""),
//    "headers": [[name, value], ...], "body_b64",
//    "region", "service", "time_s", "normalize", "sign_body", "expires",
//    "akid", "secret", "token" (or null),
//    "expect": {"authorization"} | {"signature", "signed_headers", "credential"}}
import { SignatureV4 } from "@smithy/signature-v4";
import { Sha256 } from "@aws-crypto/sha256-js";
import { writeFileSync } from "node:fs";

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : dflt;
};
const SEED = Number(opt("--seed", "1")) >>> 0;
const N_SQS = Number(opt("--sqs", "240"));
const N_GENERIC = Number(opt("--generic", "80"));
const OUT = opt("--out", null);

// mulberry32: small, seedable, good enough for test data.
let s = SEED || 1;
const rnd = () => {
  s = (s + 0x6d2b79f5) >>> 0;
  let t = s;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const int = (lo, hi) => lo + Math.floor(rnd() * (hi - lo + 1));
const pick = (a) => a[Math.floor(rnd() * a.length)];
const chance = (p) => rnd() < p;
const str = (alphabet, lo, hi) => {
  const n = int(lo, hi);
  let r = "";
  for (let i = 0; i < n; i++) r += alphabet[Math.floor(rnd() * alphabet.length)];
  return r;
};

const UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
const ALNUM = UPPER + "abcdefghijklmnopqrstuvwxyz0123456789";
const B64 = ALNUM + "+/";
const REGIONS = [
  "us-east-1", "us-east-2", "us-west-1", "us-west-2", "eu-west-1", "eu-west-2",
  "eu-west-3", "eu-central-1", "eu-central-2", "eu-north-1", "eu-south-1",
  "ap-southeast-1", "ap-southeast-2", "ap-northeast-1", "ap-northeast-2",
  "ap-south-1", "sa-east-1", "ca-central-1", "me-south-1", "af-south-1",
  "us-gov-west-1", "cn-north-1", "il-central-1",
];
const OPS = [
  "SendMessage", "SendMessageBatch", "ReceiveMessage", "DeleteMessage",
  "DeleteMessageBatch", "ChangeMessageVisibility",
  "ChangeMessageVisibilityBatch", "GetQueueUrl", "GetQueueAttributes",
];

// Message-body characters: ASCII, JSON-hostile, Latin, CJK, RTL, emoji
// (astral plane), combining marks, zero-width, BOM.
const BODY_CHARS = [
  ..."abcdefghijklmnopqrstuvwxyz ABCXYZ0123456789",
  "\"", "\\", "/", "\n", "\r", "\t", "{", "}", "[", "]", ":", ",", "%", "&",
  "+", "=", "?", "#",
  "é", "ß", "ñ", "Ø", "€", "£", "µ", "ሴ", "日", "本", "語", "한", "ش", "ע",
  "🙂", "🚀", "𝄞", "👩‍💻", "\u0301", "\u200b", "\ufeff", "\ufffd", "\u00a0",
  "\u2028",
];
const randBody = () => {
  const n = chance(0.1) ? int(2000, 9000) : int(1, 200);
  let r = "";
  for (let i = 0; i < n; i++) r += pick(BODY_CHARS);
  return r;
};

// Times: mostly 2000..2099, plus edges (leap days, year ends, midnight).
const EDGE_TIMES = [
  951782400, 951868799, 1440938160, 1704067199, 1704067200, 1709164800,
  4107542399, 4107542400, 946684800, 2147483647, 2147483648, 4102444799,
];
const randTime = () =>
  chance(0.1) ? pick(EDGE_TIMES) : int(946684800, 4102444799);

const randCreds = () => {
  const temp = chance(0.5);
  return {
    accessKeyId: (temp ? "ASIA" : "AKIA") + str("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16, 16),
    secretAccessKey: str(B64, 40, 40),
    ...(temp ? { sessionToken: str(B64, 200, 700) + pick(["", "=", "=="]) } : {}),
  };
};

const uuid = () => {
  const h = "0123456789abcdef";
  const g = (n) => str(h, n, n);
  return `${g(8)}-${g(4)}-4${g(3)}-${pick(["8", "9", "a", "b"])}${g(3)}-${g(12)}`;
};

const queueUrl = (region) =>
  `https://sqs.${region}.amazonaws.com/${str("0123456789", 12, 12)}/${str(ALNUM + "-_", 1, 70)}${chance(0.3) ? ".fifo" : ""}`;

const sqsBody = (op, region) => {
  const QueueUrl = queueUrl(region);
  const attrs = () => {
    const a = {};
    for (let i = int(0, 3); i > 0; i--) {
      const t = pick(["String", "Number", "Binary"]);
      a[str(ALNUM, 1, 20)] =
        t === "Binary"
          ? { DataType: t, BinaryValue: Buffer.from(randBody()).toString("base64") }
          : { DataType: t, StringValue: t === "Number" ? String(int(-1e6, 1e6)) : randBody() };
    }
    return a;
  };
  const entry = (i) => ({ Id: `m${i}`, MessageBody: randBody(), ...(chance(0.3) ? { MessageAttributes: attrs() } : {}) });
  switch (op) {
    case "SendMessage":
      return { QueueUrl, MessageBody: randBody(), ...(chance(0.5) ? { MessageAttributes: attrs() } : {}),
               ...(chance(0.3) ? { MessageGroupId: str(ALNUM, 1, 20), MessageDeduplicationId: uuid() } : {}) };
    case "SendMessageBatch":
      return { QueueUrl, Entries: Array.from({ length: int(1, 10) }, (_, i) => entry(i)) };
    case "ReceiveMessage":
      return { QueueUrl, MessageSystemAttributeNames: ["ApproximateReceiveCount", "SentTimestamp"],
               MessageAttributeNames: ["All"], MaxNumberOfMessages: int(1, 10),
               VisibilityTimeout: int(0, 43200), WaitTimeSeconds: int(0, 20) };
    case "DeleteMessage":
      return { QueueUrl, ReceiptHandle: str(B64, 100, 400) };
    case "DeleteMessageBatch":
      return { QueueUrl, Entries: Array.from({ length: int(1, 10) }, (_, i) => ({ Id: `d${i}`, ReceiptHandle: str(B64, 100, 300) })) };
    case "ChangeMessageVisibility":
      return { QueueUrl, ReceiptHandle: str(B64, 100, 400), VisibilityTimeout: int(0, 43200) };
    case "ChangeMessageVisibilityBatch":
      return { QueueUrl, Entries: Array.from({ length: int(1, 10) }, (_, i) => ({ Id: `c${i}`, ReceiptHandle: str(B64, 100, 300), VisibilityTimeout: int(0, 43200) })) };
    case "GetQueueUrl":
      return { QueueName: str(ALNUM + "-_", 1, 80) };
    default:
      return { QueueUrl, AttributeNames: ["All"] };
  }
};

// Header-name casing as callers write it: lower, Title-Case, UPPER.
const caseName = (n) =>
  pick([
    () => n,
    () => n.replace(/(^|-)([a-z])/g, (_, d, c) => d + c.toUpperCase()),
    () => n.toUpperCase(),
  ])();

function sqsRequest() {
  const region = pick(REGIONS);
  const op = pick(OPS);
  const bodyStr = chance(0.03) ? "{}" : JSON.stringify(sqsBody(op, region));
  const host = `sqs.${region}.amazonaws.com`;
  const headers = {};
  headers[caseName("host")] = host;
  headers[caseName("content-type")] = "application/x-amz-json-1.0";
  headers[caseName("x-amz-target")] = `AmazonSQS.${op}`;
  if (chance(0.6)) headers[caseName("content-length")] = String(Buffer.byteLength(bodyStr, "utf8"));
  if (chance(0.5)) headers["x-amzn-query-mode"] = "true";
  if (chance(0.5)) headers["amz-sdk-invocation-id"] = uuid();
  if (chance(0.5)) headers["amz-sdk-request"] = `attempt=${int(1, 3)}; max=3`;
  if (chance(0.4)) headers["x-amz-user-agent"] = "aws-sdk-js/3.1175.0";
  if (chance(0.4)) headers["User-Agent"] = "oncebox/0.1 (linux)";  // never signed
  return {
    kind: "sqs", method: "POST", path: "/", query: {}, rawQuery: "",
    headers, bodyStr, region, service: "sqs", normalize: true,
  };
}

// Path segments: unreserved, reserved, spaces, '%', UTF-8, dot segments,
// empty segments (→ "//").
const SEG_CHARS = [..."abcXYZ019-._~", " ", "!", "*", "'", "(", ")", "@", ":", "+",
  "$", ",", ";", "=", "%", "é", "ሴ", "🙂", "[", "]"];
const randPath = (normalize) => {
  const segs = [];
  for (let i = int(0, 5); i > 0; i--) {
    const r = rnd();
    if (r < 0.1) segs.push(".");
    else if (r < 0.2) segs.push("..");
    else if (r < 0.3) segs.push("");
    else segs.push(normalize ? str(SEG_CHARS, 1, 8) : str(ALNUM + "-._~", 1, 8));
  }
  return "/" + segs.join("/") + (chance(0.3) ? "/" : "");
};

const Q_CHARS = [..."abcXYZ019-._~", " ", "!", "*", "'", "(", ")", "@", ":", "/",
  "?", "&", "=", "+", "%", "#", "é", "ሴ", "🙂"];
const enc = (v) =>
  [...v].map((c) => (/[^\x00-\x7f]/.test(c) && chance(0.3) ? c : encodeURIComponent(c))).join("");
const randQuery = () => {
  const q = {};
  const parts = [];
  for (let i = int(0, 5); i > 0; i--) {
    const k = str(Q_CHARS, 1, 8);
    if (k.toLowerCase() === "x-amz-signature" || k in q) continue;
    if (chance(0.2)) {
      const vs = Array.from({ length: int(2, 3) }, () => str(Q_CHARS, 0, 6));
      q[k] = vs;
      for (const v of vs) parts.push(`${enc(k)}=${enc(v)}`);
    } else {
      const v = chance(0.15) ? "" : str(Q_CHARS, 1, 10);
      q[k] = v;
      parts.push(v === "" && chance(0.5) ? enc(k) : `${enc(k)}=${enc(v)}`);
    }
  }
  // Shuffle: the canonical form must not depend on the order given.
  for (let i = parts.length - 1; i > 0; i--) {
    const j = int(0, i);
    [parts[i], parts[j]] = [parts[j], parts[i]];
  }
  return { q, raw: parts.join("&") };
};

const HV_CHARS = [..."abc XYZ 019-_.;=,/\"", "\t", " ", " ", "é"];
function genericRequest() {
  const normalize = chance(0.8);
  const region = pick(REGIONS);
  const service = pick(["sqs", "execute-api", "s3", "dynamodb", "my-svc"]);
  const { q, raw } = randQuery();
  const headers = {};
  headers[caseName("host")] = `${service}.${region}.amazonaws.com`;
  const used = new Set(["host"]);
  for (let i = int(0, 6); i > 0; i--) {
    const name = pick([
      "x-custom-" + str("abcdefghijklmnopqrstuvwxyz", 1, 6), "content-type", "accept",
      "x-amz-meta-" + str("abc", 1, 3), "user-agent", "expect", "proxy-thing",
      "sec-fetch-mode", "x-amzn-trace-id", "cache-control", "content-md5", "if-match",
    ]);
    if (used.has(name)) continue;
    used.add(name);
    let v = str(HV_CHARS, 0, 24);
    if (chance(0.2)) v = v + "\r\n " + str(HV_CHARS, 1, 10); // obsolete fold
    headers[caseName(name)] = v;
  }
  const bodyStr = chance(0.5) ? "" : randBody();
  return {
    kind: "generic", method: pick(["GET", "POST", "PUT", "DELETE", "HEAD", "PATCH"]),
    path: randPath(normalize), query: q, rawQuery: raw, headers, bodyStr,
    region, service, normalize,
  };
}

async function emit(id, r, mode) {
  const creds = randCreds();
  const time_s = randTime();
  const signBody = chance(0.5);
  const expires = int(1, 604800);
  const signer = new SignatureV4({
    credentials: creds, region: r.region, service: r.service, sha256: Sha256,
    uriEscapePath: r.normalize, applyChecksum: signBody,
  });
  const request = {
    method: r.method, protocol: "https:", hostname: r.headers.host ?? "x",
    path: r.path, query: r.query, headers: { ...r.headers },
    ...(r.bodyStr === "" && r.kind === "generic" ? {} : { body: r.bodyStr }),
  };
  const line = {
    id, kind: r.kind, mode, method: r.method, path: r.path, query: r.rawQuery,
    headers: Object.entries(r.headers),
    body_b64: Buffer.from(r.bodyStr, "utf8").toString("base64"),
    region: r.region, service: r.service, time_s, normalize: r.normalize,
    sign_body: signBody, expires,
    akid: creds.accessKeyId, secret: creds.secretAccessKey, token: creds.sessionToken ?? null,
  };
  const signingDate = new Date(time_s * 1000);
  if (mode === "header") {
    const out = await signer.sign(request, { signingDate });
    line.expect = { authorization: out.headers.authorization };
  } else {
    // Keep x-amz-* headers as headers (the C presigner never hoists them).
    const unhoistableHeaders = new Set(
      Object.keys(r.headers).map((h) => h.toLowerCase()).filter((h) => h.startsWith("x-amz-")));
    const out = await signer.presign(request, { signingDate, expiresIn: expires, unhoistableHeaders });
    line.expect = {
      signature: out.query["X-Amz-Signature"],
      signed_headers: out.query["X-Amz-SignedHeaders"],
      credential: out.query["X-Amz-Credential"],
    };
  }
  return JSON.stringify(line);
}

const lines = [];
let id = 0;
for (let i = 0; i < N_SQS; i++) lines.push(await emit(id++, sqsRequest(), "header"));
for (let i = 0; i < N_GENERIC; i++) {
  const r = genericRequest();
  lines.push(await emit(id++, r, chance(0.5) ? "header" : "presign"));
}
const text = lines.join("\n") + "\n";
if (OUT) writeFileSync(OUT, text);
else process.stdout.write(text);
