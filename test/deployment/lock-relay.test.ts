/**
 * The maintenance lock's relay between cluster workers (src/cluster.ts), without processes: the
 * primary's hub tells every other worker and answers the origin once each has applied the change
 * or exited; the worker's side applies what it is told and answers, and gives up after its bound.
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { LockRelayHub, workerLockRelay } from '../../src/cluster';

type Message = Record<string, unknown>;

function fakeWorkers(indexes: number[]) {
  const sent = new Map<number, Message[]>(indexes.map((i) => [i, []]));
  const workers = new Map(indexes.map((i) => [i, { send: (m: Message) => void sent.get(i)!.push(m) }]));
  return { workers, sent };
}

test('the hub relays a change to every other worker and answers the origin once all have applied it', () => {
  const { workers, sent } = fakeWorkers([1, 2, 3]);
  const hub = new LockRelayHub(() => workers as never);
  const target = { locked: true as const, id: 'L1', holder: { userName: 'ops', apiKeyId: 'k', lockedAt: '2026-11-22T10:00:00.000Z' } };
  hub.changed(1, 7, target);
  assert.deepEqual(sent.get(1), [], 'not to the origin');
  for (const i of [2, 3]) assert.deepEqual(sent.get(i), [{ type: 'lock-refresh', id: '1:7', target }]);
  hub.refreshed(2, '1:7');
  assert.deepEqual(sent.get(1), [], 'one sibling still applying it');
  hub.refreshed(3, '1:7');
  assert.deepEqual(sent.get(1), [{ type: 'lock-relayed', id: 7 }]);
});

test('a sibling that exits is not waited for; a worker alone is answered at once', () => {
  const { workers, sent } = fakeWorkers([1, 2]);
  const hub = new LockRelayHub(() => workers as never);
  hub.changed(2, 1);
  assert.deepEqual(sent.get(1), [{ type: 'lock-refresh', id: '2:1' }]);
  workers.delete(1);
  hub.exited(1);
  assert.deepEqual(sent.get(2), [{ type: 'lock-relayed', id: 1 }]);
  hub.changed(2, 2);
  assert.deepEqual(sent.get(2)!.at(-1), { type: 'lock-relayed', id: 2 });
});

test("the worker's side: applies what a sibling relays before answering; waits for the primary's answer up to its bound", async () => {
  const channel = Object.assign(new EventEmitter(), { sent: [] as Message[], send(m: Message) { channel.sent.push(m); return true; } });
  const relay = workerLockRelay(channel as never);
  // Not serving yet: answered at once.
  channel.emit('message', { type: 'lock-refresh', id: '1:1' });
  assert.deepEqual(channel.sent.at(-1), { type: 'lock-refreshed', id: '1:1' });
  const applied: unknown[] = [];
  let release!: () => void;
  relay.serve((target) => {
    applied.push(target);
    return new Promise<void>((r) => (release = r));
  });
  channel.emit('message', { type: 'lock-refresh', id: '1:2', target: { locked: false } });
  assert.deepEqual(applied, [{ locked: false }]);
  assert.equal(channel.sent.length, 1, 'not answered before it has applied the change');
  release();
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(channel.sent.at(-1), { type: 'lock-refreshed', id: '1:2' });

  const answered = relay.changed(1000);
  const asked = channel.sent.at(-1) as { type: string; id: number };
  assert.equal(asked.type, 'lock-changed');
  channel.emit('message', { type: 'lock-relayed', id: asked.id });
  assert.equal(await answered, true);
  assert.equal(await relay.changed(30), false, 'no answer within the bound');
});
