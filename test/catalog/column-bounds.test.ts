/**
 * Value bounds come from the SQL Server column types (the strictest engine): every field's
 * bounds are its compiled DDL column's, the public document (the validator's) carries them, and a
 * value that PostgreSQL would store but SQL Server would not (a timestamp past 9999-12-31 in UTC,
 * year 0, an int past int32, a smallint past 32767, text longer than the nvarchar) is refused with
 * 400 naming the field, on every engine.
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import knexFactory from 'knex';
import YAML from 'yaml';
import { CATALOG } from '../../generated/catalog';
import { columnTypes, parseCreateTable } from '../../scripts/lib/column-types';
import { checkValue, decimalMax, INTEGER_RANGES, isStorableDate, isStorableDateTime, isStorableText, LIKE_PATTERN_MAX_CHARACTERS, parseColumnType, TEXT_PATTERN } from '../../src/catalog/bounds';
import type { TestApp } from '../support/app';
import { useTestApp } from '../support/use-test-app';

const ROOT = path.resolve(__dirname, '..', '..');
const SNAPSHOT = fs.readFileSync(path.join(ROOT, 'test/fixtures/mssql-ddl.sql'), 'utf8');
const PUBLIC = YAML.parse(fs.readFileSync(path.join(ROOT, 'generated/openapi.public.yaml'), 'utf8'));

test('the column types are read from the SQL Server DDL: every catalog field carries its column type', () => {
  const types = columnTypes();
  const fromSnapshot = new Map<string, string>();
  for (const stmt of SNAPSHOT.split(';\n')) {
    const m = /^\s*CREATE TABLE \[(\w+)\]/.exec(stmt);
    if (m) for (const [col, type] of parseCreateTable(stmt)) fromSnapshot.set(`${m[1]}.${col}`, type);
    const add = /^\s*ALTER TABLE \[(\w+)\] ADD (.*)$/is.exec(stmt);
    if (add) for (const [col, type] of parseCreateTable(`(${add[2]})`)) fromSnapshot.set(`${add[1]}.${col}`, type);
  }
  assert.deepEqual(new Map([...types].sort()), new Map([...fromSnapshot].sort()), 'the generator reads what the DDL snapshot holds');
  let fields = 0;
  for (const e of Object.values(CATALOG)) {
    const all = [...Object.values(e.fields).map((f) => [e.table, f] as const), ...Object.values(e.children).flatMap((c) => Object.values(c.fields).map((f) => [c.table, f] as const))];
    for (const [table, f] of all) {
      assert.equal(f.sqlType, types.get(`${table}.${f.column}`), `${table}.${f.column}`);
      fields += 1;
    }
  }
  assert.ok(fields > 1000, `${fields} fields`);
});

test('no column uses the legacy datetime type (whose 1753-01-01 floor would need a tighter date bound)', () => {
  assert.doesNotMatch(SNAPSHOT, /\] datetime(?!2)\b/);
  assert.doesNotMatch(SNAPSHOT, /\] smalldatetime\b/);
});

test('the public document (loaded by the validator) carries every stored field its column bounds', () => {
  const schemas = PUBLIC.components.schemas;
  let bounded = 0;
  for (const e of Object.values(CATALOG)) {
    for (const f of Object.values(e.fields)) {
      const prop = schemas[e.schema].properties[f.name];
      const type = parseColumnType(f.sqlType);
      if (type.kind === 'integer') {
        assert.ok(prop.maximum <= type.max && prop.minimum >= type.min, `${e.schema}.${f.name} ${f.sqlType}`);
        bounded += 1;
      }
      if (type.kind === 'decimal') assert.ok(prop.maximum <= decimalMax(type.precision, type.scale), `${e.schema}.${f.name}`);
      if (type.kind === 'string' && prop.format === undefined && prop.enum === undefined) {
        if (type.maxLength !== undefined) assert.ok(prop.maxLength <= type.maxLength, `${e.schema}.${f.name} maxLength`);
        assert.ok(prop.pattern === TEXT_PATTERN || prop.allOf?.some((s: { pattern?: string }) => s.pattern === TEXT_PATTERN), `${e.schema}.${f.name} text pattern`);
      }
    }
  }
  assert.ok(bounded > 300, `${bounded} integer fields bounded`);
  // The write inputs (x-column: lgtnln.linnum, lgrtrn.actprd ...).
  assert.equal(schemas.JournalLineInput.properties.lineNumber.maximum, INTEGER_RANGES.int.max);
  assert.equal(schemas.JournalInput.properties.period.maximum, INTEGER_RANGES.smallint.max);
  assert.equal(schemas.JournalInput.properties.description.maxLength, 50);
  assert.equal(schemas.ApInvoiceLineInput.properties.costCode.maximum, 999999999999.999);
  // A request extra takes the bounds of the field it filters.
  assert.equal(schemas.ApInvoiceQueryRequest.properties.vendorNumber.maximum, INTEGER_RANGES.int.max);
});

test('the rule: dates and timestamps SQL Server stores, text PostgreSQL stores, SQL Server integer ranges', () => {
  for (const d of ['0001-01-01', '9999-12-31', '2024-02-29', '0004-02-29']) assert.ok(isStorableDate(d), d);
  for (const d of ['0000-01-01', '10000-01-01', '2026-02-30', '2026-02-29', '0100-02-29', '2026-13-01', '2026-00-10']) assert.ok(!isStorableDate(d), d);
  assert.ok(isStorableDateTime('9999-12-31T23:59:59.999Z'));
  // Fits PostgreSQL's timestamptz, not SQL Server's datetime2 (10000-01-01T04:00Z in UTC).
  assert.ok(!isStorableDateTime('9999-12-31T23:00:00-05:00'));
  assert.ok(!isStorableDateTime('0001-01-01T00:00:00+01:00'));
  assert.ok(!isStorableDateTime('2026-01-01T24:00:00Z'));
  assert.ok(isStorableText('pipe \u{1F527} ok\u0001'));
  for (const s of ['a\u0000', '\ud800', 'x\udfff', '\udc00\ud800']) assert.ok(!isStorableText(s), JSON.stringify(s));
  const smallint = parseColumnType('smallint');
  assert.equal(checkValue(smallint, 32767), undefined);
  assert.match(String(checkValue(smallint, 32768)), /-32768 to 32767/);
  assert.match(String(checkValue(parseColumnType('int'), 2 ** 31)), /2147483647/);
  assert.match(String(checkValue(parseColumnType('decimal(14, 2)'), 1e12)), /999999999999.99/);
  assert.match(String(checkValue(parseColumnType('decimal(14, 2)'), 1.005)), /2 decimal places/);
  assert.equal(checkValue(parseColumnType('decimal(14, 2)'), -999999999999.99), undefined);
  assert.match(String(checkValue(parseColumnType('nvarchar(20)'), 'x'.repeat(21))), /20 characters/);
  assert.equal(checkValue(parseColumnType('nvarchar(20)'), 'x'.repeat(21), { likePattern: true }), undefined);
  // A LIKE pattern: at most LIKE_PATTERN_MAX_CHARACTERS code points, whatever the column (decision 0462).
  assert.equal(checkValue(parseColumnType('nvarchar(20)'), '\u{1F527}'.repeat(LIKE_PATTERN_MAX_CHARACTERS), { likePattern: true }), undefined);
  assert.match(String(checkValue(parseColumnType('nvarchar(max)'), 'x'.repeat(LIKE_PATTERN_MAX_CHARACTERS + 1), { likePattern: true })), /at most 2000 characters/);
  assert.match(String(checkValue(parseColumnType('nvarchar(20)'), '\u{1F527}'.repeat(LIKE_PATTERN_MAX_CHARACTERS + 1), { likePattern: true })), /at most 2000 characters/);
  assert.equal(checkValue(parseColumnType('nvarchar(max)'), 'x'.repeat(100_000)), undefined);
});

test('the public document bounds every filter value by the LIKE pattern bound (decision 0462)', () => {
  assert.equal(PUBLIC.components.schemas.FilterValue.maxLength, LIKE_PATTERN_MAX_CHARACTERS);
});

let t: TestApp;
useTestApp((app) => (t = app));

test('through HTTP: values PostgreSQL would take but SQL Server would not are 400 naming the field', async () => {
  const cases: Array<[string, unknown, string]> = [
    ['/service-schedules/query', { filters: { match: { field: 'scheduledStart', operator: '>=', value: '9999-12-31T23:00:00-05:00' } } }, 'filters.match.value'],
    ['/service-schedules/query', { filters: { match: { field: 'scheduledStart', operator: 'IN', values: ['2026-01-01T00:00:00Z', '0000-06-01T00:00:00Z'] } } }, 'filters.match.values[1]'],
    ['/ap-invoices/query', { filters: { match: { field: 'period', operator: '=', value: 32768 } } }, 'filters.match.value'],
    ['/ap-invoices/query', { filters: { match: { field: 'invoiceNumber', operator: 'IN', values: ['a', 'x'.repeat(21)] } } }, 'filters.match.values[1]'],
    ['/ledger-transactions?dryRun=true', { transactionNumber: 'B1', transactionDate: '2026-11-14', sourceNumber: 1, period: 32768, year: 2026, lines: [{ lineNumber: 1, ledgerAccount: 1, debitAmount: 1 }] }, 'period'],
    ['/ledger-transactions?dryRun=true', { transactionNumber: 'B1', transactionDate: '2026-11-14', sourceNumber: 1, description: 'x'.repeat(51), lines: [{ lineNumber: 1, ledgerAccount: 1, debitAmount: 1 }] }, 'description'],
    ['/ap-invoices?dryRun=true', { vendorNumber: 1, invoiceNumber: 'I1', invoiceDate: '2026-11-14', invoiceTotal: 1, lines: [{ lineNumber: 1, extendedTotal: 1, quantity: 1e10 }] }, 'lines[0].quantity'],
  ];
  for (const [route, body, field] of cases) {
    const res = await t.post(`/api/v3${route}`, body);
    assert.equal(res.status, 400, `${route} ${JSON.stringify(body).slice(0, 200)}: ${res.text}`);
    assert.equal(res.headers['x-error-code'], 'VALIDATION_FAILED');
    assert.ok(res.body.errors.some((e: { field: string }) => e.field === field), `${field} named: ${res.text}`);
  }
  // The boundaries themselves are accepted.
  const ok = await t.post('/api/v3/service-schedules/query', { filters: { match: { field: 'scheduledStart', operator: '<=', value: '9999-12-31T23:59:59Z' } } });
  assert.equal(ok.status, 200, ok.text);
  // An astral character is one code point: the text pattern (compiled with the u flag) takes it.
  const astral = await t.post('/api/v3/ledger-transactions?dryRun=true', { transactionNumber: 'B2', transactionDate: '2026-11-14', sourceNumber: 1, description: 'Rent \u{1F527}'.padEnd(49, 'x'), lines: [{ lineNumber: 1, ledgerAccount: 1, debitAmount: 1 }] });
  assert.ok(!(astral.body.errors ?? []).some((e: { field: string }) => e.field === 'description'), astral.text);
  const okSmall = await t.post('/api/v3/ap-invoices/query', { filters: { match: { field: 'period', operator: 'IN', values: [-32768, 32767] } } });
  assert.equal(okSmall.status, 200, okSmall.text);
});

test('the knex SQL Server compiler is what the generator uses (no connection needed)', async () => {
  const mssql = knexFactory({ client: 'mssql' });
  try {
    const sql = mssql.schema.createTable('probe', (tb) => {
      tb.smallint('a');
      tb.string('b', 7);
    }).toString();
    assert.deepEqual(parseCreateTable(sql), [['a', 'smallint'], ['b', 'nvarchar(7)']]);
  } finally {
    await mssql.destroy();
  }
});
