/**
 * Every cross-process guarantee of docs/deployment.md ("Cross-process guarantees"), proven where
 * users run the service: through real sockets to real processes of src/main.ts, in the topology
 * of the test engine (test/deployment/topology.ts):
 *   SQLite      one instance, WORKERS=2;
 *   PostgreSQL  two instances of WORKERS=2 (dp-a, dp-b), one database.
 * The topology starts once for the file; each check uses its own API keys and, after it, the books
 * invariants hold on the database (test/support/invariants.ts). A check that kills or stops a
 * process leaves it so; the next check starts with `top.whole()` (restarts what does not run, waits
 * for replaced workers), so a check added later (the maintenance lock's) finds every process up.
 *
 * Where "one instance" is asked of SQLite (one instance only), one worker plays it: it is a
 * process of its own with its own name (`dp-a/w1`), heartbeat, pool and caches.
 */
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import { startTopology, WORKERS, RATE_PER_MINUTE, DETECTION_INTERVAL_SECONDS, DETECTION_LAG_SECONDS, type DeployedInstance, type Topology } from './topology';
import type { HttpResult } from '../support/server-process';
import { apInvoice, countRows, FX, journal, seedAllocationToJob } from '../support/posting-fixture';
import { assertBooksInvariants, queryRows } from '../support/invariants';
import { assertNoWindow, assertWritesExact, exchange, trafficLoop, type Exchange, type Sent } from '../support/lock-window';
import { startWebhookReceiver, type ReceivedWebhook } from '../support/webhook-receiver';
import { DATA_TOKEN_SQL } from '../../src/storage/data-change-log';
import { ApiKeyRepository } from '../../src/storage/api-keys';
import { loadConfig } from '../../src/config';

const ROOT = path.resolve(__dirname, '..', '..');
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
/** How long a claim of a killed process may block its key (the issue's bound). */
const CLAIM_FREED_WITHIN_MS = 5000;

let top: Topology;
const startedAt = performance.now();

before(async () => {
  top = await startTopology();
});
after(async () => {
  await top?.stop();
  process.stdout.write(`# deployment topology ${top?.name}: ${((performance.now() - startedAt) / 1000).toFixed(1)} s\n`);
});

/** Polls `probe` every `everyMs` until it returns a value other than undefined; fails after `limitMs`. */
async function waitFor<T>(what: string, limitMs: number, probe: () => Promise<T | undefined>, everyMs = 25): Promise<T> {
  const deadline = performance.now() + limitMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (performance.now() > deadline) assert.fail(`${what}: not within ${limitMs} ms`);
    await sleep(everyMs);
  }
}

const postJournal = (inst: DeployedInstance, key: string, number: string, idempotencyKey?: string) =>
  inst.post('/api/v3/ledger-transactions', journal(number), key, idempotencyKey ? { 'Idempotency-Key': idempotencyKey } : {});

/**
 * A request that may meet a killed or stopping process, as a client with a timeout sends it: a
 * socket error, or no answer within `timeoutMs`, becomes status 0. (A connection the cluster
 * primary is handing to a worker at the instant that worker dies is never answered nor closed:
 * Node's round-robin handoff waits for the dead worker's reply. Only the client's timeout ends it.)
 */
function orRefused(p: Promise<HttpResult>, timeoutMs = 10_000): Promise<HttpResult> {
  let timer: NodeJS.Timeout | undefined;
  const gaveUp = new Promise<HttpResult>((resolve) => (timer = setTimeout(() => resolve({ status: 0, headers: {}, body: `no answer within ${timeoutMs} ms` }), timeoutMs)));
  return Promise.race([p.catch((err: Error) => ({ status: 0, headers: {}, body: err.message })), gaveUp]).finally(() => clearTimeout(timer));
}

/** A balanced journal of `lines` lines (the largest documents take the SQLite writer longest). */
function largeJournal(number: string, lines = 400): Record<string, unknown> {
  const debits = Array.from({ length: lines - 1 }, (_, i) => ({ lineNumber: i + 1, ledgerAccount: i % 2 ? FX.accounts.overhead : FX.accounts.directExpense, description: `Line ${i + 1}`, debitAmount: 1.25 }));
  return journal(number, { lines: [...debits, { lineNumber: lines, ledgerAccount: FX.accounts.cash, description: 'Paid', creditAmount: (125 * (lines - 1)) / 100 }] });
}

/** Retries a keyed posting every 100 ms, as a client does after 409 in flight, 429 or a refused socket, until it answers 200. */
async function postUntilDone(inst: DeployedInstance, key: string, number: string, idempotencyKey: string, limitMs: number, body = journal(number)): Promise<HttpResult> {
  const deadline = performance.now() + limitMs;
  for (;;) {
    const last = await orRefused(inst.post('/api/v3/ledger-transactions', body, key, { 'Idempotency-Key': idempotencyKey }));
    if (last.status === 200) return last;
    assert.ok(last.status === 0 || last.status === 429 || (last.status === 409 && last.headers['x-error-code'] === 'IDEMPOTENCY_KEY_IN_FLIGHT'), `${number}: ${last.status} ${JSON.stringify(last.body)}`);
    if (performance.now() > deadline) assert.fail(`${number} does not post through ${inst.id} within ${limitMs} ms (last ${last.status} ${JSON.stringify(last.body)})`);
    await sleep(100);
  }
}

