/**
 * The maintenance lock's strict rule, checked through real sockets against real processes
 * (test/deployment/cluster.test.ts: the workers of one instance; test/deployment/instances.test.ts: two instances):
 * reads and keyed writes are sent to every process in a loop while the lock is taken and released,
 * and each answer is kept with when its request was sent and when it was answered (the test
 * process's clock), so that "nothing sent after the lock's 200 is served" can be checked.
 */
import assert from 'node:assert/strict';
import type { Knex } from 'knex';
import { assertBooksInvariants } from './invariants';
import { journal } from './posting-fixture';
import { postJson, type HttpResult } from './server-process';

export interface Sent {
  kind: 'read' | 'write';
  port: number;
  /** performance.now() before the request was sent, and when its answer had arrived. */
  sentAt: number;
  answeredAt: number;
  status: number;
  /** Writes: the journal's transaction number, also its Idempotency-Key. */
  number?: string;
}

export interface Exchange {
  sentAt: number;
  answeredAt: number;
  status: number;
  body: any;
}

export async function exchange(send: () => Promise<{ status: number; body: any }>): Promise<Exchange> {
  const sentAt = performance.now();
  const res = await send();
  return { sentAt, answeredAt: performance.now(), status: res.status, body: res.body };
}

/** The read the checks send: page 1 of one AP invoice (a fresh connection). */
export function readProbe(port: number, apiKey: string): Promise<HttpResult> {
  return postJson(port, '/api/v3/ap-invoices/query', { select: ['recordNumber'], page: { pageNumber: 1, pageSize: 1 } }, { 'x-api-key': apiKey });
}

/** The keyed write the checks send: journal `number` under Idempotency-Key `idempotencyKey` (a fresh connection). */
export function postKeyedJournal(port: number, apiKey: string, number: string, idempotencyKey: string): Promise<HttpResult> {
  return postJson(port, '/api/v3/ledger-transactions', journal(number), { 'x-api-key': apiKey, 'Idempotency-Key': idempotencyKey });
}

/** Takes the lock through `port` as `userName`, timed; it must answer 200. */
export async function lockThrough(port: number, userName: string, apiKey: string): Promise<Exchange> {
  const locked = await exchange(() => postJson(port, '/api/v3/utility/lock', { userName }, { 'x-api-key': apiKey }));
  assert.equal(locked.status, 200, JSON.stringify(locked.body));
  return locked;
}

/** Releases the lock through `port` as `userName`, timed; it must answer 200. */
export async function unlockThrough(port: number, userName: string, apiKey: string): Promise<Exchange> {
  const unlocked = await exchange(() => postJson(port, '/api/v3/utility/un-lock', { userName }, { 'x-api-key': apiKey }));
  assert.equal(unlocked.status, 200, JSON.stringify(unlocked.body));
  return unlocked;
}

/** A request refused by the lock: 423 MAINTENANCE_LOCK, Retry-After 60, naming the holder. */
export function assertLockRefusal(res: HttpResult, lockUser: string, message = 'answers 423 while locked'): void {
  assert.equal(res.status, 423, `${message} (got ${res.status})`);
  assert.equal(res.headers['x-error-code'], 'MAINTENANCE_LOCK');
  assert.equal(res.headers['retry-after'], '60');
  assert.equal(res.body.lockUser, lockUser);
}

/** How long a timed lock or un-lock took, whole ms. */
export const tookMs = (e: Exchange): number => Math.round(e.answeredAt - e.sentAt);

/**
 * `concurrency` loops, each sending one request at a time on a fresh connection, taking turns over
 * `ports` (and, behind one port, the workers: fresh connections go round-robin), every other one a
 * keyed journal; the requests take turns over `apiKeys`, so that a rate limit set low for another
 * test is not what is checked here (give enough keys for the traffic to stay under it). `stop` ends
 * them and returns every answer.
 */
export function trafficLoop(options: { ports: number[]; apiKeys: string[]; concurrency: number; tag: string }): { stop(): Promise<Sent[]> } {
  const sent: Sent[] = [];
  let running = true;
  let n = 0;
  let keyTurn = 0;
  const loop = async (lane: number) => {
    for (let i = lane; running; i += 1) {
      const apiKey = options.apiKeys[(keyTurn += 1) % options.apiKeys.length]!;
      const port = options.ports[i % options.ports.length]!;
      const kind: Sent['kind'] = i % 2 === 0 ? 'read' : 'write';
      const number = kind === 'write' ? `${options.tag}-${(n += 1)}` : undefined;
      const sentAt = performance.now();
      let status = 0;
      try {
        const res = kind === 'read' ? await readProbe(port, apiKey) : await postKeyedJournal(port, apiKey, number!, number!);
        status = res.status;
      } catch {
        status = -1; // the connection failed: no answer at all
      }
      sent.push({ kind, port, sentAt, answeredAt: performance.now(), status, ...(number ? { number } : {}) });
    }
  };
  const lanes = Array.from({ length: options.concurrency }, (_, lane) => loop(lane));
  return {
    async stop() {
      running = false;
      await Promise.all(lanes);
      return sent.sort((a, b) => a.sentAt - b.sentAt);
    },
  };
}

export interface WindowReport {
  /** Requests sent while locked (after the lock's 200, answered before the un-lock was sent): all 423. */
  whileLocked: number;
  /** Requests sent after the un-lock's 200: all served. */
  afterUnlock: number;
  /** Served before the lock was sent. */
  before: number;
  /** 200s that arrived after the lock's 200 (requests sent before it, served before it answered, read later by this process). */
  servedArrivingLate: number;
}

