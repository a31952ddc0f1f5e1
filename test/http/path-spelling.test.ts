/**
 * One spelling of every path for the whole pipeline (decision 0445), through HTTP and the
 * database: v3 answers only its paths as openapi.yaml spells them (another letter case or a
 * trailing slash is 404 ROUTE_NOT_FOUND, before any guard, validator or handler can see it);
 * v2 answers its paths in any case and with a trailing slash, rewritten to the document's
 * spelling before the guards, so a scoped key gets the same 403 on every spelling. Also: an
 * absent body is `{}` (decision 0446) and a lock's userName must name someone.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, type TestApp } from '../support/app';
import { assertProblem } from '../support/http';
import { countRows } from '../support/posting-fixture';
import { OPERATION_SCOPES, SCOPES, scopeForPath, type Scope } from '../../src/auth/scopes';
import { OPERATIONS } from '../../generated/operations';
import { v2Document } from '../../src/v2/document';

let t: TestApp;
/** A balanced journal on the seeded demo company (accounts, source and open period as test/v2/v2-http.test.ts). */
const journal = (n: string, over: Record<string, unknown> = {}) => ({
  transactionNumber: n,
  transactionDate: '2026-11-30',
  description: 'path spelling journal',
  sourceNumber: 102,
  lines: [
    { lineNumber: 1, ledgerAccount: 7050, description: 'debit', debitAmount: 12.34 },
    { lineNumber: 2, ledgerAccount: 1310, description: 'credit', creditAmount: 12.34 },
  ],
  ...over,
});
const keyWith = async (scopes: Scope[]) => (await t.services.keys.create(`scoped ${scopes.join(',')}`, 'integration', undefined, scopes)).key;
const lockRows = () => countRows(t.knex, 'mntlck');
const journals = () => countRows(t.knex, 'lgrtrn');

before(async () => {
  t = await startTestApp({ config: { rateLimitPerMinute: 0 } });
});
after(() => t.close());

/** The v2 failure body: status kept, errorCode named; `requiredScope` parsed from the message of a 403. */
function v2Fails(res: { status: number; body: any; text: string }, status: number, code: string): any {
  assert.equal(res.status, status, res.text);
  assert.equal(res.body.errorCode, code, res.text);
  const scope = /without the (\S+) scope/.exec(String(res.body.message))?.[1];
  return { ...res.body, ...(scope ? { requiredScope: scope } : {}) };
}

describe('v2: every spelling of an operation is that operation, behind its scope', () => {
  test('a read-only key on case and trailing-slash spellings of v2 writes and lock: 403 SCOPE_MISSING, nothing posted, nothing locked', async () => {
    const reader = await keyWith(['read']);
    const before = await journals();
    for (const path of ['/API/V2/post/ledger-transaction', '/api/v2/post/ledger-transaction/', '/Api/V2/Post/Ledger-Transaction/', '/api/v2/POST/LEDGER-TRANSACTION']) {
      assert.equal(v2Fails(await t.post(path, journal(`CASE-${path.length}`), reader), 403, 'SCOPE_MISSING').requiredScope, 'write', path);
    }
    for (const path of ['/API/V2/utility/lock', '/api/v2/utility/lock/', '/api/v2/UTILITY/Lock', '/API/V2/utility/un-lock/']) {
      assert.equal(v2Fails(await t.post(path, { userName: 'mallory', override: true }, reader), 403, 'SCOPE_MISSING').requiredScope, 'lock', path);
    }
    assert.equal(await journals(), before, 'nothing posted');
    assert.equal(await lockRows(), 0, 'nothing locked');
    // The same spellings with a key that holds the scope are the operation (v2 clients may rely on them).
    const posted = await t.post('/API/V2/Post/Ledger-Transaction/', journal('CASE-OK'));
    assert.equal(posted.status, 200, posted.text);
    assert.equal(posted.body.responseType, 'Success', posted.text);
    assert.equal(await countRows(t.knex, 'lgrtrn', { trnnum: 'CASE-OK' }), 1);
  });

  test('a write-only key on case and trailing-slash spellings of v2 reads and lock: 403, no data, nothing locked', async () => {
    const writer = await keyWith(['write']);
    for (const path of ['/api/v2/query/part/', '/API/V2/query/part', '/api/v2/Query/part', '/api/v2/MATCH/vendor/']) {
      const res = await t.post(path, {}, writer);
      assert.equal(v2Fails(res, 403, 'SCOPE_MISSING').requiredScope, 'read', path);
      assert.equal(res.body.data, undefined);
    }
    v2Fails(await t.post('/api/v2/utility/lock/', { userName: 'wo' }, writer), 403, 'SCOPE_MISSING');
    assert.equal(await lockRows(), 0, 'nothing locked');
    // Another spelling reaches the same handler for a key that may read: the entity keeps its spelling.
    const read = await t.post('/API/V2/QUERY/part/', { pageSize: 1 });
    assert.equal(read.status, 200, read.text);
    assert.equal(read.body.data.length, 1);
  });

  test('v2 lock in another case validates its body: {} is 400 naming userName, nothing locked', async () => {
    const res = await t.post('/API/V2/utility/lock', {});
    assert.deepEqual(v2Fails(res, 400, 'VALIDATION_FAILED').errors.map((e: { field: string }) => e.field), ['userName']);
    assert.equal(await lockRows(), 0);
  });
});