test('idempotency: one key sent to every process at once posts once; the others answer 409 in flight or the same answer replayed', { timeout: 120_000 }, async (t) => {
  await top.whole();
  const key = await top.newKey('dp idempotency');
  // Journals (their number would also catch a repeat) and service inventory items (nothing but the
  // key does: without claims shared by every process, each copy would store an item).
  const tag = `DPF${Date.now() % 100_000}`;
  const docs = Array.from({ length: 12 }, (_, i) =>
    i % 2 === 0
      ? { idem: `dp-fan-${randomUUID()}`, name: `${tag}-${i}`, route: '/api/v3/ledger-transactions', body: journal(`${tag}-${i}`) }
      : { idem: `dp-fan-${randomUUID()}`, name: `${tag}-${i}`, route: '/api/v3/service-inventories', body: { clientNumber: 12, serviceLocation: 9, description: 'Rooftop unit', serialNumber: `${tag}-${i}` } },
  );
  const send = (inst: DeployedInstance, d: (typeof docs)[number]) => inst.post(d.route, d.body, key, { 'Idempotency-Key': d.idem });
  const stored = async (d: (typeof docs)[number]) => {
    if (d.route === '/api/v3/ledger-transactions') return countRows(top.knex, 'lgrtrn', { trnnum: d.name });
    const res = await first.post('/api/v3/service-inventories/query', { filters: { match: { field: 'serialNumber', operator: '=', value: d.name } }, select: ['recordNumber'], page: { pageNumber: 1, pageSize: 1 } }, key);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body.page.totalCount as number;
  };
  const first = top.instances[0]!;
  const targets = top.everyProcess();
  const started = performance.now();
  const answers = await Promise.all(docs.map((d) => Promise.all(targets.map((inst) => send(inst, d)))));
  t.diagnostic(`${docs.length * targets.length} postings at once answered in ${(performance.now() - started).toFixed(0)} ms: ${JSON.stringify(tally(answers.flat().map((r) => `${r.status} ${r.headers['idempotency-status']}`)))}`);
  await Promise.all(
    docs.map(async (d, i) => {
      const copies = answers[i]!;
      const applied = copies.filter((r) => r.status === 200 && r.headers['idempotency-status'] === 'applied');
      assert.equal(applied.length, 1, `${d.name}: exactly one process posts (${copies.map((r) => `${r.status} ${r.headers['idempotency-status']}`)})`);
      for (const [j, r] of copies.entries()) {
        let settled = r;
        if (r.status === 409) {
          assert.equal(r.headers['x-error-code'], 'IDEMPOTENCY_KEY_IN_FLIGHT', JSON.stringify(r.body));
          settled = await waitFor(`${d.name} answered on retry`, 10_000, async () => {
            const again = await send(targets[j]!, d);
            return again.status === 409 ? undefined : again;
          }, 50);
        }
        assert.equal(settled.status, 200, `${d.name} on ${targets[j]!.id}: ${JSON.stringify(settled.body)}`);
        assert.deepEqual(settled.body, applied[0]!.body, `${d.name}: every process answers the one recorded response`);
        if (settled !== applied[0]) assert.equal(settled.headers['idempotency-status'], 'replayed');
      }
      assert.equal(await stored(d), 1, `${d.name} stored exactly once`);
    }),
  );
  await assertBooksInvariants(top.knex);
});

test('dry run: no record number a dry run shows through one process is handed out by another (inventory histories, taken inside the posting transaction)', { timeout: 120_000 }, async (t) => {
  await top.whole();
  const key = await top.newKey('dp dry-run numbers');
  const tag = `DPN${Date.now() % 100_000}`;
  const allocation = (number: string) => seedAllocationToJob(number, [1, 1], { description: 'Dry-run numbers across processes' });
  // Dry runs and postings at once, through every process, alternating.
  const targets = top.everyProcess();
  const sent: Array<Promise<{ dry: boolean; res: HttpResult }>> = [];
  for (let round = 0; round < 3; round += 1) {
    for (const [j, inst] of targets.entries()) {
      const dry = (round + j) % 2 === 0;
      sent.push(inst.post(`/api/v3/inventory-allocations${dry ? '?dryRun=true' : ''}`, allocation(`${tag}-${round}-${j}`), key).then((res) => ({ dry, res })));
    }
  }
  const answers = await Promise.all(sent);
  for (const { res } of answers) assert.equal(res.status, 200, JSON.stringify(res.body));
  const numbersOf = (dry: boolean) => answers.filter((a) => a.dry === dry).flatMap((a) => (a.res.body.inventory as Array<{ recordNumber: number }>).map((h) => h.recordNumber));
  const shown = numbersOf(true);
  const posted = numbersOf(false);
  t.diagnostic(`dry runs showed ${shown.length} history numbers, postings took ${posted.length}`);
  assert.equal(new Set(shown).size, shown.length, 'no two dry runs show the same number');
  assert.equal(new Set(posted).size, posted.length, 'no two postings take the same number');
  assert.deepEqual(posted.filter((n) => shown.includes(n)), [], 'a posting took a number a dry run showed');
  assert.equal(Number((await top.knex('invhst').whereIn('recnum', shown).count({ n: '*' }))[0]!.n), 0, 'a number a dry run showed exists');
  await assertBooksInvariants(top.knex);
});

test(`idempotency: SIGKILL mid-posting (PostgreSQL: an instance; SQLite: a worker) frees its claims within ${CLAIM_FREED_WITHIN_MS} ms, and every key posts exactly once`, { timeout: 120_000 }, async (t) => {
  const key = await top.newKey('dp kill');
  const first = top.instances[0]!;
  const victim = top.instances.at(-1)!;
  /** Owner names of the claims the victim holds: the instance's workers (PostgreSQL) or worker 1 (SQLite). */
  const victimOwners = top.name === 'postgres' ? [`${victim.id}/w1`, `${victim.id}/w2`] : [`${victim.id}/w1`];
  const body = (number: string) => (top.name === 'postgres' ? journal(number) : largeJournal(number));
  const everyDoc: Array<{ idem: string; number: string }> = [];
  let docs: Array<{ idem: string; number: string }> = [];
  const claimsOfVictim = async () => Number((await top.knex('idmkey').whereIn('owner_instance', victimOwners).where({ state: 'in_flight' }).whereIn('idem_key', docs.map((d) => d.idem)).count('* as n').first())!.n);
  let pending: Promise<HttpResult>[] = [];
  let killedAt = 0;
  let claimsAtKill = 0;
  // SQLite: the kill may land in the instant the claim seen in flight completes: then again.
  for (let round = 0; claimsAtKill === 0; round += 1) {
    assert.ok(round < 3, 'a kill landed while the process held claims (3 tries)');
    await top.whole();
    docs = Array.from({ length: top.name === 'postgres' ? 6 : 12 }, (_, i) => ({ idem: `dp-kill-${randomUUID()}`, number: `DPK-${round}-${i}` }));
    everyDoc.push(...docs);
    if (top.name === 'postgres') {
      // The postings claim their keys, then wait inside their transactions for the journal-number
      // locks this connection holds (src/storage/named-locks.ts): mid-posting, deterministically.
      const hold = await top.knex.transaction();
      try {
        for (const d of docs) await hold.raw('select pg_advisory_xact_lock(hashtextextended(?, 0))', [`lgrtrn.trnnum:${d.number}`]);
        pending.push(...docs.map((d) => orRefused(postJournal(victim, key, d.number, d.idem), 30_000)));
        await waitFor('every posting claimed its key and waits inside its transaction', 20_000, async () => ((await claimsOfVictim()) === docs.length ? true : undefined));
        claimsAtKill = await claimsOfVictim();
        killedAt = performance.now();
        await victim.kill();
      } finally {
        await hold.rollback();
      }
    } else {
      // Large journals at once on the port: each worker claims the keys it received, then the postings
      // queue for the one SQLite writer, each holding it for a while. Worker 1 dies holding a claim.
      pending.push(...docs.map((d) => orRefused(victim.post('/api/v3/ledger-transactions', body(d.number), key, { 'Idempotency-Key': d.idem }), 5000)));
      await waitFor('worker 1 holds claims in flight', 20_000, async () => ((await claimsOfVictim()) > 0 ? true : undefined), 2);
      const killing = victim.killWorker(1);
      killedAt = performance.now();
      // Read before the replacement (forked 500 ms after the death) frees them at its start.
      claimsAtKill = await claimsOfVictim();
      await killing;
    }
  }
  // Clients retry with the same keys through a process that lives.
  const retried = await Promise.all(docs.map((d) => postUntilDone(first, key, d.number, d.idem, 15_000, body(d.number)).then(() => performance.now() - killedAt)));
  const slowest = Math.max(...retried);
  t.diagnostic(`${claimsAtKill} claims in flight at the kill; every key posted ${slowest.toFixed(0)} ms after it`);
  assert.ok(slowest < CLAIM_FREED_WITHIN_MS, `the killed process's claims were freed within ${CLAIM_FREED_WITHIN_MS} ms (slowest ${slowest.toFixed(0)} ms)`);
  // Earlier tries' keys too (their kill left no claim behind).
  for (const d of everyDoc.filter((e) => !docs.includes(e))) await postUntilDone(first, key, d.number, d.idem, 15_000, body(d.number));
  await Promise.all(pending);
  for (const d of everyDoc) {
    assert.equal(await countRows(top.knex, 'lgrtrn', { trnnum: d.number }), 1, `${d.number} posted exactly once`);
    const claim = await top.knex('idmkey').where({ idem_key: d.idem }).first();
    assert.equal(claim.state, 'completed', d.number);
  }
  await assertBooksInvariants(top.knex);
});

