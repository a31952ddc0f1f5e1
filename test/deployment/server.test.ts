/**
 * The process: startServer on a free port, `tsx src/main.ts` spawned as helpers and operators run
 * it (PORT=0 logs the chosen port in the `listening` line, the printed curl works, DEMO_API_KEY,
 * configuration errors exit 1), SIGTERM drains in-flight requests and exits 0, and the built
 * server (`npm start` = node dist/src/main.js) finds openapi.yaml and generated/.
 */
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { loadConfig } from '../../src/config';
import { startServer } from '../../src/server';
import { UUID_RE } from '../support/http';
import { OPERATIONS } from '../../generated/operations';

const ROOT = path.resolve(__dirname, '..', '..');
/**
 * `node --import tsx` rather than the tsx CLI for processes that get signals: the CLI relays a
 * signal to its child and SIGKILLs it when the child has not acknowledged within 30 ms, which a
 * child busy compiling the validator at boot cannot do. The others use it too: one Node process
 * a run instead of the CLI's two.
 */
const NODE_TSX = ['--import', 'tsx'];
let dir: string;

before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'server-test-'));
});
after(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

function dbUrl(name: string): string {
  return `sqlite://${path.join(dir, `${name}.sqlite`)}`;
}

interface Spawned {
  child: ChildProcessWithoutNullStreams;
  lines: Array<Record<string, any>>;
  stderr: () => string;
  port: Promise<number>;
  exit: Promise<number | null>;
}

/** Spawns a server process; resolves `port` from its `listening` log line. */
function spawnServer(command: string, args: string[], env: Record<string, string>): Spawned {
  const child = spawn(command, args, {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: 'info', SEED_ON_START: 'false', ...env },
  });
  const lines: Array<Record<string, any>> = [];
  let err = '';
  let buffer = '';
  let resolvePort!: (port: number) => void;
  let rejectPort!: (e: Error) => void;
  const port = new Promise<number>((resolve, reject) => {
    resolvePort = resolve;
    rejectPort = reject;
  });
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    buffer += chunk;
    let nl: number;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      if (!line.trim()) continue;
      let parsed: Record<string, any>;
      try {
        parsed = JSON.parse(line);
      } catch {
        rejectPort(new Error(`stdout line is not JSON: ${line}`));
        continue;
      }
      lines.push(parsed);
      if (parsed.msg === 'listening') resolvePort(parsed.port);
    }
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  void exit.then((code) => rejectPort(new Error(`server exited (${code}) before listening: ${err}`)));
  return { child, lines, stderr: () => err, port, exit };
}

async function waitFor(predicate: () => boolean, ms = 30_000): Promise<void> {
  const until = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > until) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 25));
  }
}

test('startServer: free port, healthz, a created admin key on the first start of an empty embedded database, close', async () => {
  const logs: Array<Record<string, any>> = [];
  const logger = pino({ level: 'info' }, new Writable({ write: (c, _e, cb) => (logs.push(...String(c).trim().split('\n').map((l) => JSON.parse(l))), cb()) }));
  const config = { ...loadConfig({ DATABASE_URL: dbUrl('direct'), PORT: '0', SEED_ON_START: 'false' }) };
  const running = await startServer(config, { logger, banner: false, host: '127.0.0.1' });
  try {
    assert.ok(running.port > 0);
    const listening = logs.find((l) => l.msg === 'listening');
    assert.equal(listening?.port, running.port);
    assert.match(running.boot.createdKey ?? '', UUID_RE, 'a key was created for the empty database');
    assert.ok(!JSON.stringify(logs).includes(running.boot.createdKey!), 'the created key is not logged');
    const health = await fetch(`http://127.0.0.1:${running.port}/healthz`);
    assert.equal(health.status, 200);
    await running.ready;
    // Default: no operation's validator is compiled ahead of its first request (CONTRACT_PRECOMPILE off).
    assert.ok(logs.some((l) => l.msg === 'contract validator prepared' && l.operations > 0));
    assert.ok(!logs.some((l) => l.msg === 'contract validator compiled'), 'nothing precompiled by default');
    assert.equal((await fetch(`http://127.0.0.1:${running.port}/readyz`)).status, 200);
    const ping = await fetch(`http://127.0.0.1:${running.port}/api/v3/utility/ping`, { method: 'POST', headers: { 'x-api-key': running.boot.createdKey! } });
    assert.equal(ping.status, 200);
  } finally {
    await running.close();
  }
  assert.ok(logs.some((l) => l.msg === 'stopped'));
  // A second start of the same database creates no further key.
  const again = await startServer(config, { logger, banner: false, host: '127.0.0.1' });
  try {
    assert.equal(again.boot.createdKey, undefined);
    assert.equal(await again.services.keys.count(), 1);
  } finally {
    await again.close();
  }
});