describe('v3: only the document\'s spelling is an operation', () => {
  test('/API/V3/... and other cases of a v3 path are 404 ROUTE_NOT_FOUND: nothing validated, nothing posted, nothing locked', async () => {
    const before = await journals();
    const bad = { ...journal('V3-CASE-1'), surprise: true, transactionDate: 12 };
    assertProblem(await t.post('/API/V3/ledger-transactions', bad).set('Idempotency-Key', 'case-1'), 'ROUTE_NOT_FOUND');
    assertProblem(await t.post('/API/V3/ledger-transactions', { ...journal('V3-CASE-2'), lines: 'nope' }), 'ROUTE_NOT_FOUND');
    assertProblem(await t.post('/API/V3/ledger-transactions', journal('V3-CASE-3', { transactionDate: 'not-a-date' })), 'ROUTE_NOT_FOUND');
    assertProblem(await t.post('/api/v3/Ledger-Transactions', journal('V3-CASE-4')), 'ROUTE_NOT_FOUND');
    assertProblem(await t.post('/api/v3/ledger-transactions/', journal('V3-CASE-5')), 'ROUTE_NOT_FOUND');
    assertProblem(await t.post('/API/V3/utility/lock', {}), 'ROUTE_NOT_FOUND');
    assertProblem(await t.post('/api/v3/utility/LOCK', { userName: 'x' }), 'ROUTE_NOT_FOUND');
    assertProblem(await t.post('/api/v3/utility/lock/', { userName: 'x' }), 'ROUTE_NOT_FOUND');
    assertProblem(await t.post('/api/v3/utility/ping/'), 'ROUTE_NOT_FOUND');
    assert.equal(await journals(), before, 'nothing posted');
    assert.equal(await lockRows(), 0, 'nothing locked');
    // The document's spelling validates as always.
    assertProblem(await t.post('/api/v3/ledger-transactions', bad).set('Idempotency-Key', 'case-1'), 'VALIDATION_FAILED');
  });

  test('while locked, another spelling of ping is 404 like any unknown path; ping itself answers locked', async () => {
    const locked = await t.post('/api/v3/utility/lock', { userName: 'maint' });
    assert.equal(locked.status, 200, locked.text);
    try {
      assertProblem(await t.post('/api/v3/UTILITY/PING'), 'ROUTE_NOT_FOUND');
      assertProblem(await t.post('/api/v3/utility/ping/'), 'ROUTE_NOT_FOUND');
      const ping = await t.post('/api/v3/utility/ping');
      assert.equal(ping.status, 200, ping.text);
      assert.equal(ping.body.lockUser, 'maint');
      // v2's ping in another case is v2's ping: open while locked.
      const v2 = await t.post('/API/V2/Utility/Ping/', {});
      assert.equal(v2.status, 200, v2.text);
      assert.equal(v2.body.status, 'locked');
      assertProblem(await t.post('/api/v3/parts/query', {}), 'MAINTENANCE_LOCK');
    } finally {
      const un = await t.post('/api/v3/utility/un-lock', { userName: 'maint' });
      assert.equal(un.status, 200, un.text);
    }
    assert.equal(await lockRows(), 0);
  });
});

