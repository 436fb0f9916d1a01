// A webhook receiver the way a CRM's partner writes one: Node's own HTTPS
// server (one process, HTTP/1.1 keep-alive), which reads each POST's body,
// checks its Standard Webhooks signature, parses the JSON and answers 200.
// The `crm` scenario runs it as a process of its own, so the receiver's CPU
// (about 100 - 150 us per request) competes for the cores with PostgreSQL and
// the dispatcher, as it does on a shared machine (issue 29).
//
//   node bench/webhook_receiver.mjs CERT.pem KEY.pem [whsec_SECRET]
//
// Protocol with the bench (bench/receiver_process.cpp), over stdout:
//   "listening PORT"             once, when it accepts connections;
//   "h WEBHOOK_ID NANOSECONDS"   per request, the monotonic clock (CLOCK_MONOTONIC,
//                                as the bench's steady_clock) when its body was read;
//   "b REASON"                   per request refused (bad signature, bad JSON), answered 400
//                                and logged to stderr.
// Lines are written once per turn of the event loop. It exits when its stdin closes.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';

const [certFile, keyFile, secret] = process.argv.slice(2);
const key = secret ? Buffer.from(secret.replace(/^whsec_/, ''), 'base64') : null;

let pending = [];
const report = (line) => {
  if (pending.length === 0) setImmediate(flush);
  pending.push(line);
};
function flush() {
  process.stdout.write(pending.join(''));
  pending = [];
}

// Standard Webhooks: v1,base64(HMAC-SHA256(key, id.timestamp.body)), any of a space-separated list.
function signatureProblem(headers, body) {
  if (!key) return null;
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const given = headers['webhook-signature'];
  if (!id || !timestamp || !given) return 'missing webhook headers';
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest();
  for (const part of given.split(' ')) {
    const [version, value] = part.split(',');
    if (version !== 'v1' || !value) continue;
    const bytes = Buffer.from(value, 'base64');
    if (bytes.length === expected.length && timingSafeEqual(bytes, expected)) return null;
  }
  return 'signature mismatch';
}

const server = createServer({ cert: readFileSync(certFile), key: readFileSync(keyFile) }, (req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    const at = process.hrtime.bigint();
    const body = Buffer.concat(chunks);
    let problem = signatureProblem(req.headers, body);
    if (!problem) {
      try {
        JSON.parse(body.toString('utf8'));
      } catch (e) {
        problem = `bad JSON: ${e.message}`;
      }
    }
    if (problem) {
      report(`b ${problem.replace(/\n/g, ' ')}\n`);
      console.error(`refused ${req.headers['webhook-id']}: ${problem}`);
      res.writeHead(400, { 'Content-Type': 'application/json', 'Content-Length': '19' });
      res.end('{"error":"refused"}');
      return;
    }
    report(`h ${req.headers['webhook-id'] || ''} ${at}\n`);
    // A length, as Express's res.json() sends; Node's default would be chunked.
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': '2' });
    res.end('{}');
  });
});
server.keepAliveTimeout = 60_000; // the dispatcher keeps its connections; do not close them under it
server.listen(0, '127.0.0.1', () => process.stdout.write(`listening ${server.address().port}\n`));
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
