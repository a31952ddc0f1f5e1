/**
 * One person's pay held outside /employees is employee personal data too (src/catalog/pii.ts,
 * docs/decisions/0455-pay-outside-employees-is-pii.md; the audit's OWASP API3 finding): a key
 * created with scopes but without `pii` reads payroll records (and their timecard lines),
 * paychecks (and their lines), quarterly earnings, daily payroll lines, benefits and deductions
 * without the pay fields, and naming one (select, filters, orderBy, `collection.field` included)
 * is 400 PII_FIELD_WITHHELD naming it, on /api/v3 and /api/v2. A key with `pii` and an unscoped
 * key (the spec's key, Authentication rule 6) still read everything. Job costs are untouched.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, type TestApp } from '../support/app';
import { assertProblem } from '../support/http';
import type { Scope } from '../../src/auth/scopes';
import { PII_FIELDS } from '../../src/catalog/pii';
import { CATALOG } from '../../generated/catalog';

let t: TestApp;
const keyWith = async (scopes: Scope[]) => (await t.services.keys.create(`pay ${scopes.join(',')}`, 'integration', undefined, scopes)).key;
let reader: string;
let hr: string;

/** The audit's list, written out here (not read from src/catalog/pii.ts): entity -> header fields, child fields, v2 name. */
const PAY: ReadonlyArray<{ entity: string; v2: string; fields: string[]; children: Record<string, string[]> }> = [
  { entity: 'payroll-records', v2: 'payroll-record', fields: ['grossPay', 'deductions', 'netPay'], children: { lines: ['payRate', 'amount'] } },
  { entity: 'paychecks', v2: 'paycheck', fields: ['grossPay', 'totalDeductions', 'netPay'], children: { lines: ['rate', 'amount', 'yearToDate'] } },
  {
    entity: 'employee-earnings',
    v2: 'employee-earning',
    fields: ['grossPay', 'federalWithholding', 'stateWithholding', 'socialSecurity', 'medicare', 'netPay'],
    children: {},
  },
  { entity: 'daily-payrolls', v2: 'daily-payroll', fields: [], children: { lines: ['payRate'] } },
  { entity: 'benefits', v2: 'benefit', fields: ['rate', 'maximumAmount', 'yearToDate'], children: {} },
  { entity: 'payroll-deductions', v2: 'payroll-deduction', fields: ['amount', 'rate', 'maximumAmount', 'yearToDate'], children: {} },
];

/** Every withheld name of an entity as a request names it (`lines.payRate` for a child's). */
const namesOf = (e: (typeof PAY)[number]) => [...e.fields, ...Object.entries(e.children).flatMap(([c, fs]) => fs.map((f) => `${c}.${f}`))];

before(async () => {
  t = await startTestApp({ config: { rateLimitPerMinute: 0 } });
  reader = await keyWith(['read']);
  hr = await keyWith(['read', 'pii']);
});
after(() => t.close());

type Row = Record<string, unknown>;

test('every name of the PII list is a field of its entity or of one of its child collections (a typo would withhold nothing)', () => {
  for (const [name, fields] of Object.entries(PII_FIELDS)) {
    const entity = CATALOG[name];
    assert.ok(entity, `${name} is an entity`);
    for (const field of fields) {
      const [first, rest] = field.split('.', 2) as [string, string | undefined];
      if (rest === undefined) assert.ok(Object.hasOwn(entity.fields, first), `${name}.${field}`);
      else assert.ok(entity.children[first] && Object.hasOwn(entity.children[first].fields, rest), `${name}.${field}`);
    }
  }
  for (const e of PAY) assert.deepEqual([...(PII_FIELDS[e.entity] ?? [])].sort(), namesOf(e).sort(), `${e.entity}: the list is the audit's`);
});

