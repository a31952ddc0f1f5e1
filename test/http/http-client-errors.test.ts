/**
 * Requests rejected by Node's HTTP parser (before Express) are problem documents too, with
 * X-Error-Code, X-Correlation-Id, the security headers and a request log line: malformed request
 * 400, headers over 16 KiB 431.
 */
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { startTestApp, type TestApp } from '../support/app';
import { answerClientErrors } from '../../src/http/client-error';
import { PROBLEM_CODES, problemTypeUri } from '../../src/errors/registry';
import { UUID_RE } from '../support/http';
import { serveOnLoopback, type LoopbackServer } from '../support/net';

let t: TestApp;
let served: LoopbackServer;
let port: number;

before(async () => {
  t = await startTestApp();
  const server = http.createServer(t.app);
  answerClientErrors(server, t.services.logger);
  served = await serveOnLoopback(server);
  port = served.port;
});
after(async () => {
  await served.close();
  await t.close();
});

async function raw(request: string): Promise<{ status: number; headers: Record<string, string>; body: any }> {
  const socket = net.connect(port, '127.0.0.1');
  let data = '';
  socket.setEncoding('utf8').on('data', (d: string) => (data += d));
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  socket.write(request);
  await new Promise<void>((resolve) => socket.once('close', () => resolve()));
  const [head = '', body = ''] = data.split('\r\n\r\n');
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) headers[line.slice(0, line.indexOf(':')).toLowerCase()] = line.slice(line.indexOf(':') + 1).trim();
  return { status: Number(statusLine.split(' ')[1]), headers, body: JSON.parse(body) };
}

function assertParserProblem(res: Awaited<ReturnType<typeof raw>>, code: 'MALFORMED_REQUEST' | 'HEADERS_TOO_LARGE', instance: string) {
  assert.equal(res.status, PROBLEM_CODES[code].status);
  assert.match(res.headers['content-type']!, /^application\/problem\+json/);
  assert.equal(res.headers['x-error-code'], code);
  assert.match(res.headers['x-correlation-id']!, UUID_RE);
  assert.equal(res.body.type, problemTypeUri(code));
  assert.equal(res.body.status, res.status);
  assert.equal(res.body.correlationId, res.headers['x-correlation-id']);
  assert.equal(res.body.instance, instance);
  // The security headers of every answer (src/http/middleware/security-headers.ts), before Express too.
  assert.equal(res.headers['cache-control'], 'no-store');
  assert.equal(res.headers['x-content-type-options'], 'nosniff');
  assert.equal(res.headers['referrer-policy'], 'no-referrer');
  const line = t.logs.find((l) => l.msg === 'request' && l.correlationId === res.body.correlationId);
  assert.equal(line?.errorCode, code, 'logged as a request');
}

test('a malformed header line is 400 MALFORMED_REQUEST as a problem document', async () => {
  const res = await raw('POST /api/v3/utility/ping HTTP/1.1\r\nHost: x\r\nthis is not a header\r\n\r\n');
  assertParserProblem(res, 'MALFORMED_REQUEST', '/api/v3/utility/ping');
});

test('a request line that is not HTTP is 400 MALFORMED_REQUEST', async () => {
  const res = await raw('HELLO THERE\r\n\r\n');
  assertParserProblem(res, 'MALFORMED_REQUEST', '/');
});

test('headers over 16 KiB are 431 HEADERS_TOO_LARGE', async () => {
  const res = await raw(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
  assertParserProblem(res, 'HEADERS_TOO_LARGE', '/healthz');
});

test('the server still answers normally afterwards', async () => {
  const res = await fetch(`http://127.0.0.1:${port}/healthz`);
  assert.equal(res.status, 200);
});