test('CONTRACT_PRECOMPILE=true: every operation\'s validator is compiled once the server is idle after start', async () => {
  const logs: Array<Record<string, any>> = [];
  const logger = pino({ level: 'info' }, new Writable({ write: (c, _e, cb) => (logs.push(...String(c).trim().split('\n').map((l) => JSON.parse(l))), cb()) }));
  const config = loadConfig({ DATABASE_URL: dbUrl('precompile'), PORT: '0', SEED_ON_START: 'false', CONTRACT_PRECOMPILE: 'true' });
  const running = await startServer(config, { logger, banner: false, host: '127.0.0.1' });
  try {
    await running.ready;
    const compiled = logs.find((l) => l.msg === 'contract validator compiled');
    assert.equal(compiled?.operations, OPERATIONS.length, 'every operation compiled');
    assert.equal((await fetch(`http://127.0.0.1:${running.port}/readyz`)).status, 200);
  } finally {
    await running.close();
  }
});

test('node --import tsx src/main.ts with PORT=0: logs the port, prints a curl command that works, stops on SIGTERM with exit 0', async () => {
  const server = spawnServer(process.execPath, [...NODE_TSX, 'src/main.ts'], { PORT: '0', DATABASE_URL: dbUrl('spawned') });
  try {
    const port = await server.port;
    assert.ok(port > 0);
    await waitFor(() => /curl /.test(server.stderr()));
    const curl = /curl [^\n]+/.exec(server.stderr())![0];
    assert.match(curl, new RegExp(`http://localhost:${port}/api/v3/utility/ping`));
    const key = /x-api-key: ([0-9a-f-]{36})/.exec(curl)?.[1];
    assert.match(key ?? '', UUID_RE, 'the curl command carries the created key');
    assert.ok(server.stderr().includes(`    ${key}`), 'the created key is printed on its own');
    const res = spawnSync('sh', ['-c', `${curl} -w '\\n%{http_code}'`], { encoding: 'utf8', timeout: 30_000 });
    const [body, code] = [res.stdout.slice(0, res.stdout.lastIndexOf('\n')), res.stdout.slice(res.stdout.lastIndexOf('\n') + 1)];
    assert.equal(code, '200', `${curl}\n${res.stdout}${res.stderr}`);
    assert.equal(JSON.parse(body).status, 'ok');
    assert.ok(!server.lines.some((l) => JSON.stringify(l).includes(key!)), 'the key never reaches the JSON log');
  } finally {
    server.child.kill('SIGTERM');
  }
  assert.equal(await server.exit, 0);
  assert.ok(server.lines.some((l) => l.msg === 'stopped'));
});