const pingKey = (inst: DeployedInstance, key: string) => inst.post('/api/v3/utility/ping', {}, key);

/**
 * Pings every process with the key (every 50 ms: each keeps it cached) while `change` runs; notes
 * when the database shows the change (`applied`, polled every 5 ms: at or after its commit); then
 * pings every process as fast as it answers until `cacheMs` + 400 ms after that. Every ping sent
 * `cacheMs` or more after the commit must be refused. Returns when the last ping was accepted,
 * after the change (ms).
 */
async function refusedWithin(cacheMs: number, key: string, change: () => Promise<void>, applied: () => Promise<boolean>, code: string): Promise<number> {
  for (const r of await Promise.all(top.everyProcess().map((inst) => pingKey(inst, key)))) assert.equal(r.status, 200);
  let seenAt: number | undefined;
  const watching = waitFor('the change is committed', 60_000, async () => ((await applied()) ? (seenAt = performance.now()) : undefined), 5);
  const changing = change();
  const probes: Array<{ sentAt: number; r: HttpResult }> = [];
  while (seenAt === undefined || performance.now() < seenAt + cacheMs + 400) {
    const sentAt = performance.now();
    for (const r of await Promise.all(top.everyProcess().map((inst) => pingKey(inst, key)))) probes.push({ sentAt, r });
    if (seenAt === undefined) await sleep(50);
  }
  await Promise.all([watching, changing]);
  const since = seenAt;
  for (const p of probes) assert.ok(p.r.status === 200 || p.r.headers['x-error-code'] === code, `${p.r.status} ${JSON.stringify(p.r.body)}`);
  const late = probes.filter((p) => p.r.status === 200 && p.sentAt >= since + cacheMs);
  assert.equal(late.length, 0, `accepted ${late.map((p) => (p.sentAt - since).toFixed(0)).join(', ')} ms after the change (bound ${cacheMs} ms)`);
  assert.ok(probes.some((p) => p.r.status === 200), 'the key was in use (cached) when it changed');
  const accepted = probes.filter((p) => p.r.status === 200).map((p) => p.sentAt - since);
  return Math.max(...accepted);
}

/** `npm run keys -- <args>` against the topology's database, as an operator runs it; resolves with its output. */
function keysCli(args: string[]): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const child = spawn(path.join(ROOT, 'node_modules', '.bin', 'tsx'), ['src/cli/keys.ts', ...args], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: top.databaseUrl, LOG_LEVEL: 'silent' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    child.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`keys ${args[0]} exited ${code}: ${out}`))));
  });
}

test('API keys: a key disabled through the keys CLI, or revoked through another process, is refused by every process within API_KEY_CACHE_MS', { timeout: 120_000 }, async (t) => {
  await top.whole();
  const cacheMs = loadConfig({}).apiKeyCacheMs;
  const repository = new ApiKeyRepository(top.knex);

  const disabled = await top.newKey('dp disabled by the CLI');
  const { id } = (await repository.findByKey(disabled))!;
  const cli = async () => void (await keysCli(['disable', disabled, '--reason', 'Deployment test']));
  const byCli = await refusedWithin(cacheMs, disabled, cli, async () => (await repository.findByKeyOrId(id))?.state === 'disabled', 'SERVICE_DISABLED');

  const revoked = await top.newKey('dp revoked elsewhere');
  const revokedId = (await repository.findByKey(revoked))!.id;
  const byOther = await refusedWithin(
    cacheMs,
    revoked,
    async () => void (await repository.setStateById(revokedId, 'revoked', null)),
    async () => (await repository.findByKeyOrId(revokedId))?.state === 'revoked',
    'UNAUTHORIZED',
  );
  t.diagnostic(`last accepted request after the change: CLI disable ${byCli.toFixed(0)} ms, revoke elsewhere ${byOther.toFixed(0)} ms (bound API_KEY_CACHE_MS ${cacheMs} ms)`);
  await assertBooksInvariants(top.knex);
});