/** Paths of the walk: the template with its parameters filled. */
const filled = (template: string) => template.replace(/\{entity\}/g, 'part').replace(/\{[^}]+\}/g, '00000000-0000-4000-8000-000000000000');
/** Other spellings of a path: all upper case, a trailing slash, the first segment after the base capitalised. */
function spellings(base: string, path: string): string[] {
  const [, first = '', ...rest] = path.split('/');
  return [(base + path).toUpperCase(), `${base}${path}/`, [base, first.charAt(0).toUpperCase() + first.slice(1), ...rest].join('/'), `${base.toUpperCase()}${path}`];
}
const bodyOf = (path: string) => (/\/utility\/(un-)?lock\/?$/i.test(path) ? { userName: 'walker', override: true } : {});

test('guard walk: every v3 and v2 operation in other spellings, with a key lacking its scope, is never 2xx (v3 404, v2 403)', async () => {
  const lacking = new Map<Scope, string>();
  const keyLacking = async (scope: Scope) => {
    let key = lacking.get(scope);
    if (!key) lacking.set(scope, (key = await keyWith(SCOPES.filter((s) => s !== scope))));
    return key;
  };
  const before = await journals();
  let walked = 0;
  for (const op of OPERATIONS) {
    const scope = OPERATION_SCOPES.get(op.operationId);
    if (!scope) continue;
    const key = await keyLacking(scope);
    for (const path of spellings('/api/v3', filled(op.path))) {
      const res = await t.http[op.method.toLowerCase() as 'post'](path).set('x-api-key', key).send(bodyOf(path));
      assert.ok(res.status < 200 || res.status >= 300, `${op.method} ${path}: ${res.status} ${res.text.slice(0, 200)}`);
      // Any unknown path's 404: `/api/v3/Parts/query` names no entity a read knows.
      assertProblem(res, res.headers['x-error-code'] === 'UNKNOWN_ENTITY' ? 'UNKNOWN_ENTITY' : 'ROUTE_NOT_FOUND');
      walked++;
    }
  }
  for (const path of Object.keys(v2Document().paths as Record<string, unknown>)) {
    const scope = scopeForPath(path);
    if (!scope) continue;
    const key = await keyLacking(scope);
    for (const spelled of spellings('/api/v2', filled(path))) {
      const res = await t.post(spelled, bodyOf(spelled), key);
      assert.ok(res.status < 200 || res.status >= 300, `POST ${spelled}: ${res.status} ${res.text.slice(0, 200)}`);
      assert.equal(v2Fails(res, 403, 'SCOPE_MISSING').requiredScope, scope, spelled);
      walked++;
    }
  }
  assert.ok(walked > 400, `walked ${walked} spellings`);
  assert.equal(await journals(), before, 'nothing posted');
  assert.equal(await lockRows(), 0, 'nothing locked');
});

