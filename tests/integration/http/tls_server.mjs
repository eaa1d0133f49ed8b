// SPDX-License-Identifier: Apache-2.0
// HTTPS servers for the HTTP client's TLS tests: one listener per
// certificate, all on 127.0.0.1 with a kernel-chosen port.
//
//   node tls_server.mjs PKI_DIR NAME...      (NAME.crt / NAME.key in PKI_DIR)
//
// stdout, one line per event (the test reads it):
//   PORT <name> <port>            listening
//   SECURE <name>                 a TLS handshake completed
//   TLSERR <name> <code>          a handshake failed on the server side
//   REQ <name> <method> <url> <n> a request with an n-byte body was served
//
// Routes: /stats -> {"secure":N,"requests":M} for that listener; anything
// else -> "hello <method> <url> <n>". Node core modules only.
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';

const [dir, ...names] = process.argv.slice(2);
if (!dir || names.length === 0) {
  console.error('usage: tls_server.mjs PKI_DIR NAME...');
  process.exit(2);
}

for (const name of names) {
  const stats = { secure: 0, requests: 0 };
  const srv = https.createServer(
    {
      cert: fs.readFileSync(path.join(dir, `${name}.crt`)),
      key: fs.readFileSync(path.join(dir, `${name}.key`)),
      keepAliveTimeout: 60000,
    },
    (req, res) => {
      let n = 0;
      req.on('data', (c) => { n += c.length; });
      req.on('end', () => {
        stats.requests++;
        console.log(`REQ ${name} ${req.method} ${req.url} ${n}`);
        const body = req.url === '/stats'
          ? JSON.stringify(stats)
          : `hello ${req.method} ${req.url} ${n}`;
        res.writeHead(200, {
          'content-type': 'text/plain',
          'content-length': Buffer.byteLength(body),
        });
        res.end(body);
      });
    });
  srv.on('secureConnection', () => {
    stats.secure++;
    console.log(`SECURE ${name}`);
  });
  srv.on('tlsClientError', (err) => {
    console.log(`TLSERR ${name} ${err.code || err.message}`);
  });
  srv.listen(0, '127.0.0.1', () => {
    console.log(`PORT ${name} ${srv.address().port}`);
  });
}

process.on('SIGTERM', () => process.exit(0));
process.on('SIGINT', () => process.exit(0));
