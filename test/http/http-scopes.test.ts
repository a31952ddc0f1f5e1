/**
 * Scoped API keys (src/auth/scopes.ts, src/catalog/pii.ts), through HTTP on the running app:
 * an unscoped key is the spec's key; a scoped key may call only what its scopes grant (403
 * SCOPE_MISSING naming the scope), and without `pii` reads employees without the PII fields and
 * gets 400 PII_FIELD_WITHHELD when it names one.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, type TestApp } from '../support/app';
import { assertProblem } from '../support/http';
import { PII_FIELDS } from '../../src/catalog/pii';
import { OPERATION_SCOPES, scopeForPath, type Scope } from '../../src/auth/scopes';
import { OPERATIONS } from '../../generated/operations';
import { v2OperationScopes } from '../../src/v2/routes';

let t: TestApp;
const keyWith = async (scopes: Scope[]) => (await t.services.keys.create(`scoped ${scopes.join(',')}`, 'integration', undefined, scopes)).key;
const PII = PII_FIELDS.employees!;

before(async () => {
  t = await startTestApp({ config: { rateLimitPerMinute: 0 } });
});
after(() => t.close());

describe('the operation -> scope table', () => {
  test('covers every operation: ping none, lock/un-lock lock, Events events:manage, the audit log audit, query/match read, everything else write', () => {
    assert.equal(OPERATION_SCOPES.size, OPERATIONS.length);
    for (const op of OPERATIONS) {
      const scope = OPERATION_SCOPES.get(op.operationId);
      if (op.path === '/utility/ping') assert.equal(scope, null);
      else if (/^\/utility\/(un-)?lock$/.test(op.path)) assert.equal(scope, 'lock', op.operationId);
      // Reading the event feed is a read (what it lists follows the reading key's scopes); managing feeds is events:manage.
      else if (op.path === '/events/query') assert.equal(scope, 'read', op.operationId);
      else if (op.tag === 'Events') assert.equal(scope, 'events:manage', op.operationId);
      else if (op.tag === 'Audit') assert.equal(scope, 'audit', op.operationId);
      else if (/\/(query|match)$/.test(op.path)) assert.equal(scope, 'read', op.operationId);
      else assert.equal(scope, 'write', op.operationId);
    }
    assert.equal([...OPERATION_SCOPES.values()].filter((s) => s === 'write').length, 7, 'the seven writes');
    assert.equal(scopeForPath('/webhook-endpoints'), 'events:manage');
    assert.equal(scopeForPath('/webhook-deliveries/{id}/retry'), 'events:manage');
    assert.equal(scopeForPath('/event-feeds'), 'events:manage');
    assert.equal(scopeForPath('/event-feeds/query'), 'events:manage');
    // The frozen v2 surface, by its verb-first paths (v2 is no back door).
    assert.equal(scopeForPath('/query/part'), 'read');
    assert.equal(scopeForPath('/match/vendor'), 'read');
    assert.equal(scopeForPath('/post/ledger-transaction'), 'write');
    // The v2 check goes by operationId too (decision 0445): every v2 operation has its scope.
    assert.deepEqual(Object.fromEntries(v2OperationScopes()), {
      v2Query: 'read', v2Match: 'read', v2Journal: 'write', v2ApInvoice: 'write', v2InventoryAllocation: 'write', v2PurchaseOrderReceipt: 'write',
      v2PayrollPost: 'write', v2ServiceWorkOrderPost: 'write', v2ServiceInventory: 'write', v2Ping: null, v2Lock: 'lock', v2Unlock: 'lock',
    });
  });
});

describe('an unscoped key (the spec)', () => {
  test('reads employee PII and may lock and un-lock', async () => {
    const res = await t.post('/api/v3/employees/query', { select: ['id', 'birthDate', 'salary'], page: { pageSize: 1 } });
    assert.equal(res.status, 200, res.text);
    assert.ok('birthDate' in res.body.data[0] && 'salary' in res.body.data[0]);
    const all = await t.post('/api/v3/employees/query', { page: { pageSize: 1 } });
    for (const f of PII) assert.ok(f in all.body.data[0], `unscoped read has ${f}`);
  });
});

describe('a scoped key', () => {
  test('without the scope an operation needs: 403 SCOPE_MISSING naming it; ping needs none', async () => {
    const reader = await keyWith(['read']);
    assert.equal((await t.post('/api/v3/utility/ping', {}, reader)).status, 200);
    const write = await t.post('/api/v3/ledger-transactions', { lines: [] }, reader).set('Idempotency-Key', 'scope-test-1');
    assert.equal(assertProblem(write, 'SCOPE_MISSING').requiredScope, 'write');
    assert.equal(assertProblem(await t.post('/api/v3/utility/lock', { userName: 'r' }, reader), 'SCOPE_MISSING').requiredScope, 'lock');
    assert.equal(assertProblem(await t.post('/api/v3/utility/un-lock', { userName: 'r', override: true }, reader), 'SCOPE_MISSING').requiredScope, 'lock');

    const none = await keyWith([]);
    assert.equal((await t.post('/api/v3/utility/ping', undefined, none)).status, 200);
    assert.equal(assertProblem(await t.post('/api/v3/vendors/query', {}, none), 'SCOPE_MISSING').requiredScope, 'read');
    // An unknown route stays 404 (the scope check does not hide it).
    assert.equal((await t.post('/api/v3/nothing-here/query', {}, none)).status, 404);
  });

  test('v2 is no back door: the same scopes and the same PII view on /api/v2', async () => {
    const writer = await keyWith(['write']);
    const refused = await t.post('/api/v2/query/vendor', {}, writer);
    assert.equal(refused.status, 403, refused.text);
    assert.equal(refused.body.errorCode, 'SCOPE_MISSING');
    const reader = await keyWith(['read']);
    const v2 = await t.post('/api/v2/query/employee', { pageSize: 1 }, reader);
    assert.equal(v2.status, 200, v2.text);
    assert.ok(v2.body.data.length === 1);
    for (const f of PII) assert.ok(!(f in v2.body.data[0]), `v2 read without pii has no ${f}`);
    assert.equal((await t.post('/api/v2/query/employee', { pageSize: 1 }, await keyWith(['read', 'pii']))).body.data[0].salary !== undefined, true);
  });

  test('with lock: locks, un-locks, overrides; without read it may not read', async () => {
    const locker = await keyWith(['lock']);
    assert.equal((await t.post('/api/v3/utility/lock', { userName: 'maint' }, locker)).status, 200);
    try {
      assertProblem(await t.post('/api/v3/vendors/query', {}, locker), 'SCOPE_MISSING');
    } finally {
      const un = await t.post('/api/v3/utility/un-lock', { userName: 'someone-else', override: true }, locker);
      assert.equal(un.status, 200, un.text);
    }
  });

  test('without pii: employee reads and matches lose the PII fields; naming one is 400 PII_FIELD_WITHHELD', async () => {
    const reader = await keyWith(['read']);
    const res = await t.post('/api/v3/employees/query', { page: { pageSize: 2 } }, reader);
    assert.equal(res.status, 200, res.text);
    assert.ok(res.body.data.length > 0);
    for (const row of res.body.data) {
      for (const f of PII) assert.ok(!(f in row), `${f} removed`);
      assert.ok('lastName' in row && 'recordNumber' in row);
    }
    const name = res.body.data[0].lastName as string;

    const fails = async (url: string, body: unknown, field: string) => {
      const r = await t.post(url, body, reader);
      const p = assertProblem(r, 'PII_FIELD_WITHHELD');
      assert.deepEqual(p.errors.map((e: { field: string }) => e.field), [field]);
    };
    await fails('/api/v3/employees/query', { select: ['id', 'birthDate'] }, 'select[1]');
    await fails('/api/v3/employees/query', { filters: { match: { field: 'salary', operator: '>', value: 0 } } }, 'filters.match.field');
    await fails('/api/v3/employees/query', { orderBy: ['email ASC'] }, 'orderBy[0]');
    await fails('/api/v3/employees/match', { matchString: 'Portland', matchFields: ['city'], select: ['id'], maxDistance: 1 }, 'matchFields[0]');
    await fails('/api/v3/employees/match', { matchString: name, matchFields: ['lastName'], select: ['payRate'], maxDistance: 1 }, 'select[0]');

    const match = await t.post('/api/v3/employees/match', { matchString: name, matchFields: ['lastName'], select: ['id', 'lastName'], maxDistance: 1 }, reader);
    assert.equal(match.status, 200, match.text);
    assert.ok(match.body.data.length > 0);

    // Other entities are untouched: a vendor's address is not employee PII.
    const vendors = await t.post('/api/v3/vendors/query', { select: ['id', 'city'], page: { pageSize: 1 } }, reader);
    assert.equal(vendors.status, 200, vendors.text);
  });

  test('with pii: the fields are back', async () => {
    const hr = await keyWith(['read', 'pii']);
    const res = await t.post('/api/v3/employees/query', { select: ['id', 'birthDate', 'payRate'], orderBy: ['email ASC'], page: { pageSize: 1 } }, hr);
    assert.equal(res.status, 200, res.text);
    assert.ok('birthDate' in res.body.data[0]);
  });

  test('scopes survive the maintenance lock (keys are served from the snapshot while locked)', async () => {
    const reader = await keyWith(['read']);
    assert.equal((await t.post('/api/v3/utility/lock', { userName: 'maint' }, t.adminKey)).status, 200);
    try {
      assertProblem(await t.post('/api/v3/utility/lock', { userName: 'r' }, reader), 'SCOPE_MISSING');
    } finally {
      assert.equal((await t.post('/api/v3/utility/un-lock', { userName: 'maint' }, t.adminKey)).status, 200);
    }
  });
});