describe('the lock\'s userName and an absent body', () => {
  test('lock and un-lock with no body at all: 400 naming userName (not 415), v3 and v2; a body of another type stays 415', async () => {
    for (const path of ['/api/v3/utility/lock', '/api/v3/utility/un-lock']) {
      const res = await t.http.post(path).set('x-api-key', t.apiKey);
      assert.deepEqual(assertProblem(res, 'VALIDATION_FAILED').errors.map((e: { field: string; code: string }) => [e.field, e.code]), [['userName', 'required']], path);
      // Content-Length 0 with another declared type is no body either.
      const zero = await t.http.post(path).set('x-api-key', t.apiKey).set('Content-Type', 'text/plain').send('');
      assertProblem(zero, 'VALIDATION_FAILED');
      assertProblem(await t.http.post(path).set('x-api-key', t.apiKey).set('Content-Type', 'text/plain').send('userName=x'), 'UNSUPPORTED_MEDIA_TYPE');
    }
    const v2 = v2Fails(await t.http.post('/api/v2/utility/lock').set('x-api-key', t.apiKey), 400, 'VALIDATION_FAILED');
    assert.deepEqual(v2.errors.map((e: { field: string }) => e.field), ['userName']);
    assert.equal(await lockRows(), 0);
  });

  test('one rule on every operation: a write with no body is 400 naming its fields, a read with none reads as {}', async () => {
    const before = await journals();
    const write = await t.http.post('/api/v3/ledger-transactions').set('x-api-key', t.apiKey).set('Idempotency-Key', 'no-body-1');
    const fields = assertProblem(write, 'VALIDATION_FAILED').errors.map((e: { field: string }) => e.field);
    assert.ok(fields.includes('lines') && fields.includes('transactionNumber'), JSON.stringify(fields));
    assert.equal(await journals(), before);
    const read = await t.http.post('/api/v3/parts/query').set('x-api-key', t.apiKey);
    assert.equal(read.status, 200, read.text);
    assert.equal(read.body.page.pageNumber, 1);
  });

  test('a userName of spaces only is 400 naming userName on lock and un-lock (v3 and v2); nothing locked', async () => {
    for (const path of ['/api/v3/utility/lock', '/api/v3/utility/un-lock']) {
      for (const userName of ['   ', '\t', ' \n ']) {
        const p = assertProblem(await t.post(path, { userName }), 'VALIDATION_FAILED');
        assert.deepEqual(p.errors.map((e: { field: string }) => e.field), ['userName'], `${path} ${JSON.stringify(userName)}`);
      }
    }
    for (const path of ['/api/v2/utility/lock', '/api/v2/utility/un-lock']) {
      const body = v2Fails(await t.post(path, { userName: '   ' }), 400, 'VALIDATION_FAILED');
      assert.deepEqual(body.errors.map((e: { field: string }) => e.field), ['userName']);
    }
    assert.equal(await lockRows(), 0);
    // A name with spaces around a character is a name.
    const ok = await t.post('/api/v3/utility/lock', { userName: ' j ' });
    assert.equal(ok.status, 200, ok.text);
    assert.equal((await t.post('/api/v3/utility/un-lock', { userName: 'j' })).status, 200);
    assert.equal(await lockRows(), 0);
  });
});

test('a request the validator finds another operation for than the guards judged reaches no handler: 404', async () => {
  // Built to agree (the test above walks it); this is the net under that: a lookup that disagrees.
  const { default: express } = await import('express');
  const supertest = (await import('supertest')).default;
  const { contractValidator } = await import('../../src/http/contract-validator');
  const { errorHandler } = await import('../../src/http/errors/handler');
  const validator = contractValidator({ base: '/api/v3', validateResponses: false });
  const app = express();
  app.set('case sensitive routing', true);
  app.set('strict routing', true);
  app.use(express.json());
  app.use((req, res, next) => {
    res.locals.operationId = req.headers['x-judged'];
    next();
  });
  app.use(...validator.middleware);
  let handled = 0;
  app.post('/api/v3/utility/ping', (_req, res) => {
    handled++;
    res.json({ ok: true });
  });
  app.use(errorHandler(t.services.logger));
  const agree = await supertest(app).post('/api/v3/utility/ping').set('x-judged', 'ping').send({});
  assert.equal(agree.status, 200, agree.text);
  const disagree = await supertest(app).post('/api/v3/utility/ping').set('x-judged', 'queryParts').send({});
  assert.equal(disagree.status, 404, disagree.text);
  assert.equal(disagree.headers['x-error-code'], 'ROUTE_NOT_FOUND');
  assert.equal(handled, 1);
});
