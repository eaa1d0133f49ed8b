// SPDX-License-Identifier: Apache-2.0
// What ce_send.mjs and ce_check.mjs share: their options and the AWS SDK
// client pointed at the test server (the endpoint as given, HTTPS trusting
// one CA file, optionally one host name resolved to a fixed address).
import dns from 'node:dns';
import fs from 'node:fs';
import https from 'node:https';

import { SQSClient } from '@aws-sdk/client-sqs';
import { NodeHttpHandler } from '@smithy/node-http-handler';

// spec: option name -> true (needs a value, required), false (needs a value,
// optional) or 'flag' (no value). Returns name -> value (flags: true).
// Exits 2 with a usage line on anything else.
export function parseArgs(script, argv, spec) {
  const out = {};
  const usage = () => {
    const parts = Object.entries(spec).map(([k, v]) => (v === 'flag' ? `[--${k}]`
      : v ? `--${k} V` : `[--${k} V]`));
    console.error(`usage: ${script} ${parts.join(' ')}`);
    process.exit(2);
  };
  for (let i = 0; i < argv.length; i++) {
    const m = /^--([a-z-]+)$/.exec(argv[i]);
    if (!m || !(m[1] in spec)) usage();
    if (spec[m[1]] === 'flag') {
      out[m[1]] = true;
    } else {
      if (i + 1 >= argv.length) usage();
      out[m[1]] = argv[++i];
    }
  }
  for (const [k, v] of Object.entries(spec)) if (v === true && out[k] === undefined) usage();
  return out;
}

// --resolve HOST=IP: an https.Agent lookup that answers IP for HOST and
// asks the system for every other name.
function lookupFor(resolve) {
  if (!resolve) return undefined;
  const m = /^([^=]+)=(.+)$/.exec(resolve);
  if (!m) {
    console.error(`bad --resolve ${resolve} (HOST=IP)`);
    process.exit(2);
  }
  const [, host, ip] = m;
  const family = ip.includes(':') ? 6 : 4;
  return (hostname, options, cb) => {
    if (typeof options === 'function') {
      cb = options;
      options = {};
    }
    if (hostname.toLowerCase() !== host.toLowerCase()) {
      dns.lookup(hostname, options, cb);
    } else if (options && options.all) {
      cb(null, [{ address: ip, family }]);
    } else {
      cb(null, ip, family);
    }
  };
}

export function sqsClient(args) {
  const agent = new https.Agent({
    keepAlive: true,
    ca: fs.readFileSync(args.ca),
    lookup: lookupFor(args.resolve),
  });
  const client = new SQSClient({
    endpoint: args.endpoint,
    region: args.region || process.env.AWS_REGION || 'us-east-1',
    useQueueUrlAsEndpoint: false,
    requestHandler: new NodeHttpHandler({ httpsAgent: agent }),
    maxAttempts: 5,
  });
  return {
    client,
    close() {
      client.destroy();
      agent.destroy();
    },
  };
}