test(`rate limit: one key hammering every process gets at most RATE_LIMIT_PER_MINUTE (${RATE_PER_MINUTE}) per instance, shared by its workers`, { timeout: 120_000 }, async (t) => {
  await top.whole();
  const key = await top.newKey('dp rate');
  const perInstance = Math.ceil(RATE_PER_MINUTE * 1.4);
  const started = performance.now();
  const answers = await Promise.all(
    top.instances.map(async (inst) => {
      const list: HttpResult[] = [];
      while (list.length < perInstance) list.push(...(await Promise.all(Array.from({ length: 20 }, () => inst.post('/api/v3/utility/ping', {}, key)))));
      return list;
    }),
  );
  const elapsedMs = performance.now() - started;
  // The buckets refill at the rate while the requests run.
  const refill = Math.ceil((elapsedMs / 60_000) * RATE_PER_MINUTE);
  let total = 0;
  for (const [i, list] of answers.entries()) {
    const allowed = list.filter((r) => r.status === 200).length;
    total += allowed;
    assert.equal(list.filter((r) => r.status === 429 && r.headers['x-error-code'] === 'RATE_LIMITED').length, list.length - allowed, 'only 200 and 429');
    t.diagnostic(`${top.instances[i]!.id}: ${allowed} of ${list.length} allowed in ${elapsedMs.toFixed(0)} ms (refill ${refill})`);
    assert.ok(allowed <= RATE_PER_MINUTE + refill, `${top.instances[i]!.id}: at most ${RATE_PER_MINUTE} + refill ${refill} (got ${allowed})`);
    // More than one worker's share: the limit is the instance's, its workers share it.
    assert.ok(allowed > RATE_PER_MINUTE / 2 + refill / 2 + 4, `${top.instances[i]!.id}: both workers' shares used (got ${allowed})`);
  }
  // Per instance, as documented: two instances allow the key about twice the rate.
  assert.ok(total <= top.instances.length * (RATE_PER_MINUTE + refill), `in total at most ${top.instances.length} x ${RATE_PER_MINUTE} (got ${total})`);
  await assertBooksInvariants(top.knex);
});

test('reads stay fresh: counts and the match index reflect a commit through another instance, and a direct UPDATE, on the very next read of every process', { timeout: 120_000 }, async () => {
  await top.whole();
  const key = await top.newKey('dp fresh');
  const tag = `FR${Date.now() % 100_000}`;
  const counts = async () =>
    Promise.all(
      top.everyProcess().map(async (inst) => {
        const res = await inst.post('/api/v3/ledger-transactions/query', { filters: { match: { field: 'transactionNumber', operator: 'LIKE', value: `${tag}-%` } }, select: ['recordNumber'], page: { pageNumber: 1, pageSize: 1 } }, key);
        assert.equal(res.status, 200, JSON.stringify(res.body));
        return res.body.page.totalCount as number;
      }),
    );
  const every = (n: number) => top.everyProcess().map(() => n);
  assert.deepEqual(await counts(), every(0));
  assert.deepEqual(await counts(), every(0), 'again: each process reuses its count');
  // Posted through the last instance (PostgreSQL: the other instance; SQLite: either worker).
  assert.equal((await postJournal(top.instances.at(-1)!, key, `${tag}-1`)).status, 200);
  assert.deepEqual(await counts(), every(1), 'every process counts the commit on its next read');
  // A change from outside the service: a journal of the demo company renamed into the tag.
  const other = await top.knex('lgrtrn').whereNot('trnnum', 'like', 'DP%').whereNot('trnnum', 'like', 'FR%').orderBy('recnum').first('recnum', 'trnnum');
  await top.knex('lgrtrn').where({ recnum: other.recnum }).update({ trnnum: `${tag}-2` });
  try {
    assert.deepEqual(await counts(), every(2), 'every process counts the direct UPDATE on its next read');
  } finally {
    await top.knex('lgrtrn').where({ recnum: other.recnum }).update({ trnnum: other.trnnum });
  }
  assert.deepEqual(await counts(), every(1));

  // The match index: built on every process, then a part renamed from outside the service.
  const name = `Qzxw Deployment Probe ${tag}`;
  const matches = () =>
    Promise.all(
      top.everyProcess().map(async (inst) => {
        const res = await inst.post('/api/v3/parts/match', { matchString: name, matchFields: ['partName'], select: ['recordNumber'], maxDistance: 1 }, key);
        assert.equal(res.status, 200, JSON.stringify(res.body));
        return (res.body.data as Array<{ recordNumber: number }>).map((r) => r.recordNumber);
      }),
    );
  assert.deepEqual(await matches(), top.everyProcess().map(() => []), 'no such part yet (every process builds its index)');
  const part = await top.knex('tkfprt').orderBy('recnum').first('recnum', 'prtnme');
  await top.knex('tkfprt').where({ recnum: part.recnum }).update({ prtnme: name });
  try {
    assert.deepEqual(await matches(), top.everyProcess().map(() => [Number(part.recnum)]), 'every process matches the rename on its next read');
    // A posting through an instance moves the change token too: the index is rebuilt again, and still right.
    assert.equal((await postJournal(top.instances[0]!, key, `${tag}-3`)).status, 200);
    assert.deepEqual(await matches(), top.everyProcess().map(() => [Number(part.recnum)]));
  } finally {
    await top.knex('tkfprt').where({ recnum: part.recnum }).update({ prtnme: part.prtnme });
  }
  assert.deepEqual(await matches(), top.everyProcess().map(() => []), 'and the rename back');
  await assertBooksInvariants(top.knex);
});