test('DEMO_API_KEY is made an active admin key; the banner names it by its last 4 characters, never in clear, and its curl works with the key in the shell', async () => {
  const demo = randomUUID();
  const server = spawnServer(process.execPath, [...NODE_TSX, 'src/main.ts'], { PORT: '0', DATABASE_URL: dbUrl('demo'), DEMO_API_KEY: demo });
  try {
    const port = await server.port;
    await waitFor(() => /curl /.test(server.stderr()));
    assert.ok(!server.stderr().includes(demo), 'the key is not printed');
    assert.ok(!server.lines.some((l) => JSON.stringify(l).includes(demo)), 'nor logged');
    assert.match(server.stderr(), new RegExp(`DEMO_API_KEY \\(the admin key ending in ${demo.slice(-4)}\\)`));
    assert.doesNotMatch(server.stderr(), /was created/);
    const curl = /curl [^\n]+/.exec(server.stderr())![0];
    assert.match(curl, /x-api-key: \$DEMO_API_KEY/);
    const res = spawnSync('sh', ['-c', `${curl} -w '\\n%{http_code}'`], { encoding: 'utf8', timeout: 30_000, env: { ...process.env, DEMO_API_KEY: demo } });
    assert.equal(res.stdout.slice(res.stdout.lastIndexOf('\n') + 1), '200', `${curl}\n${res.stdout}${res.stderr}`);
    const ping = await fetch(`http://127.0.0.1:${port}/api/v3/utility/ping`, { method: 'POST', headers: { 'x-api-key': demo } });
    assert.equal(ping.status, 200);
  } finally {
    server.child.kill('SIGINT');
  }
  assert.equal(await server.exit, 0);
});

test('the created key is printed on the start that created it only: a second start of the same database prints no key', async () => {
  const env = { PORT: '0', DATABASE_URL: dbUrl('second-start') };
  const first = spawnServer(process.execPath, [...NODE_TSX, 'src/main.ts'], env);
  let key: string | undefined;
  try {
    await first.port;
    await waitFor(() => /curl /.test(first.stderr()));
    key = /x-api-key: ([0-9a-f-]{36})/.exec(first.stderr())?.[1];
    assert.match(key ?? '', UUID_RE, 'the first start prints the key it created');
  } finally {
    first.child.kill('SIGTERM');
  }
  assert.equal(await first.exit, 0);
  const second = spawnServer(process.execPath, [...NODE_TSX, 'src/main.ts'], env);
  try {
    await second.port;
    await waitFor(() => /curl /.test(second.stderr()));
    assert.ok(!second.stderr().includes(key!), 'not printed again');
    assert.match(second.stderr(), /x-api-key: \$API_KEY/);
    assert.match(second.stderr(), /npm run keys -- create/, 'it says how to get a key');
  } finally {
    second.child.kill('SIGTERM');
  }
  assert.equal(await second.exit, 0);
});

test('a bad configuration value exits 1 with a message naming the variable', () => {
  for (const [env, pattern] of [
    [{ PORT: 'eighty' }, /PORT must be a whole number/],
    [{ DATABASE_URL: 'mysql://db/books' }, /DATABASE_URL must start with/],
    [{ DEMO_API_KEY: 'not-a-uuid' }, /DEMO_API_KEY must be a UUID/],
    [{ RATE_LIMIT_PER_MINUTE: '-1' }, /RATE_LIMIT_PER_MINUTE/],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'not-a-url' }, /OTEL_EXPORTER_OTLP_ENDPOINT must be an http/],
  ] as const) {
    const res = spawnSync(process.execPath, [...NODE_TSX, 'src/main.ts'], { cwd: ROOT, env: { ...process.env, ...env }, encoding: 'utf8', timeout: 30_000 });
    assert.equal(res.status, 1, JSON.stringify(env));
    assert.match(res.stderr, /^configuration error: /m);
    assert.match(res.stderr, pattern);
    assert.equal(res.stdout, '', 'nothing on stdout');
  }
});

