/**
 * The primary's rotation (src/connection-handoff.ts ConnectionDispatcher) on its own, with stand-in
 * workers that record what they are handed: one connection in flight per worker until it answers
 * `taken`; a worker that dies with a connection it had not taken does not lose it (a sibling gets
 * it); a worker removed from the rotation is handed nothing more. The real processes are in
 * cluster-stop.test.ts and cluster-replace.test.ts.
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import type { Worker } from 'node:cluster';
import { ConnectionDispatcher } from '../../src/connection-handoff';

/** A worker stand-in: every connection handed to it, in order. */
function standIn(): { worker: Worker; handed: net.Socket[] } {
  const handed: net.Socket[] = [];
  const worker = {
    send(_message: unknown, socket: net.Socket, _options: unknown, callback: (err: Error | null) => void) {
      handed.push(socket);
      callback(null);
      return true;
    },
  } as unknown as Worker;
  return { worker, handed };
}

const waitFor = async (cond: () => boolean, what: string) => {
  for (let i = 0; i < 200 && !cond(); i += 1) await new Promise((r) => setTimeout(r, 10));
  assert.ok(cond(), what);
};

async function withDispatcher(fn: (d: ConnectionDispatcher, connect: () => net.Socket) => Promise<void>): Promise<void> {
  const d = new ConnectionDispatcher({ port: 0, host: '127.0.0.1', acceptForMs: 100, holdForMs: 10_000 });
  const port = await d.open();
  const clients: net.Socket[] = [];
  const connect = () => {
    const c = net.connect(port, '127.0.0.1');
    c.on('error', () => undefined);
    clients.push(c);
    return c;
  };
  try {
    await fn(d, connect);
  } finally {
    for (const c of clients) c.destroy();
    await d.stop();
  }
}

test('one connection in flight per worker: the next is handed only once the first is taken, round-robin over the free workers', async () => {
  await withDispatcher(async (d, connect) => {
    const a = standIn();
    const b = standIn();
    d.add(1, a.worker);
    d.add(2, b.worker);
    for (let i = 0; i < 3; i += 1) connect();
    await waitFor(() => a.handed.length + b.handed.length === 2, 'two handed, one to each worker');
    assert.deepEqual([a.handed.length, b.handed.length], [1, 1]);
    d.taken(1);
    await waitFor(() => a.handed.length === 2, 'the third goes to the worker that took its connection');
    assert.equal(b.handed.length, 1);
  });
});

test('a worker that dies with a connection it had not taken: a sibling gets that connection', async () => {
  await withDispatcher(async (d, connect) => {
    const a = standIn();
    const b = standIn();
    d.add(1, a.worker);
    connect();
    await waitFor(() => a.handed.length === 1, 'handed to worker 1');
    d.died(1);
    d.add(2, b.worker);
    await waitFor(() => b.handed.length === 1, 'handed on to worker 2');
    assert.equal(b.handed[0], a.handed[0], 'the same connection');
    assert.equal(b.handed[0]!.destroyed, false, 'still open');
  });
});

test('a worker removed from the rotation is handed nothing more; connections wait for another', async () => {
  await withDispatcher(async (d, connect) => {
    const a = standIn();
    const b = standIn();
    d.add(1, a.worker);
    connect();
    await waitFor(() => a.handed.length === 1, 'handed to worker 1');
    d.taken(1);
    d.remove(1);
    connect();
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(a.handed.length, 1, 'nothing more to the removed worker');
    d.add(2, b.worker);
    await waitFor(() => b.handed.length === 1, 'the waiting connection goes to the next worker that serves');
  });
});