test('change events: one detector across every process (a lease in the database); its process killed mid-cycle, no event is lost or sent twice', { timeout: 120_000 }, async (t) => {
  await top.whole();
  const received: ReceivedWebhook[] = [];
  const receiver = await startWebhookReceiver(received);
  const url = `${receiver.url}/hook`;
  const key = await top.newKey('dp events');
  const first = top.instances[0]!;
  const created = await first.post('/api/v3/webhook-endpoints', { url, eventTypes: ['ledger_transaction.created'] }, top.adminKey);
  assert.equal(created.status, 200, JSON.stringify(created.body));
  const tag = `EV${Date.now() % 100_000}`;
  const arrived = (number: string) => received.filter((r) => r.json?.data?.record?.transactionNumber === number);
  // A cycle runs every interval; rows wait for the lag; delivery polls every second.
  const deliveredWithinMs = (DETECTION_INTERVAL_SECONDS + DETECTION_LAG_SECONDS + 1) * 1000 + 5000;
  let killed: DeployedInstance | undefined;
  try {
    assert.equal((await postJournal(top.instances.at(-1)!, key, `${tag}-1`)).status, 200);
    await waitFor('the first event is delivered', deliveredWithinMs, async () => (arrived(`${tag}-1`).length > 0 ? true : undefined));

    // One holder of the lease, a process of the topology, and it keeps it from cycle to cycle.
    const lease = () => top.knex('whklse').where({ name: 'detector' }).first();
    const holder = String((await lease()).holder);
    const owner = await processOf(holder);
    assert.ok(owner, `the lease holder ${holder} is a worker of the topology`);
    for (let i = 0; i < 3; i += 1) {
      await sleep(DETECTION_INTERVAL_SECONDS * 1000);
      assert.equal(String((await lease()).holder), holder, 'the holder renews its lease; no other process detects');
    }
    assert.equal(await countRows(top.knex, 'whklse'), 1);

    // A cycle of the holder stopped mid-way, then its process killed.
    let killedAt: number;
    if (top.name === 'postgres') {
      // The cycle queues its events, then waits to move the cursor, on a row this connection locks.
      const hold = await top.knex.transaction();
      try {
        await hold('whkcur').where({ kind: 'ledger_transaction' }).forUpdate().select('kind');
        for (const n of [2, 3]) assert.equal((await postJournal(first, key, `${tag}-${n}`)).status, 200);
        await waitFor('the detector waits inside its cycle', 20_000, async () => {
          const rows = await top.knex.raw(`select pid from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and query like '%update "whkcur"%'`);
          return rows.rows.length > 0 ? true : undefined;
        });
        killed = owner!.instance;
        killedAt = performance.now();
        await killed.kill();
      } finally {
        await hold.rollback();
      }
    } else {
      // SQLite: the holder's next cycle waits for the write lock this connection takes.
      for (const n of [2, 3]) assert.equal((await postJournal(first, key, `${tag}-${n}`)).status, 200);
      const file = top.databaseUrl.replace(/^sqlite:(\/\/)?/, '');
      const raw = new Database(file);
      try {
        raw.exec('BEGIN IMMEDIATE');
        await sleep((DETECTION_INTERVAL_SECONDS + DETECTION_LAG_SECONDS) * 1000 + 500);
        killedAt = performance.now();
        await owner!.instance.killWorker(owner!.index);
      } finally {
        raw.exec('ROLLBACK');
        raw.close();
      }
    }
    // Another process takes the detection over; each event arrives once.
    const resumed = await waitFor('the events of the killed cycle are delivered', 30_000, async () => (arrived(`${tag}-2`).length > 0 && arrived(`${tag}-3`).length > 0 ? performance.now() - killedAt : undefined));
    await sleep(3 * DETECTION_INTERVAL_SECONDS * 1000);
    t.diagnostic(`detection resumed after the kill: events delivered ${resumed.toFixed(0)} ms after it; new holder ${(await lease()).holder}`);
    for (const n of [1, 2, 3]) assert.equal(arrived(`${tag}-${n}`).length, 1, `${tag}-${n} sent exactly once`);
    assert.equal(new Set(received.map((r) => String(r.headers['webhook-id']))).size, received.length, 'no webhook-id twice');
    assert.notEqual(String((await lease()).holder), holder, 'the detection moved to another process');
  } finally {
    void receiver.close();
    // Through a process that lives; the killed instance comes back with the next check.
    await top.instances.find((i) => i.isRunning())!.post(`/api/v3/webhook-endpoints/${created.body.id}/delete`, {}, top.adminKey);
  }
  await assertBooksInvariants(top.knex);
});

/** The process behind a detection lease holder: its boot (insthb.boot_id) under the name `<INSTANCE_ID>/w<n>`. */
async function processOf(holder: string): Promise<{ instance: DeployedInstance; index: number; pid: number } | undefined> {
  const beat = await top.knex('insthb').where({ boot_id: holder }).first();
  const m = beat && /^(.+)\/w(\d+)$/.exec(String(beat.instance_id));
  const instance = m ? top.instances.find((i) => i.id === m[1]) : undefined;
  const pid = instance?.workerPids().get(Number(m![2]));
  return instance && pid ? { instance, index: Number(m![2]), pid } : undefined;
}

test('SIGTERM to one instance under load (SQLite: to a worker): the process that stays answers no 5xx, the stopped one drains, every posting lands once', { timeout: 120_000 }, async (t) => {
  await top.whole();
  const keys = await Promise.all(Array.from({ length: 6 }, (_, i) => top.newKey(`dp load ${i}`)));
  const stays = top.instances[0]!;
  const leaves = top.instances.at(-1)!;
  const answers: Array<{ at: DeployedInstance; r: HttpResult; idem?: { key: string; number: string; idem: string; kind: 'journal' | 'invoice' } }> = [];
  let stop = false;
  let serial = 0;
  const loop = async (key: string, i: number) => {
    for (let n = 0; !stop; n += 1) {
      const at = top.instances[(i + n) % top.instances.length]!;
      if (n % 3 === 2) {
        answers.push({ at, r: await orRefused(at.post('/api/v3/ledger-transactions/query', { select: ['recordNumber', 'transactionNumber'], orderBy: ['recordNumber DESC'], page: { pageNumber: 1, pageSize: 5 } }, key)) });
        continue;
      }
      const number = `DPL-${(serial += 1)}`;
      const idem = { key, number, idem: `dp-load-${randomUUID()}`, kind: n % 3 === 0 ? ('journal' as const) : ('invoice' as const) };
      const body = idem.kind === 'journal' ? journal(number) : apInvoice(number);
      const route = idem.kind === 'journal' ? '/api/v3/ledger-transactions' : '/api/v3/ap-invoices';
      answers.push({ at, r: await orRefused(at.post(route, body, key, { 'Idempotency-Key': idem.idem })), idem });
    }
  };
  const load = keys.map((k, i) => loop(k, i));
  let exit: number | null = 0;
  let signalledAt = 0;
  const answered = (from: number, inst: DeployedInstance) => answers.slice(from).filter((a) => a.at === inst && a.r.status === 200).length;
  try {
    await waitFor('the load runs through every instance', 60_000, async () => (top.instances.every((inst) => answered(0, inst) >= 20) ? true : undefined), 50);
    signalledAt = answers.length;
    if (top.name === 'postgres') exit = await leaves.sigterm();
    else await leaves.signalWorker(1, 'SIGTERM');
    const stopped = answers.length;
    await waitFor('the load goes on through the process that stays', 60_000, async () => (answered(stopped, stays) >= 40 ? true : undefined), 50);
  } finally {
    stop = true;
    await Promise.all(load);
  }
  const fromStays = top.name === 'postgres' ? answers.filter((a) => a.at === stays) : answers;
  const fiveHundreds = fromStays.filter((a) => a.r.status >= 500);
  t.diagnostic(`${answers.length} requests (${signalledAt} before the signal); statuses ${JSON.stringify(tally(answers.map((a) => `${a.at.id}:${a.r.status}`)))}`);
  assert.equal(fiveHundreds.length, 0, `answered 5xx by the process that stays: ${fiveHundreds.slice(0, 5).map((a) => `${a.r.status} ${JSON.stringify(a.r.body)}`).join('; ')}`);
  if (top.name === 'sqlite') assert.deepEqual(answers.filter((a) => a.r.status === 0).map((a) => a.r.body), [], 'no connection refused: the other worker serves the port');
  assert.equal(answers.filter((a) => a.r.status >= 500).length, 0, 'the stopping process drained its requests without a 5xx too');
  assert.equal(exit, 0, 'the stopped primary exits 0');
  // Postings refused at the socket are retried through the process that stays: each lands once.
  for (const a of answers) {
    if (!a.idem) continue;
    if (a.r.status === 0 || a.r.status === 429) {
      const body = a.idem.kind === 'journal' ? journal(a.idem.number) : apInvoice(a.idem.number);
      const route = a.idem.kind === 'journal' ? '/api/v3/ledger-transactions' : '/api/v3/ap-invoices';
      const retry = await stays.post(route, body, a.idem.key, { 'Idempotency-Key': a.idem.idem });
      assert.equal(retry.status, 200, JSON.stringify(retry.body));
    } else assert.equal(a.r.status, 200, `${a.idem.number}: ${JSON.stringify(a.r.body)}`);
    const count = a.idem.kind === 'journal' ? await countRows(top.knex, 'lgrtrn', { trnnum: a.idem.number }) : await countRows(top.knex, 'acpinv', { invnum: a.idem.number });
    assert.equal(count, 1, `${a.idem.number} posted exactly once`);
  }
  await assertBooksInvariants(top.knex);
});