test('WORKERS=2 on a port in use: the start fails at once with exit 1 naming the cause (the primary owns the port)', async () => {
  const holder = net.createServer();
  await new Promise<void>((resolve) => holder.listen(0, resolve));
  const port = (holder.address() as net.AddressInfo).port;
  try {
    const started = Date.now();
    const res = spawnSync(process.execPath, [...NODE_TSX, 'src/main.ts'], {
      cwd: ROOT,
      env: { ...process.env, PORT: String(port), WORKERS: '2', DATABASE_URL: dbUrl('in-use'), SEED_ON_START: 'false' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(res.status, 1, res.stderr);
    assert.match(res.stderr, /^start failed: .*EADDRINUSE/m);
    assert.ok(Date.now() - started < 30_000, 'not after the workers\' grace');
  } finally {
    holder.close();
  }
});

test('SIGTERM drains an in-flight request (it completes), refuses new connections, closes the pool, exits 0', async () => {
  const demo = randomUUID();
  // One process: with WORKERS > 1 the cluster primary keeps accepting until every worker has
  // closed its server (test/deployment/cluster.test.ts covers draining a cluster).
  const server = spawnServer(process.execPath, [...NODE_TSX, 'src/main.ts'], { PORT: '0', DATABASE_URL: dbUrl('drain'), DEMO_API_KEY: demo, SHUTDOWN_GRACE_MS: '20000', WORKERS: '1' });
  const port = await server.port;
  // A request whose body is still arriving when SIGTERM comes.
  const body = JSON.stringify({ userName: 'drain-test', extra: 'x'.repeat(64) });
  const socket = net.connect(port, '127.0.0.1');
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  let response = '';
  socket.setEncoding('utf8').on('data', (d: string) => (response += d));
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.write(
    `POST /api/v3/utility/lock HTTP/1.1\r\nHost: 127.0.0.1\r\nx-api-key: ${demo}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n` + body.slice(0, 10),
  );
  await new Promise((r) => setTimeout(r, 200));
  server.child.kill('SIGTERM');
  await waitFor(() => server.lines.some((l) => l.msg === 'shutting down: draining in-flight requests'));
  // New connections are refused while draining.
  const refused = await fetch(`http://127.0.0.1:${port}/healthz`).then(
    () => false,
    () => true,
  );
  assert.ok(refused, 'no new connections after SIGTERM');
  socket.write(body.slice(10));
  await closed;
  assert.match(response, /^HTTP\/1\.1 400 /, 'the in-flight request got its answer');
  assert.match(response, /connection: close/i);
  assert.match(response, /"field":"extra"/);
  assert.equal(await server.exit, 0);
  const stopped = server.lines.find((l) => l.msg === 'stopped');
  assert.equal(stopped?.outcome, 'drained');
});

test('the built server (npm start = node dist/src/main.js) finds openapi.yaml and generated/', async () => {
  const out = path.join(ROOT, 'dist', `test-build-${process.pid}`);
  try {
    const build = spawnSync(path.join(ROOT, 'node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.build.json', '--outDir', out], { cwd: ROOT, encoding: 'utf8', timeout: 240_000 });
    assert.equal(build.status, 0, build.stdout + build.stderr);
    assert.ok(fs.existsSync(path.join(out, 'src', 'main.js')));
    const server = spawnServer(process.execPath, [path.join(out, 'src', 'main.js')], { PORT: '0', DATABASE_URL: dbUrl('built') });
    try {
      const port = await server.port;
      for (const p of ['/openapi.json', '/docs', '/docs/assets/swagger-ui-bundle.js']) {
        assert.equal((await fetch(`http://127.0.0.1:${port}${p}`)).status, 200, p);
      }
      const key = /x-api-key: ([0-9a-f-]{36})/.exec(await (async () => (await waitFor(() => /curl /.test(server.stderr())), server.stderr()))())?.[1];
      const ping = await fetch(`http://127.0.0.1:${port}/api/v3/utility/ping`, { method: 'POST', headers: { 'x-api-key': key! } });
      assert.equal(ping.status, 200);
      const unknown = await fetch(`http://127.0.0.1:${port}/api/v3/parts/query`, { method: 'POST', headers: { 'x-api-key': key!, 'content-type': 'application/json' }, body: '{"bogus":1}' });
      assert.equal(unknown.status, 400, 'the contract validator runs in the built server');
    } finally {
      server.child.kill('SIGTERM');
    }
    assert.equal(await server.exit, 0);
  } finally {
    fs.rmSync(out, { recursive: true, force: true });
  }
});