/** A default read (no select) of the entity with all its children, asserting there is something to look at. */
async function readAll(entity: (typeof PAY)[number], key: string | undefined): Promise<Row[]> {
  const children = Object.keys(entity.children);
  const res = await t.post(`/api/v3/${entity.entity}/query`, { ...(children.length > 0 ? { children } : {}), page: { pageSize: 50 } }, key);
  assert.equal(res.status, 200, `${entity.entity}: ${res.text}`);
  const rows = res.body.data as Row[];
  assert.ok(rows.length > 0, `${entity.entity}: the demo company has rows`);
  for (const c of children) assert.ok(rows.some((r) => (r[c] as Row[]).length > 0), `${entity.entity}: some ${c}`);
  return rows;
}

describe('a key without pii: pay outside /employees is withheld', () => {
  test('the audit request: payroll records with lines.payRate, earnings with grossPay are 400 PII_FIELD_WITHHELD naming each field', async () => {
    const payroll = await t.post('/api/v3/payroll-records/query', { select: ['employeeNumber', 'grossPay', 'lines.payRate'], children: ['lines'] }, reader);
    const p = assertProblem(payroll, 'PII_FIELD_WITHHELD');
    assert.deepEqual(
      p.errors.map((e: { field: string }) => e.field),
      ['select[1]', 'select[2]'],
    );
    assert.match(JSON.stringify(p.errors), /lines\.payRate/);
    const earnings = await t.post('/api/v3/employee-earnings/query', { select: ['employeeNumber', 'grossPay', 'federalWithholding', 'netPay'] }, reader);
    assert.deepEqual(
      assertProblem(earnings, 'PII_FIELD_WITHHELD').errors.map((e: { field: string }) => e.field),
      ['select[1]', 'select[2]', 'select[3]'],
    );
  });

  test('a default read (no select, every child collection) has none of the pay fields, and keeps the rest', async () => {
    for (const entity of PAY) {
      const rows = await readAll(entity, reader);
      for (const row of rows) {
        for (const f of entity.fields) assert.ok(!(f in row), `${entity.entity}: ${f} withheld`);
        assert.ok('recordNumber' in row, `${entity.entity}: recordNumber kept`);
        for (const [c, fs] of Object.entries(entity.children)) {
          for (const line of row[c] as Row[]) {
            for (const f of fs) assert.ok(!(f in line), `${entity.entity}: ${c}.${f} withheld`);
            assert.ok('lineNumber' in line, `${entity.entity}: ${c}.lineNumber kept`);
          }
        }
      }
    }
  });

  test('naming a pay field in select, filters or orderBy (collection.field too) is 400 PII_FIELD_WITHHELD naming it', async () => {
    for (const entity of PAY) {
      const children = Object.keys(entity.children);
      for (const name of namesOf(entity)) {
        const fails = async (body: Row, field: string) => {
          const res = await t.post(`/api/v3/${entity.entity}/query`, { ...(children.length > 0 ? { children } : {}), ...body }, reader);
          const p = assertProblem(res, 'PII_FIELD_WITHHELD');
          assert.deepEqual(
            p.errors.map((e: { field: string }) => e.field),
            [field],
            `${entity.entity} ${name}`,
          );
          assert.ok(p.errors[0].message.includes(`"${name}"`), `${entity.entity}: the error names ${name}`);
        };
        await fails({ select: ['recordNumber', name] }, 'select[1]');
        await fails({ filters: { match: { field: name, operator: '>', value: 0 } } }, 'filters.match.field');
        // orderBy's pattern (openapi.yaml) takes no dotted name: child rows are never ordered, whoever asks.
        if (!name.includes('.')) await fails({ orderBy: [`${name} DESC`] }, 'orderBy[0]');
      }
    }
  });

  test('/api/v2 is no back door: withChildren reads without the pay fields; naming one is PII_FIELD_WITHHELD', async () => {
    for (const entity of PAY) {
      const res = await t.post(`/api/v2/query/${entity.v2}`, { withChildren: true, pageSize: 50 }, reader);
      assert.equal(res.status, 200, `${entity.v2}: ${res.text}`);
      assert.ok(res.body.data.length > 0, entity.v2);
      for (const row of res.body.data as Row[]) {
        for (const f of entity.fields) assert.ok(!(f in row), `v2 ${entity.v2}: ${f} withheld`);
        for (const [c, fs] of Object.entries(entity.children)) for (const line of row[c] as Row[]) for (const f of fs) assert.ok(!(f in line), `v2 ${entity.v2}: ${c}.${f} withheld`);
      }
      for (const name of namesOf(entity)) {
        const refused = await t.post(`/api/v2/query/${entity.v2}`, { withChildren: true, selectFields: ['recordNumber', name] }, reader);
        assert.equal(refused.status, 400, `v2 ${entity.v2} ${name}: ${refused.text}`);
        assert.equal(refused.body.errorCode, 'PII_FIELD_WITHHELD');
        assert.deepEqual(
          refused.body.errors.map((e: { field: string }) => e.field),
          ['selectFields[1]'],
        );
        const filtered = await t.post(`/api/v2/query/${entity.v2}`, { filter: { match: { field: name, operator: '>', value: 0 } } }, reader);
        assert.equal(filtered.body.errorCode, 'PII_FIELD_WITHHELD', `v2 ${entity.v2} filter ${name}: ${filtered.text}`);
      }
    }
  });

  test('job costs stay readable: the labor cost of a job line is a cost record, not a pay field (decision 0455)', async () => {
    const res = await t.post(
      '/api/v3/job-costs/query',
      { select: ['jobNumber', 'employeeNumber', 'costAmount', 'costHours'], filters: { match: { field: 'employeeNumber', operator: '>', value: 0 } }, orderBy: ['costAmount DESC'], page: { pageSize: 5 } },
      reader,
    );
    assert.equal(res.status, 200, res.text);
    assert.ok(res.body.data.length > 0 && 'costAmount' in res.body.data[0]);
  });
});