// ---------------------------------------------------------------------------------------------
// The maintenance lock (docs/decisions/0200-lock-takes-effect-before-it-answers.md): once the lock
// has answered 200, every process of every instance answers 423; once the un-lock has answered
// 200, every process serves. The lock goes through the first instance, the un-lock through the
// last (PostgreSQL: the other instance; SQLite: whichever worker the connection lands on).

const LOCK_KINDS = ['read', 'match', 'write', 'dry run'] as const;
type LockKind = (typeof LOCK_KINDS)[number];

/** One request of a kind to `inst` (a fresh connection); writes and dry runs are journals numbered `number`. */
function lockProbe(inst: DeployedInstance, kind: LockKind, key: string, number: string): Promise<HttpResult> {
  switch (kind) {
    case 'read':
      return inst.post('/api/v3/ap-invoices/query', { select: ['recordNumber'], page: { pageNumber: 1, pageSize: 1 } }, key);
    case 'match':
      return inst.post('/api/v3/parts/match', { matchString: 'Pump', matchFields: ['partName'], select: ['recordNumber'], maxDistance: 1 }, key);
    case 'write':
      return inst.post('/api/v3/ledger-transactions', journal(number), key, { 'Idempotency-Key': number });
    case 'dry run':
      return inst.post('/api/v3/ledger-transactions?dryRun=true', journal(number), key);
  }
}

/** The worker (pid) that answered: its request log line carries the answer's X-Correlation-Id. */
async function answeringPid(inst: DeployedInstance, r: HttpResult): Promise<number> {
  const id = r.headers['x-correlation-id'];
  assert.ok(id, 'every answer carries X-Correlation-Id');
  return waitFor(`the request log line of ${id}`, 5000, async () => inst.cluster.logLines().find((l) => l.msg === 'request' && l.correlationId === id)?.pid as number | undefined, 10);
}

interface ProbeAnswer {
  inst: DeployedInstance;
  pid: number;
  kind: LockKind;
  number: string;
  r: HttpResult;
}

/**
 * Reads, matches, writes and dry runs sent at once to every process (each instance's port WORKERS
 * times per kind, fresh connections: round-robin spreads them over the workers), round after round
 * until every live worker of every instance has answered every kind (at most 10 rounds). Returns
 * every answer with the worker that gave it.
 */
async function probeEveryWorker(key: string, tag: string): Promise<ProbeAnswer[]> {
  const answers: ProbeAnswer[] = [];
  const workers = top.instances.flatMap((inst) => [...inst.workerPids().values()].map((pid) => ({ inst, pid })));
  assert.equal(workers.length, top.instances.length * WORKERS, 'every worker of every instance is up');
  const missing = () => workers.flatMap((w) => LOCK_KINDS.filter((kind) => !answers.some((a) => a.inst === w.inst && a.pid === w.pid && a.kind === kind)).map((kind) => `${w.inst.id}:${w.pid}:${kind}`));
  for (let round = 0; missing().length > 0; round += 1) {
    assert.ok(round < 10, `every worker answered every kind within 10 rounds (missing ${missing().join(', ')})`);
    const batch = top.everyProcess().flatMap((inst, slot) => LOCK_KINDS.map((kind, k) => ({ inst, kind, number: `${tag}-${round}-${slot}-${k}` })));
    const answered = await Promise.all(batch.map(async (b) => ({ ...b, r: await lockProbe(b.inst, b.kind, key, b.number) })));
    for (const a of answered) answers.push({ ...a, pid: await answeringPid(a.inst, a.r) });
  }
  return answers;
}

/** Every probe answered 423 MAINTENANCE_LOCK with Retry-After, naming the holder; nothing it sent was written. */
async function assertEveryWorkerLocked(answers: ProbeAnswer[], holder: string): Promise<void> {
  for (const a of answers) {
    const where = `${a.kind} to ${a.inst.id} (pid ${a.pid})`;
    assert.equal(a.r.status, 423, `${where}: ${JSON.stringify(a.r.body)}`);
    assert.equal(a.r.headers['x-error-code'], 'MAINTENANCE_LOCK', where);
    assert.ok(Number(a.r.headers['retry-after']) > 0, `${where}: Retry-After ${a.r.headers['retry-after']}`);
    assert.equal(a.r.body.lockUser, holder, `${where} names the holder`);
  }
  for (const a of answers.filter((x) => x.kind === 'write' || x.kind === 'dry run')) {
    assert.equal(await countRows(top.knex, 'lgrtrn', { trnnum: a.number }), 0, `${a.number} (${a.kind}, 423): nothing posted`);
    assert.equal(await countRows(top.knex, 'idmkey', { idem_key: a.number }), 0, `${a.number} (${a.kind}, 423): no Idempotency-Key claim`);
  }
}

/** Every probe served (200); each write posted once, each dry run nothing. */
async function assertEveryWorkerServes(answers: ProbeAnswer[]): Promise<void> {
  for (const a of answers) assert.equal(a.r.status, 200, `${a.kind} to ${a.inst.id} (pid ${a.pid}): ${JSON.stringify(a.r.body)}`);
  for (const a of answers.filter((x) => x.kind === 'write' || x.kind === 'dry run')) {
    assert.equal(await countRows(top.knex, 'lgrtrn', { trnnum: a.number }), a.kind === 'write' ? 1 : 0, `${a.number} (${a.kind})`);
  }
}

/** The data change token (every committed change of book data moves it): equal tokens, nothing written between. */
async function dataToken(): Promise<string> {
  const rows = await queryRows<{ n: unknown }>(top.knex, DATA_TOKEN_SQL);
  return String(rows[0]!.n);
}