/**
 * The strict rule: no answer is 5xx or missing; every request sent after the lock's 200 (and
 * answered before the un-lock was sent) is 423 MAINTENANCE_LOCK; every request sent after the
 * un-lock's 200 is served (200).
 */
export function assertNoWindow(sent: Sent[], lock: Exchange, unlock: Exchange): WindowReport {
  for (const s of sent) assert.ok(s.status === 200 || s.status === 423, `only 200 and 423: ${s.kind} to ${s.port} answered ${s.status} (sent ${Math.round(s.sentAt - lock.sentAt)} ms after the lock was sent)`);
  const whileLocked = sent.filter((s) => s.sentAt > lock.answeredAt && s.answeredAt < unlock.sentAt);
  for (const s of whileLocked) assert.equal(s.status, 423, `${s.kind} to ${s.port} sent ${Math.round(s.sentAt - lock.answeredAt)} ms after the lock's 200 was served`);
  const afterUnlock = sent.filter((s) => s.sentAt > unlock.answeredAt);
  for (const s of afterUnlock) assert.equal(s.status, 200, `${s.kind} to ${s.port} sent ${Math.round(s.sentAt - unlock.answeredAt)} ms after the un-lock's 200 was refused`);
  const before = sent.filter((s) => s.answeredAt < lock.sentAt && s.status === 200).length;
  const servedArrivingLate = sent.filter((s) => s.sentAt < lock.answeredAt && s.answeredAt > lock.answeredAt && s.status === 200).length;
  // The window was exercised: traffic before, during and after.
  assert.ok(before > 0, 'requests served before the lock');
  assert.ok(whileLocked.length >= 4, `requests sent while locked: ${whileLocked.length}`);
  assert.ok(afterUnlock.length >= 4, `requests sent after the un-lock: ${afterUnlock.length}`);
  return { whileLocked: whileLocked.length, afterUnlock: afterUnlock.length, before, servedArrivingLate };
}

/** Every journal answered 200 is posted once; every one answered 423 posted nothing and left no Idempotency-Key claim. */
export async function assertWritesExact(knex: Knex, sent: Sent[]): Promise<void> {
  for (const s of sent) {
    if (s.kind !== 'write') continue;
    const posted = Number((await knex('lgrtrn').where({ trnnum: s.number }).count('* as n').first())!.n);
    const claims = Number((await knex('idmkey').where({ idem_key: s.number }).count('* as n').first())!.n);
    if (s.status === 200) {
      assert.equal(posted, 1, `${s.number} answered 200: posted once`);
    } else {
      assert.equal(posted, 0, `${s.number} answered ${s.status}: nothing posted`);
      assert.equal(claims, 0, `${s.number} answered ${s.status}: its Idempotency-Key left no claim`);
    }
  }
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * One round of the no-window check: the traffic loop runs, the lock is taken through `lockPort`
 * and held, released through `unlockPort`, and the loop runs on; then the strict rule
 * (assertNoWindow), the exact writes (assertWritesExact) and the books' invariants are checked.
 * Returns what happened, for the test's diagnostic.
 */
export async function assertNoWindowRound(options: {
  knex: Knex;
  adminKey: string;
  lockPort: number;
  unlockPort: number;
  traffic: { ports: number[]; apiKeys: string[]; tag: string };
}): Promise<string> {
  const traffic = trafficLoop({ ...options.traffic, concurrency: 6 });
  let sent: Sent[];
  let locked: Exchange;
  let unlocked: Exchange;
  try {
    await sleep(600);
    locked = await lockThrough(options.lockPort, 'window-ops', options.adminKey);
    await sleep(400);
    unlocked = await unlockThrough(options.unlockPort, 'window-ops', options.adminKey);
    await sleep(400);
  } finally {
    // A failed lock or un-lock must not leave the loop running.
    sent = await traffic.stop();
  }
  const report = assertNoWindow(sent, locked, unlocked);
  await assertWritesExact(options.knex, sent);
  await assertBooksInvariants(options.knex);
  return (
    `${sent.length} requests: ${report.before} served before the lock, ${report.whileLocked} sent while locked (all 423), ${report.afterUnlock} after the un-lock (all served); ` +
    `${report.servedArrivingLate} 200s sent before the lock's 200 arrived after it; lock ${tookMs(locked)} ms, un-lock ${tookMs(unlocked)} ms under load`
  );
}

/** The test's own connections to PostgreSQL carry this application_name; the service's do not. */
export const TEST_APPLICATION_NAME = 'ais-test';

/** A PostgreSQL URL whose connections carry TEST_APPLICATION_NAME (other URLs unchanged). */
export function testConnectionUrl(url: string): string {
  if (!/^postgres(ql)?:/.test(url)) return url;
  const u = new URL(url);
  u.searchParams.set('application_name', TEST_APPLICATION_NAME);
  return u.toString();
}

/** PostgreSQL: the database's time now (to compare with backend_start). */
export async function databaseNow(knex: Knex): Promise<Date> {
  const rows = (await knex.raw('select now() as now')).rows as Array<{ now: Date }>;
  return rows[0]!.now;
}

/** PostgreSQL: connections to this database, other than the test's own, opened before `since`. */
export async function serviceConnectionsOpenedBefore(knex: Knex, since: Date): Promise<number> {
  const rows = (
    await knex.raw(`select count(*)::int as n from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid() and coalesce(application_name, '') <> ? and backend_start < ?`, [
      TEST_APPLICATION_NAME,
      since,
    ])
  ).rows as Array<{ n: number }>;
  return rows[0]!.n;
}
