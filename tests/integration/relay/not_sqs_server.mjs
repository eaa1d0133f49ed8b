// SPDX-License-Identifier: Apache-2.0
// Servers that are not the SQS JSON API, behind TLS on 127.0.0.1, for
// test_relay_protocol.c: each answers every request the way a real server
// does when a client speaks SQS's JSON protocol (awsJson1_0, X-Amz-Target)
// to it.
//
//   node not_sqs_server.mjs PKI_DIR MODE
//   env OB_INTEROP_DIR   folder with node_modules (default ../../interop)
//
// MODE, and the real behaviour it is:
//   sqslite         the real sqslite 2.1.1 (npm, pinned in tests/interop),
//                   which speaks only SQS's query protocol, started here on
//                   plain HTTP and reached through this TLS terminator
//                   unchanged. Its fastify 3 has no parser for
//                   application/x-amz-json-1.0: HTTP 415 with
//                   {"statusCode":415,"code":"FST_ERR_CTP_INVALID_MEDIA_TYPE",
//                   "error":"Unsupported Media Type",...} (measured).
//   elasticmq-404   ElasticMQ before 0.14.7, query protocol only: a request
//                   with no Action form field (a JSON request has none) got
//                   akka-http's 404 "The requested resource could not be
//                   found." as text/plain (softwaremill/elasticmq#171).
//   elasticmq-xml   ElasticMQ 0.14.7 to 1.3.x, query protocol only: 400
//                   text/xml <ErrorResponse><Error><Type>Sender</Type><Code>
//                   MissingAction</Code>... (softwaremill/elasticmq PR #173,
//                   rest-sqs SQSException.toXml; #812 shows the 400 text/xml
//                   a JSON request got from 1.3.x).
//   unknown-op      a JSON-protocol emulator that lacks the operation, as
//                   floci answers an unknown X-Amz-Target: 404,
//                   x-amzn-query-error: UnknownOperationException;Sender,
//                   {"__type":"UnknownOperationException","message":
//                   "Unknown operation: AmazonSQS.<Op>"} (floci-io/floci
//                   JsonErrorResponseUtils.createUnknownOperationErrorResponse,
//                   issue #3908 / PR #3925).
//   invalid-action  fauxqs 1.9.2 for an operation it does not implement
//                   (dist/sqs/sqsRouter.js): 400 application/json
//                   {"__type":"com.amazonaws.sqs#InvalidAction","message":
//                   "Unknown action: <Op>"}, no x-amzn-query-error.
//   portal          a captive portal or filtering proxy that the TLS client
//                   trusts (the test CA): 200 text/html, a login page.
//
// stdout: PORT <port> once listening; REQ <x-amz-target> <status> per
// request answered (the C test counts them). Node core modules, plus
// sqslite for its mode.
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const interop = process.env.OB_INTEROP_DIR || path.resolve(here, '../../interop');
const [pkiDir, mode] = process.argv.slice(2);
const log = (s) => process.stdout.write(s + '\n');
const modes = ['sqslite', 'elasticmq-404', 'elasticmq-xml', 'unknown-op',
               'invalid-action', 'portal'];
if (!pkiDir || !modes.includes(mode)) {
  console.error(`usage: not_sqs_server.mjs PKI_DIR ${modes.join('|')}`);
  process.exit(2);
}

// sqslite itself, plain HTTP on loopback (fastify's own logger off).
let sqslitePort = 0;
let sqsliteApp = null;
if (mode === 'sqslite') {
  const require = createRequire(path.join(interop, 'package.json'));
  process.removeAllListeners('warning');  // fastify-formbody's deprecation note
  sqsliteApp = require('sqslite')({ logger: false });
  await sqsliteApp.listen({ host: '127.0.0.1', port: 0 });
  sqslitePort = sqsliteApp.server.address().port;
}

function answer(res, target, status, headers, body) {
  log(`REQ ${target} ${status}`);
  res.writeHead(status, { 'content-length': Buffer.byteLength(body), ...headers });
  res.end(body);
}

function forward(req, body, res, target) {
  const up = http.request({ host: '127.0.0.1', port: sqslitePort, method: req.method,
                            path: req.url, headers: req.headers }, (ur) => {
    const chunks = [];
    ur.on('data', (c) => chunks.push(c));
    ur.on('end', () => {
      const h = { ...ur.headers };
      delete h['content-length'];
      delete h['transfer-encoding'];
      delete h.connection;
      delete h['keep-alive'];
      answer(res, target, ur.statusCode, h, Buffer.concat(chunks));
    });
  });
  up.on('error', (e) => answer(res, target, 502, { 'content-type': 'text/plain' },
                               `sqslite unreachable: ${e.message}`));
  up.end(body);
}

const tls = https.createServer({
  key: fs.readFileSync(path.join(pkiDir, 'good.key')),
  cert: fs.readFileSync(path.join(pkiDir, 'good.crt')),
}, (req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    const target = req.headers['x-amz-target'] || '-';
    const op = target.replace(/^AmazonSQS\./, '');
    switch (mode) {
      case 'sqslite':
        return forward(req, body, res, target);
      case 'elasticmq-404':
        return answer(res, target, 404, { 'content-type': 'text/plain; charset=UTF-8',
                                          server: 'akka-http/10.0.10' },
                      'The requested resource could not be found.');
      case 'elasticmq-xml':
        return answer(res, target, 400, { 'content-type': 'text/xml; charset=UTF-8',
                                          server: 'akka-http/10.2.10' },
                      '<ErrorResponse xmlns="http://queue.amazonaws.com/doc/2012-11-05/">' +
                      '<Error><Type>Sender</Type><Code>MissingAction</Code>' +
                      '<Message>MissingAction; see the SQS docs.</Message><Detail/>' +
                      '</Error><RequestId>00000000-0000-0000-0000-000000000000</RequestId>' +
                      '</ErrorResponse>');
      case 'unknown-op':
        return answer(res, target, 404, { 'content-type': 'application/x-amz-json-1.0',
                                          'x-amzn-query-error': 'UnknownOperationException;Sender' },
                      JSON.stringify({ __type: 'UnknownOperationException',
                                       message: `Unknown operation: ${target}` }));
      case 'invalid-action':
        return answer(res, target, 400, { 'content-type': 'application/json; charset=utf-8' },
                      JSON.stringify({ __type: 'com.amazonaws.sqs#InvalidAction',
                                       message: `Unknown action: ${op}` }));
      case 'portal':
        return answer(res, target, 200, { 'content-type': 'text/html; charset=utf-8' },
                      '<!DOCTYPE html><html><head><title>Guest Wi-Fi</title></head>' +
                      '<body><form action="/login">Accept the terms to continue' +
                      '</form></body></html>');
    }
  });
});
tls.listen(0, '127.0.0.1', () => log(`PORT ${tls.address().port}`));

const stop = () => {
  tls.close();
  if (sqsliteApp) sqsliteApp.close();
  setTimeout(() => process.exit(0), 200).unref();
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