const lockThrough = (inst: DeployedInstance, key: string, userName: string) => exchange(() => inst.post('/api/v3/utility/lock', { userName }, key));
const unlockThrough = (inst: DeployedInstance, key: string, userName: string, override?: boolean) =>
  exchange(() => inst.post('/api/v3/utility/un-lock', { userName, ...(override === undefined ? {} : { override }) }, key));
const ms = (e: Exchange) => Math.round(e.answeredAt - e.sentAt);

/**
 * Each lock check ends with the database un-locked, passed or failed: a lock left behind would fail
 * every later check for the wrong reason.
 */
async function withLockReleased(check: () => Promise<void>): Promise<void> {
  try {
    await check();
  } finally {
    if ((await countRows(top.knex, 'mntlck')) > 0) {
      await top.whole();
      const released = await top.instances[0]!.post('/api/v3/utility/un-lock', { userName: 'dp-cleanup', override: true }, top.adminKey);
      assert.equal(released.status, 200, `the lock left behind is released: ${JSON.stringify(released.body)}`);
    }
  }
}

test('maintenance lock: after the lock through the first instance answers, the first read, match, write and dry run to every worker of every instance is 423 (Retry-After); after the un-lock through the last answers, every worker serves', { timeout: 120_000 }, async (t) => {
  await withLockReleased(async () => {
    await top.whole();
    const key = await top.newKey('dp lock');
    const first = top.instances[0]!;
    const last = top.instances.at(-1)!;
    const tag = `DLS${Date.now() % 100_000}`;
    await assertEveryWorkerServes(await probeEveryWorker(key, `${tag}-pre`));

    const locked = await lockThrough(first, top.adminKey, 'dp-ops');
    assert.equal(locked.status, 200, JSON.stringify(locked.body));
    assert.equal(locked.body.status, 'locked');
    const tokenLocked = await dataToken();
    const whileLocked = await probeEveryWorker(key, `${tag}-L`);
    await assertEveryWorkerLocked(whileLocked, 'dp-ops');
    assert.equal(await dataToken(), tokenLocked, 'nothing was written while locked');

    const unlocked = await unlockThrough(last, top.adminKey, 'dp-ops');
    assert.equal(unlocked.status, 200, JSON.stringify(unlocked.body));
    assert.equal(unlocked.body.status, 'unlocked');
    await assertEveryWorkerServes(await probeEveryWorker(key, `${tag}-U`));
    assert.equal(await countRows(top.knex, 'mntlck'), 0);
    t.diagnostic(`lock through ${first.id} ${ms(locked)} ms, un-lock through ${last.id} ${ms(unlocked)} ms; ${whileLocked.length} requests while locked, all 423`);
    await assertBooksInvariants(top.knex);
  });
});

test('maintenance lock, no window: reads and writes to every process in a loop while locking through the first instance and un-locking through the last; nothing sent after the lock answered is served, nothing answers 5xx', { timeout: 120_000 }, async (t) => {
  await withLockReleased(async () => {
    await top.whole();
    const first = top.instances[0]!;
    const last = top.instances.at(-1)!;
    const reports: string[] = [];
    for (let round = 0; round < 3; round += 1) {
      // Fresh keys each round, the requests taking turns over them: the topology's rate limit (set
      // low for its own check) must not answer 429 here, whatever pace the machine allows.
      const keys = await Promise.all(Array.from({ length: 8 }, (_, i) => top.newKey(`dp lock window ${round}.${i}`)));
      const traffic = trafficLoop({ ports: top.everyProcess().map((i) => i.port), apiKeys: keys, concurrency: 8, tag: `DLW${Date.now() % 100_000}-${round}` });
      let sent: Sent[];
      let locked: Exchange;
      let unlocked: Exchange;
      let tokenLocked: string;
      let tokenBeforeUnlock: string;
      try {
        await sleep(500);
        locked = await lockThrough(first, top.adminKey, `dp-window-${round}`);
        assert.equal(locked.status, 200, JSON.stringify(locked.body));
        tokenLocked = await dataToken();
        await sleep(500);
        tokenBeforeUnlock = await dataToken();
        unlocked = await unlockThrough(last, top.adminKey, `dp-window-${round}`);
        assert.equal(unlocked.status, 200, JSON.stringify(unlocked.body));
        await sleep(500);
      } finally {
        sent = await traffic.stop();
      }
      const report = assertNoWindow(sent, locked, unlocked);
      assert.equal(tokenBeforeUnlock, tokenLocked, 'nothing was written while locked');
      await assertWritesExact(top.knex, sent);
      reports.push(`${sent.length} requests, ${report.before} served before, ${report.whileLocked} sent while locked (all 423), ${report.afterUnlock} after (all 200); lock ${ms(locked)} ms, un-lock ${ms(unlocked)} ms under load`);
    }
    t.diagnostic(reports.join(' | '));
    await assertBooksInvariants(top.knex);
  });
});

test('maintenance lock, the holder rule across instances: key A locks through the first instance; key B un-locks through the last: 409 LOCK_HELD naming the holder without override, 200 with it', { timeout: 120_000 }, async () => {
  await withLockReleased(async () => {
    await top.whole();
    const keyA = await top.newKey('dp lock holder A');
    const keyB = await top.newKey('dp lock holder B');
    const reader = await top.newKey('dp lock holder reads');
    const first = top.instances[0]!;
    const last = top.instances.at(-1)!;
    const locked = await lockThrough(first, keyA, 'holder-ops');
    assert.equal(locked.status, 200, JSON.stringify(locked.body));
    const tokenLocked = await dataToken();
    // The same userName through another key is another holder: the holder is the API key and the userName.
    for (const userName of ['holder-ops', 'other-ops']) {
      const refused = await last.post('/api/v3/utility/un-lock', { userName }, keyB);
      assert.equal(refused.status, 409, JSON.stringify(refused.body));
      assert.equal(refused.headers['x-error-code'], 'LOCK_HELD');
      assert.equal(refused.body.lockUser, 'holder-ops', 'the 409 names the holder');
      const explicit = await unlockThrough(last, keyB, userName, false);
      assert.equal(explicit.status, 409, JSON.stringify(explicit.body));
    }
    // Still locked on every worker after the refused un-locks.
    await assertEveryWorkerLocked(await probeEveryWorker(reader, `DLH${Date.now() % 100_000}`), 'holder-ops');
    assert.equal(await dataToken(), tokenLocked, 'nothing was written while locked');
    const overridden = await unlockThrough(last, keyB, 'other-ops', true);
    assert.equal(overridden.status, 200, JSON.stringify(overridden.body));
    assert.equal(overridden.body.response.previousHolder, 'holder-ops');
    await assertEveryWorkerServes(await probeEveryWorker(reader, `DLH${Date.now() % 100_000}-U`));
    assert.equal(await countRows(top.knex, 'mntlck'), 0);
    await assertBooksInvariants(top.knex);
  });
});

