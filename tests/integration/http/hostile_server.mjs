// SPDX-License-Identifier: Apache-2.0
// A scripted HTTP/1.1 server, raw on node:net, for the client's hostile
// response tests. One mode per case, chosen by the request path:
//   GET /<mode>[?...]   (see MODES below)
// Listens on 127.0.0.1 with a kernel-chosen port.
//
//   node hostile_server.mjs
//
// stdout, one line per event:
//   PORT <port>
//   CONN <n>                  the n-th TCP connection was accepted
//   REQ <conn> <method> <path> <bodylen>
// /stats answers {"connections":N,"requests":M}. Node core modules only.
import net from 'node:net';

let connections = 0;
let requests = 0;

const ok = (body = 'ok', extra = '') =>
  `HTTP/1.1 200 OK\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extra}\r\n${body}`;

function endless(sock, first, chunkFn) {
  // Write until the client goes away; never buffer more than one chunk.
  sock.write(first);
  const pump = () => {
    while (!sock.destroyed) {
      if (!sock.write(chunkFn())) {
        sock.once('drain', pump);
        return;
      }
    }
  };
  pump();
}

const big = Buffer.alloc(64 * 1024, 0x61);

const MODES = {
  ok: (s) => s.write(ok()),
  echo: (s, r) => s.write(ok(`${r.method} ${r.bodyLen}`)),
  chunked: (s) => s.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n' +
    '5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n'),
  'huge-cl': (s) => s.write('HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\nok'),
  'big-cl': (s) => s.write('HTTP/1.1 200 OK\r\nContent-Length: 1099511627776\r\n\r\nok'),
  'neg-cl': (s) => s.write('HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\nok'),
  'dup-cl': (s) => s.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nokk'),
  'dup-cl-same': (s) => s.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok'),
  'cl-te': (s) => s.write('HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n'),
  'bad-chunk': (s) => s.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nok\r\n0\r\n\r\n'),
  'huge-chunk': (s) => s.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffffffff\r\nok\r\n0\r\n\r\n'),
  'neg-chunk': (s) => s.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n'),
  'long-header': (s) => s.write(`HTTP/1.1 200 OK\r\nX-Long: ${'a'.repeat(64 * 1024)}\r\nContent-Length: 2\r\n\r\nok`),
  'many-headers': (s) => {
    const parts = ['HTTP/1.1 200 OK\r\n'];
    for (let i = 0; i < 100000; i++) parts.push(`X-H${i}: v\r\n`);
    parts.push('Content-Length: 2\r\n\r\nok');
    s.write(parts.join(''));
  },
  'endless-body': (s) => endless(s, 'HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n', () => big),
  'endless-chunked': (s) => endless(s, 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n',
    () => Buffer.concat([Buffer.from('10000\r\n'), big, Buffer.from('\r\n')])),
  slow: (s) => {
    const msg = Buffer.from(ok('x'.repeat(100)));
    let i = 0;
    const t = setInterval(() => {
      if (s.destroyed || i >= msg.length) { clearInterval(t); return; }
      s.write(msg.subarray(i, i + 1));
      i++;
    }, 1000);
    s.on('close', () => clearInterval(t));
  },
  http10: (s) => { s.end('HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nbody until close'); },
  'early-close': (s) => { s.end('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc'); },
  'partial-header': (s) => { s.end('HTTP/1.1 200 OK\r\nContent-Le'); },
  'close-now': (s) => { s.end(); },
  reset: (s) => { s.resetAndDestroy(); },
  continue: (s) => s.write('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n' + ok()),
  'many-continue': (s) => s.write('HTTP/1.1 100 Continue\r\n\r\n'.repeat(50) + ok()),
  switching: (s) => s.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n'),
  garbage: (s) => s.write('HELLO WORLD\r\n\r\n'),
  extra: (s) => s.write(ok() + 'JUNK AFTER THE RESPONSE'),
  'close-hdr': (s) => s.write(ok('ok', 'Connection: close\r\n')),
  // Answer, then drop the next request on this connection without a byte:
  // the "server closed the idle keep-alive connection" race, made certain.
  'drop-next': (s) => { s.dropNext = true; s.write(ok()); },
  stats: (s) => s.write(ok(JSON.stringify({ connections, requests }))),
};

const server = net.createServer((sock) => {
  const id = ++connections;
  console.log(`CONN ${id}`);
  let buf = Buffer.alloc(0);
  sock.on('error', () => {});
  sock.on('data', (d) => {
    buf = Buffer.concat([buf, d]);
    for (;;) {
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = buf.subarray(0, end).toString('latin1');
      const [line, ...hl] = head.split('\r\n');
      const [method, target] = line.split(' ');
      let len = 0;
      for (const h of hl) {
        const m = /^content-length:\s*(\d+)/i.exec(h);
        if (m) len = Number(m[1]);
      }
      if (buf.length < end + 4 + len) return;
      buf = buf.subarray(end + 4 + len);
      requests++;
      const p = (target || '/').split('?')[0];
      console.log(`REQ ${id} ${method} ${p} ${len}`);
      if (sock.dropNext) { sock.destroy(); return; }
      const mode = MODES[p.slice(1)];
      if (!mode) {
        sock.write('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n');
        continue;
      }
      mode(sock, { method, bodyLen: len });
    }
  });
});

server.listen(0, '127.0.0.1', () => {
  console.log(`PORT ${server.address().port}`);
});
process.on('SIGTERM', () => process.exit(0));
process.on('SIGINT', () => process.exit(0));