describe('a key with pii, and an unscoped key (the spec), read every pay field', () => {
  for (const [who, key] of [
    ['with pii', () => hr],
    ['unscoped', () => undefined],
  ] as const) {
    test(`${who}: the default read has every pay field, child fields included; select, filters and orderBy may name them`, async () => {
      for (const entity of PAY) {
        const rows = await readAll(entity, key());
        for (const row of rows) {
          for (const f of entity.fields) assert.ok(f in row, `${who} ${entity.entity}: ${f}`);
          for (const [c, fs] of Object.entries(entity.children)) for (const line of row[c] as Row[]) for (const f of fs) assert.ok(f in line, `${who} ${entity.entity}: ${c}.${f}`);
        }
        const children = Object.keys(entity.children);
        const header = entity.fields[0];
        const res = await t.post(
          `/api/v3/${entity.entity}/query`,
          {
            ...(children.length > 0 ? { children } : {}),
            select: ['recordNumber', ...namesOf(entity)],
            ...(header ? { filters: { match: { field: header, operator: '>=', value: 0 } }, orderBy: [`${header} DESC`] } : {}),
            page: { pageSize: 5 },
          },
          key(),
        );
        assert.equal(res.status, 200, `${who} ${entity.entity}: ${res.text}`);
        assert.ok(res.body.data.length > 0, `${who} ${entity.entity}`);
      }
    });
  }

  test('the audit request answers with the pay rate for employee 101 to a key with pii', async () => {
    const res = await t.post(
      '/api/v3/payroll-records/query',
      { select: ['employeeNumber', 'grossPay', 'lines.payRate'], children: ['lines'], filters: { match: { field: 'employeeNumber', operator: '=', value: 101 } } },
      hr,
    );
    assert.equal(res.status, 200, res.text);
    assert.ok(res.body.data.length > 0);
    assert.ok(res.body.data.some((r: Row) => (r.lines as Row[]).some((l) => l.payRate !== undefined)));
  });
});