test('maintenance lock survives a restart of every instance (SQLite: the whole cluster): every worker answers 423 after it; the un-lock frees them all', { timeout: 180_000 }, async (t) => {
  await withLockReleased(async () => {
    await top.whole();
    const key = await top.newKey('dp lock restart');
    const first = top.instances[0]!;
    const last = top.instances.at(-1)!;
    const locked = await lockThrough(first, top.adminKey, 'restart-ops');
    assert.equal(locked.status, 200, JSON.stringify(locked.body));
    const tokenLocked = await dataToken();
    const stoppedAt = performance.now();
    const exits = await Promise.all(top.instances.map((i) => i.sigterm()));
    assert.deepEqual(exits, top.instances.map(() => 0), 'every primary stops gracefully while locked');
    await Promise.all(top.instances.map((i) => i.restart()));
    await top.whole();
    const restartedMs = performance.now() - stoppedAt;
    const tag = `DLR${Date.now() % 100_000}`;
    await assertEveryWorkerLocked(await probeEveryWorker(key, `${tag}-L`), 'restart-ops');
    assert.equal(await dataToken(), tokenLocked, 'nothing was written while locked (restart included)');
    const unlocked = await unlockThrough(last, top.adminKey, 'restart-ops');
    assert.equal(unlocked.status, 200, JSON.stringify(unlocked.body));
    await assertEveryWorkerServes(await probeEveryWorker(key, `${tag}-U`));
    t.diagnostic(`stopped and restarted every instance in ${restartedMs.toFixed(0)} ms; un-lock through ${last.id} ${ms(unlocked)} ms`);
    await assertBooksInvariants(top.knex);
  });
});

test('maintenance lock and API keys: during a lock, a key revoked or disabled through the keys CLI is refused by every process within API_KEY_CACHE_MS (its override un-lock 401, the lock unchanged); a key created elsewhere is accepted within the bound', { timeout: 120_000 }, async (t) => {
  await withLockReleased(async () => {
    await top.whole();
    const cacheMs = loadConfig({}).apiKeyCacheMs;
    const repository = new ApiKeyRepository(top.knex);
    const holder = await top.newKey('dp keys lock holder');
    const revoked = await top.newKey('dp keys revoked while locked');
    const disabled = await top.newKey('dp keys disabled while locked');
    const first = top.instances[0]!;
    const last = top.instances.at(-1)!;
    assert.equal((await lockThrough(first, holder, 'Frank')).status, 200);
    const row = await top.knex('mntlck').where({ id: 1 }).first();
    for (const r of await Promise.all(top.everyProcess().map((inst) => pingKey(inst, revoked)))) assert.deepEqual([r.status, r.body.status, r.body.lockUser], [200, 'locked', 'Frank']);

    const revokedId = (await repository.findByKey(revoked))!.id;
    const byRevoke = await refusedWithin(cacheMs, revoked, async () => void (await keysCli(['revoke', revoked])), async () => (await repository.findByKeyOrId(revokedId))?.state === 'revoked', 'UNAUTHORIZED');
    for (const inst of top.everyProcess()) {
      const overridden = await inst.post('/api/v3/utility/un-lock', { userName: 'mallory', override: true }, revoked);
      assert.equal(overridden.status, 401, `${inst.id}: ${JSON.stringify(overridden.body)}`);
      assert.equal(overridden.headers['x-error-code'], 'UNAUTHORIZED');
    }
    assert.deepEqual(await top.knex('mntlck').where({ id: 1 }).first(), row, 'the lock row is unchanged');

    const disabledId = (await repository.findByKey(disabled))!.id;
    const byDisable = await refusedWithin(cacheMs, disabled, async () => void (await keysCli(['disable', disabled, '--reason', 'Locked test'])), async () => (await repository.findByKeyOrId(disabledId))?.state === 'disabled', 'SERVICE_DISABLED');
    for (const r of await Promise.all(top.everyProcess().map((inst) => pingKey(inst, disabled)))) {
      assert.deepEqual([r.status, r.headers['x-error-code'], r.headers['retry-after'], r.body.reason], [503, 'SERVICE_DISABLED', '300', 'Locked test']);
    }

    // Created through another connection (another instance): refused before, accepted by every process within the bound.
    const created = randomUUID();
    for (const r of await Promise.all(top.everyProcess().map((inst) => pingKey(inst, created)))) assert.equal(r.status, 401);
    await repository.create('dp keys created while locked', 'integration', created);
    const since = performance.now();
    const probes: Array<{ sentAt: number; r: HttpResult }> = [];
    while (performance.now() < since + cacheMs + 400) {
      const sentAt = performance.now();
      for (const r of await Promise.all(top.everyProcess().map((inst) => pingKey(inst, created)))) probes.push({ sentAt, r });
      await sleep(10);
    }
    // Authenticated: answered, or past the key's rate (RATE_LIMITED comes after authentication: the
    // probes of one key add up to more than RATE_PER_MINUTE allows a worker in a burst).
    const authenticated = (r: HttpResult) => r.status === 200 || r.headers['x-error-code'] === 'RATE_LIMITED';
    for (const p of probes) assert.ok(authenticated(p.r) || p.r.headers['x-error-code'] === 'UNAUTHORIZED', `${p.r.status} ${JSON.stringify(p.r.body)}`);
    const late = probes.filter((p) => !authenticated(p.r) && p.sentAt >= since + cacheMs);
    assert.equal(late.length, 0, `refused ${late.map((p) => `${(p.sentAt - since).toFixed(0)} ms (${p.r.status})`).join(', ')} after the key was created (bound ${cacheMs} ms)`);
    assert.ok(probes.some((p) => p.r.status === 200), 'the created key was answered');
    for (const p of probes.filter((x) => x.r.status === 200)) assert.equal(p.r.body.status, 'locked');
    const acceptedFrom = Math.min(...probes.filter((p) => authenticated(p.r)).map((p) => p.sentAt - since));

    assert.deepEqual(await top.knex('mntlck').where({ id: 1 }).first(), row, 'still locked by Frank');
    assert.equal((await unlockThrough(last, holder, 'Frank')).status, 200);
    t.diagnostic(`while locked: last accepted after the CLI revoke ${byRevoke.toFixed(0)} ms, after the CLI disable ${byDisable.toFixed(0)} ms; a created key first accepted ${acceptedFrom.toFixed(0)} ms after (bound API_KEY_CACHE_MS ${cacheMs} ms)`);
    await assertBooksInvariants(top.knex);
  });
});

function tally(values: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const v of values) out[v] = (out[v] ?? 0) + 1;
  return out;
}
