/**
 * A column the installed build lacks (spec, Errors, 422: "a column the installed build lacks";
 * issue 25). Customers run older builds of the accounting system, whose tables lack columns later
 * builds added. The service learns the installed schema at start (and again when the database
 * reports a missing column, and after the maintenance lock is released):
 *   - a read that names such a column (select, filters, orderBy, a child field, matchFields, match
 *     select) answers 422 COLUMN_UNAVAILABLE naming the field, before any database trip;
 *   - a read that does not name it answers 200 without it (the default select leaves it out);
 *   - a write whose cascade needs it answers 422 naming it and writes nothing; a column the write
 *     has nothing for is left out of the insert (docs/decisions/0230-writes-on-an-older-build.md);
 *   - a column dropped while the service runs: 422 on the first request that hits it, never 500.
 * HTTP parts run on TEST_ENGINE (SQLite, PostgreSQL); the pure parts check the SQL Server error
 * mapping (error numbers 207, 208) and the introspection T-SQL knex compiles.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import knexFactory, { type Knex } from 'knex';
import pino from 'pino';
import { startTestApp, type TestApp } from '../support/app';
import { assertProblem } from '../support/http';
import { CATALOG } from '../../generated/catalog';
import { ApiProblem } from '../../src/errors/problem';
import { Boundary, classifyDatabaseError, toDatabaseProblem } from '../../src/storage/boundary';
import { installedColumnsQuery, InstalledSchema } from '../../src/storage/installed-schema';
import { openDatabase, parseDatabaseUrl } from '../../src/storage/database';
import { expectedColumns, installedView, missingColumnProblem, type InstalledColumns } from '../../src/catalog/installed';
import { planQuery } from '../../src/engines/query/plan';
import { planMatch } from '../../src/engines/match/run';
import { recordRow } from '../../src/engines/posting/write-rows';
import { resultFieldsUnavailable } from '../../src/engines/posting/needs';
import { dialectFor } from '../../src/storage/dialect';

const err = (message: string, props: Record<string, unknown> = {}): Error => Object.assign(new Error(message), props);
const mssqlRequestError = (number: number, message: string) =>
  Object.assign(err(message, { name: 'RequestError', code: 'EREQUEST', number }), { originalError: err(message, { number, info: { number, message } }) });

/** A fake installed build lacking `table.column` of `missing`. */
function lacking(...missing: string[]): InstalledColumns {
  return { generation: 1, lacks: (table, column) => missing.includes(`${table}.${column}`) };
}

/** What plan/check threw (an ApiProblem). */
function thrown(fn: () => unknown): ApiProblem {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof ApiProblem, String(e));
    return e;
  }
  assert.fail('did not throw');
}

const OPTIONS = { maxFilterDepth: 32 };

describe('the engine reports a missing column or table: 422 COLUMN_UNAVAILABLE, never 500', () => {
  test('SQL Server: error 207 (invalid column name) and 208 (invalid object name)', () => {
    assert.deepEqual(classifyDatabaseError(mssqlRequestError(207, "Invalid column name 'manprt'."), 'mssql'), { kind: 'missing', column: 'manprt' });
    assert.deepEqual(classifyDatabaseError(mssqlRequestError(208, "Invalid object name 'dbo.tkfprt'."), 'mssql'), { kind: 'missing', table: 'tkfprt' });
    // tedious alone (not wrapped by mssql): the number on the error itself.
    assert.deepEqual(classifyDatabaseError(err("Invalid column name 'eqpnum'.", { number: 207 }), 'mssql'), { kind: 'missing', column: 'eqpnum' });
    const problem = toDatabaseProblem(mssqlRequestError(207, "Invalid column name 'manprt'."), 'mssql')!;
    assert.equal(problem.code, 'COLUMN_UNAVAILABLE');
    assert.equal(problem.status, 422);
    assert.match(problem.detail, /manprt/);
  });

  test('PostgreSQL: 42703 undefined_column (select and insert wording) and 42P01 undefined_table', () => {
    const pg = (code: string, message: string) => err(message, { code, severity: 'ERROR' });
    assert.deepEqual(classifyDatabaseError(pg('42703', 'column b.manprt does not exist'), 'postgres'), { kind: 'missing', column: 'manprt' });
    assert.deepEqual(classifyDatabaseError(pg('42703', 'column "ordnum" of relation "acpinv" does not exist'), 'postgres'), { kind: 'missing', column: 'ordnum', table: 'acpinv' });
    assert.deepEqual(classifyDatabaseError(pg('42P01', 'relation "tkfprt" does not exist'), 'postgres'), { kind: 'missing', table: 'tkfprt' });
    assert.equal(toDatabaseProblem(pg('42703', 'column b.manprt does not exist'), 'postgres')!.status, 422);
  });

  test('SQLite: "no such column", "has no column named", "no such table" (SQLITE_ERROR); other SQLITE_ERRORs stay unexpected', () => {
    const sqlite = (message: string) => err(message, { code: 'SQLITE_ERROR' });
    assert.deepEqual(classifyDatabaseError(sqlite('no such column: b.manprt'), 'sqlite'), { kind: 'missing', column: 'manprt' });
    assert.deepEqual(classifyDatabaseError(sqlite('table acpinv has no column named ordnum'), 'sqlite'), { kind: 'missing', table: 'acpinv', column: 'ordnum' });
    assert.deepEqual(classifyDatabaseError(sqlite('no such table: main.tkfprt'), 'sqlite'), { kind: 'missing', table: 'tkfprt' });
    assert.equal(classifyDatabaseError(sqlite('near "selct": syntax error'), 'sqlite'), undefined);
  });

  test('through the boundary: the installed schema is read again and the 422 names the published field', async () => {
    const knex = { client: { config: {} } } as unknown as Knex;
    let asked: unknown;
    const boundary = new Boundary({
      knex,
      engine: 'mssql',
      logger: pino({ level: 'silent' }),
      deadlineMs: 5000,
      missingProblem: async (failure) => {
        asked = failure;
        return missingColumnProblem(CATALOG, [{ table: 'tkfprt', column: 'manprt' }], failure);
      },
    });
    await assert.rejects(
      boundary.read(async () => {
        throw mssqlRequestError(207, "Invalid column name 'manprt'.");
      }),
      (e: unknown) => {
        assert.ok(e instanceof ApiProblem && e.code === 'COLUMN_UNAVAILABLE', String(e));
        assert.deepEqual(e.extensions.unavailableFields, ['parts.manufacturerPartNumber']);
        assert.match(e.detail, /parts\.manufacturerPartNumber/);
        return true;
      },
    );
    assert.deepEqual(asked, { kind: 'missing', column: 'manprt' });
  });
});

describe('the introspection SQL, compiled', () => {
  test('SQL Server: sys.columns joined to sys.tables of the default schema, the catalog tables as parameters', () => {
    const mssql = knexFactory({ client: 'mssql' });
    try {
      const tables = [...expectedColumns(CATALOG).keys()];
      const compiled = installedColumnsQuery(mssql, 'mssql', tables).toSQL().toNative();
      assert.equal(
        compiled.sql,
        `select [t].[name] as [table_name], [c].[name] as [column_name] from [sys].[columns] as [c] inner join [sys].[tables] as [t] on [t].[object_id] = [c].[object_id] where [t].[schema_id] = schema_id() and [t].[name] in (${tables.map((_, i) => `@p${i}`).join(', ')})`,
      );
      assert.deepEqual(compiled.bindings, tables);
      assert.ok(tables.length > 100 && tables.length < 2100, `${tables.length} tables, under SQL Server's 2,100 parameters`);
      assert.ok(tables.includes('tkfprt') && tables.includes('apivln'));
    } finally {
      void mssql.destroy();
    }
  });

  test('PostgreSQL: information_schema.columns of the current schema; SQLite: pragma_table_info', () => {
    const pg = knexFactory({ client: 'pg' });
    const sqlite = knexFactory({ client: 'better-sqlite3', useNullAsDefault: true });
    try {
      assert.equal(
        installedColumnsQuery(pg, 'postgres', ['tkfprt']).toString(),
        `select "table_name", "column_name" from "information_schema"."columns" where "table_schema" = current_schema() and "table_name" in ('tkfprt')`,
      );
      assert.equal(
        installedColumnsQuery(sqlite, 'sqlite', ['tkfprt']).toString(),
        "select `m`.`name` as `table_name`, `p`.`name` as `column_name` from sqlite_master as m, pragma_table_info(m.name) as p where `m`.`type` = 'table' and `m`.`name` in ('tkfprt')",
      );
    } finally {
      void pg.destroy();
      void sqlite.destroy();
    }
  });
});

describe('plans against the installed build (pure)', () => {
  const parts = CATALOG.parts!;
  const invoices = CATALOG['ap-invoices']!;

  test('a change stamp whose column is missing is 422 at lastUpdated (not 501: the entity has it, the build does not)', () => {
    const p = thrown(() => planQuery(installedView(parts, lacking('tkfprt.upddte')), { lastUpdated: '2026-01-01' }, OPTIONS));
    assert.equal(p.code, 'COLUMN_UNAVAILABLE');
    assert.deepEqual(p.errors?.map((e) => e.field), ['lastUpdated']);
  });

  test('a request extra on a missing field is 422 at the extra', () => {
    const p = thrown(() => planQuery(installedView(invoices, lacking('acpinv.duedte')), { dueOnOrBefore: '2026-12-31' }, OPTIONS));
    assert.equal(p.code, 'COLUMN_UNAVAILABLE');
    assert.deepEqual(p.errors?.map((e) => e.field), ['dueOnOrBefore']);
    assert.deepEqual(p.extensions.unavailableFields, ['ap-invoices.dueDate']);
  });

  test('a child collection without its link is unavailable as a whole; a missing child field only when named', () => {
    const noLink = installedView(invoices, lacking('apivln._idref'));
    assert.deepEqual(thrown(() => planQuery(noLink, { children: ['lines'] }, OPTIONS)).errors?.map((e) => e.field), ['children[0]']);
    const noEquipment = installedView(invoices, lacking('apivln.eqpnum'));
    const plan = planQuery(noEquipment, { children: ['lines'] }, OPTIONS);
    assert.ok(!Object.hasOwn(plan.children[0]!.fields, 'equipmentNumber'));
    assert.ok(Object.hasOwn(plan.children[0]!.fields, 'costCode'));
    const p = thrown(() => planQuery(noEquipment, { children: ['lines'], select: ['recordNumber', 'lines.equipmentNumber'] }, OPTIONS));
    assert.equal(p.code, 'COLUMN_UNAVAILABLE');
    assert.deepEqual(p.errors?.map((e) => e.field), ['select[1]']);
    assert.deepEqual(p.extensions.unavailableFields, ['ap-invoices.lines.equipmentNumber']);
  });

  test('without its key (or table) nothing of an entity is readable: 422 for a query and a match', () => {
    const view = installedView(parts, lacking('tkfprt._idnum'));
    assert.equal(thrown(() => planQuery(view, {}, OPTIONS)).code, 'COLUMN_UNAVAILABLE');
    assert.equal(thrown(() => planMatch(view, { matchString: 'pipe', matchFields: ['partName'], select: ['partCode'], maxDistance: 2 }, OPTIONS)).code, 'COLUMN_UNAVAILABLE');
  });

  test('a request that is wrong otherwise answers that first (400), COLUMN_UNAVAILABLE only when nothing else is', () => {
    const view = installedView(parts, lacking('tkfprt.manprt'));
    const p = thrown(() => planQuery(view, { select: ['manufacturerPartNumber', 'noSuchField'] }, OPTIONS));
    assert.equal(p.code, 'UNKNOWN_FIELD');
    assert.deepEqual(p.errors?.map((e) => e.field), ['select[1]']);
  });

  test('nothing missing: the catalog entity itself (no copy)', () => {
    assert.equal(installedView(parts, lacking('acpinv.ordnum')), parts);
    assert.equal(installedView(parts, { generation: 0, lacks: () => true }), parts, 'generation 0: the schema was never found lacking anything');
  });
});

describe('what a write needs (pure)', () => {
  const ctx = (installed: InstalledColumns) => ({ dialect: dialectFor('sqlite'), user: 'api:test', installed });

  test('a column the write has nothing for is left out of the insert; a value for it is 422 naming the field', () => {
    const row = recordRow(ctx(lacking('acpinv.ordnum')), 'ap-invoices', { recordNumber: 1, orderNumber: null });
    assert.ok(!Object.hasOwn(row, 'ordnum'));
    assert.equal(row.recnum, 1);
    const p = thrown(() => recordRow(ctx(lacking('acpinv.ordnum')), 'ap-invoices', { recordNumber: 1, orderNumber: 'PO-7' }));
    assert.equal(p.code, 'COLUMN_UNAVAILABLE');
    assert.deepEqual(p.extensions.unavailableFields, ['ap-invoices.orderNumber']);
  });

  test('the fields a write result promises (PostedApInvoice required) are needed, before any SQL', () => {
    assert.deepEqual(resultFieldsUnavailable('/ap-invoices', lacking('acpinv.retain')), ['ap-invoices.retainage']);
    assert.deepEqual(resultFieldsUnavailable('/ap-invoices', lacking('jobcst.cstamt')), ['job-costs.costAmount']);
    assert.equal(resultFieldsUnavailable('/ap-invoices', lacking('acpinv.ordnum')), undefined, 'orderNumber is not promised');
    assert.equal(resultFieldsUnavailable('/ledger-transactions', lacking('acpinv.retain')), undefined, 'a journal holds no AP invoice');
  });
});

// ---------------------------------------------------------------------------------- HTTP

/** Counts the database trips of the boundary (reads, claims, allocations, posting transactions) while `fn` runs. */
async function tripsDuring(t: TestApp, fn: () => Promise<void>): Promise<number> {
  const b = t.services.boundary;
  const within = b.within;
  const transaction = b.transaction;
  let trips = 0;
  b.within = function (this: Boundary, ...args: Parameters<Boundary['within']>) {
    trips += 1;
    return within.apply(this, args);
  } as Boundary['within'];
  b.transaction = function (this: Boundary, ...args: Parameters<Boundary['transaction']>) {
    trips += 1;
    return transaction.apply(this, args);
  } as Boundary['transaction'];
  try {
    await fn();
  } finally {
    b.within = within;
    b.transaction = transaction;
  }
  return trips;
}

/** Starts a second service on the database of `t` (the first one detached): a restart. */
async function restart(t: TestApp): Promise<TestApp> {
  const url = t.services.config.databaseUrl;
  await t.detach();
  return startTestApp({ databaseUrl: url });
}

const count = async (knex: Knex, table: string): Promise<number> => Number((await knex(table).count({ n: '*' }))[0]!.n);
const BOOKS = ['acpinv', 'apivln', 'lgrtrn', 'lgtnln', 'jobcst'] as const;
async function counts(knex: Knex): Promise<Record<string, number>> {
  return Object.fromEntries(await Promise.all(BOOKS.map(async (table) => [table, await count(knex, table)] as const)));
}

/** An AP invoice on the demo company (vendor 19, job 2603 phase 5: the contract's example). */
function invoice(number: string, header: Record<string, unknown> = {}, line: Record<string, unknown> = {}) {
  return {
    vendorNumber: 19,
    invoiceNumber: number,
    invoiceDate: '2026-11-14',
    jobNumber: 2603,
    phaseNumber: 5,
    invoiceTotal: 850.0,
    ...header,
    lines: [{ lineNumber: 1, costCode: 15.1, costType: 1, quantity: 100, unitPrice: 8.5, extendedTotal: 850.0, ...line }],
  };
}

const INSTALLED_LACKS = /installed build of the accounting database lacks columns/;

describe('restarted on a build without parts.manufacturerPartNumber, ap-invoices lines.equipmentNumber and proposal lines', () => {
  let t: TestApp;
  before(async () => {
    const first = await startTestApp();
    // Dropped while the first service runs, then the service restarts.
    await first.knex.schema.alterTable('tkfprt', (tb) => tb.dropColumn('manprt'));
    await first.knex.schema.alterTable('apivln', (tb) => tb.dropColumn('eqpnum'));
    await first.knex.schema.dropTable('prplin');
    t = await restart(first);
  });
  after(() => t?.close());

  test('the log names the missing columns once, at start; /readyz stays 200', async () => {
    const lines = t.logs.filter((l) => INSTALLED_LACKS.test(String(l.msg)));
    assert.equal(lines.length, 1, JSON.stringify(lines));
    const missing: string[] = lines[0]!.missingColumns;
    assert.ok(missing.includes('apivln.eqpnum (ap-invoices.lines.equipmentNumber)') && missing.includes('tkfprt.manprt (parts.manufacturerPartNumber)'), JSON.stringify(missing));
    assert.ok(missing.includes('prplin._idref') && missing.includes('prplin.dscrpt (proposals.lines.description)'), JSON.stringify(missing));
    assert.ok(missing.every((m) => /^(tkfprt\.manprt|apivln\.eqpnum|prplin\.)/.test(m)), JSON.stringify(missing));
    assert.equal((await t.http.get('/readyz')).status, 200);
  });

  test('a query naming the column (select, filter, orderBy) is 422 naming the field, before any database trip', async () => {
    const cases: Array<[unknown, string]> = [
      [{ select: ['partCode', 'manufacturerPartNumber'] }, 'select[1]'],
      [{ filters: { match: { field: 'manufacturerPartNumber', operator: 'LIKE', value: '67%' } } }, 'filters.match.field'],
      [{ filters: { and: [{ match: { field: 'partCode', operator: '=', value: 'X' } }, { match: { field: 'manufacturerPartNumber', operator: 'IN', values: ['a'] } }] } }, 'filters.and[1].match.field'],
      [{ orderBy: ['manufacturerPartNumber DESC'] }, 'orderBy[0]'],
    ];
    for (const [body, field] of cases) {
      let res: any;
      assert.equal(await tripsDuring(t, async () => void (res = await t.post('/api/v3/parts/query', body))), 0, `no database trip for ${JSON.stringify(body)}`);
      const p = assertProblem(res, 'COLUMN_UNAVAILABLE', '/api/v3/parts/query');
      assert.deepEqual(p.errors.map((e: { field: string }) => e.field), [field]);
      assert.equal(p.errors[0].code, 'column_unavailable');
      assert.match(p.detail, /manufacturerPartNumber/);
      assert.deepEqual(p.unavailableFields, ['parts.manufacturerPartNumber']);
    }
  });

  test('a child field named in select is 422; match naming it (matchFields, select) is 422', async () => {
    let p = assertProblem(await t.post('/api/v3/ap-invoices/query', { children: ['lines'], select: ['recordNumber', 'lines.equipmentNumber'] }), 'COLUMN_UNAVAILABLE');
    assert.deepEqual(p.errors.map((e: { field: string }) => e.field), ['select[1]']);
    assert.deepEqual(p.unavailableFields, ['ap-invoices.lines.equipmentNumber']);
    const match = (body: unknown) => t.post('/api/v3/parts/match', body);
    p = assertProblem(await match({ matchString: '67-8388', matchFields: ['partCode', 'manufacturerPartNumber'], select: ['partCode'], maxDistance: 1 }), 'COLUMN_UNAVAILABLE');
    assert.deepEqual(p.errors.map((e: { field: string }) => e.field), ['matchFields[1]']);
    p = assertProblem(await match({ matchString: 'pipe', matchFields: ['partName'], select: ['partCode', 'manufacturerPartNumber'], maxDistance: 2 }), 'COLUMN_UNAVAILABLE');
    assert.deepEqual(p.errors.map((e: { field: string }) => e.field), ['select[1]']);
  });

  test('a read that does not name it answers 200 without it (default select, children, match), valid against the contract', async () => {
    const page = await t.post('/api/v3/parts/query', { page: { pageSize: 5 } });
    assert.equal(page.status, 200, JSON.stringify(page.body));
    assert.equal(page.body.data.length, 5);
    for (const part of page.body.data) {
      assert.ok(!('manufacturerPartNumber' in part), JSON.stringify(part));
      assert.ok('partName' in part && 'manufacturer' in part);
    }
    const invoices = await t.post('/api/v3/ap-invoices/query', { children: ['lines'], orderBy: ['recordNumber ASC'], page: { pageSize: 3 } });
    assert.equal(invoices.status, 200, JSON.stringify(invoices.body));
    const lines = invoices.body.data.flatMap((i: { lines: unknown[] }) => i.lines) as Array<Record<string, unknown>>;
    assert.ok(lines.length > 0);
    for (const line of lines) assert.ok(!('equipmentNumber' in line) && 'costCode' in line, JSON.stringify(line));
    const matched = await t.post('/api/v3/parts/match', { matchString: 'Plate', matchFields: ['partName', 'partCode'], select: ['partCode', 'partName'], maxDistance: 10 });
    assert.equal(matched.status, 200, JSON.stringify(matched.body));
    assert.ok(matched.body.data.length > 0);
    // Nothing was found missing through the database itself: the schema read at start answered.
    assert.equal(t.logs.filter((l) => /reported a missing column/.test(String(l.msg))).length, 0);
  });

  test('a child table the build lacks: its collection named in children is 422 before SQL; the records answer without it', async () => {
    let res: any;
    assert.equal(await tripsDuring(t, async () => void (res = await t.post('/api/v3/proposals/query', { children: ['lines'] }))), 0);
    const p = assertProblem(res, 'COLUMN_UNAVAILABLE');
    assert.deepEqual(p.errors.map((e: { field: string }) => e.field), ['children[0]']);
    assert.deepEqual(p.unavailableFields, ['proposals.lines']);
    const page = await t.post('/api/v3/proposals/query', { page: { pageSize: 2 } });
    assert.equal(page.status, 200, JSON.stringify(page.body));
    assert.ok(page.body.data.length > 0 && !('lines' in page.body.data[0]));
  });

  test('a write the build can live without: the AP invoice posts without equipmentNumber on its lines', async () => {
    const before = await counts(t.knex);
    const res = await t.post('/api/v3/ap-invoices', invoice('OLD-BUILD-1'));
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.ok(!('equipmentNumber' in res.body.document.lines[0]));
    const after = await counts(t.knex);
    assert.equal(after.acpinv, before.acpinv! + 1);
    assert.equal(after.apivln, before.apivln! + 1);
  });

  test('a write that needs the column (a line with an equipment number) is 422 naming it; nothing written', async () => {
    const equipment = Number((await t.knex('eqpmnt').orderBy('recnum').first('recnum')).recnum);
    const before = await counts(t.knex);
    const res = await t.post('/api/v3/ap-invoices', invoice('OLD-BUILD-2', {}, { equipmentNumber: equipment }));
    const p = assertProblem(res, 'COLUMN_UNAVAILABLE', '/api/v3/ap-invoices');
    assert.deepEqual(p.unavailableFields, ['ap-invoices.lines.equipmentNumber']);
    assert.match(p.detail, /ap-invoices\.lines\.equipmentNumber/);
    assert.deepEqual(await counts(t.knex), before);
    assert.equal(await t.knex('acpinv').where({ invnum: 'OLD-BUILD-2' }).first(), undefined);
  });
});

describe('a write whose result needs the column (ap-invoices.retainage) on a restarted service', () => {
  let t: TestApp;
  before(async () => {
    const first = await startTestApp();
    await first.knex.schema.alterTable('acpinv', (tb) => tb.dropColumn('retain'));
    t = await restart(first);
  });
  after(() => t?.close());

  test('422 naming it, before any database trip (no key claimed, no number taken); nothing written', async () => {
    const before = await counts(t.knex);
    let res: any;
    const trips = await tripsDuring(t, async () => {
      res = await t.post('/api/v3/ap-invoices', invoice('OLD-BUILD-3')).set('Idempotency-Key', 'old-build-3');
    });
    const p = assertProblem(res, 'COLUMN_UNAVAILABLE', '/api/v3/ap-invoices');
    assert.deepEqual(p.unavailableFields, ['ap-invoices.retainage']);
    assert.equal(trips, 0);
    assert.deepEqual(await counts(t.knex), before);
    // A read of AP invoices still answers, without retainage.
    const page = await t.post('/api/v3/ap-invoices/query', { page: { pageSize: 2 } });
    assert.equal(page.status, 200, JSON.stringify(page.body));
    assert.ok(!('retainage' in page.body.data[0]));
  });
});

describe('dropped while the service runs (no restart)', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t?.close());

  test('a read: 422 on the first request that hits it (not 500), then answered without it, and naming it is 422 before SQL', async () => {
    assert.equal((await t.post('/api/v3/parts/query', { select: ['partCode', 'manufacturerPartNumber'], page: { pageSize: 1 } })).status, 200);
    await t.knex.schema.alterTable('tkfprt', (tb) => tb.dropColumn('manprt'));
    const first = assertProblem(await t.post('/api/v3/parts/query', { page: { pageSize: 2 } }), 'COLUMN_UNAVAILABLE');
    assert.deepEqual(first.unavailableFields, ['parts.manufacturerPartNumber']);
    const second = await t.post('/api/v3/parts/query', { page: { pageSize: 2 } });
    assert.equal(second.status, 200, JSON.stringify(second.body));
    assert.ok(!('manufacturerPartNumber' in second.body.data[0]));
    let res: any;
    assert.equal(await tripsDuring(t, async () => void (res = await t.post('/api/v3/parts/query', { select: ['manufacturerPartNumber'] }))), 0);
    assertProblem(res, 'COLUMN_UNAVAILABLE');
    assert.equal(t.logs.filter((l) => /reported a missing column/.test(String(l.msg))).length, 1);
  });

  test('a table: 422 on the first request that reads it (not 500), naming its collection; then 422 before SQL', async () => {
    await t.knex.schema.dropTable('prplin');
    const first = assertProblem(await t.post('/api/v3/proposals/query', { children: ['lines'], page: { pageSize: 2 } }), 'COLUMN_UNAVAILABLE');
    assert.deepEqual(first.unavailableFields, ['proposals.lines']);
    let res: any;
    assert.equal(await tripsDuring(t, async () => void (res = await t.post('/api/v3/proposals/query', { children: ['lines'] }))), 0);
    assertProblem(res, 'COLUMN_UNAVAILABLE');
    assert.equal((await t.post('/api/v3/proposals/query', { page: { pageSize: 2 } })).status, 200);
  });

  test('a write: 422 on the first posting that needs it (the transaction rolled back), nothing written, then 422 before SQL', async () => {
    await t.knex.schema.alterTable('acpinv', (tb) => tb.dropColumn('retain'));
    const before = await counts(t.knex);
    const first = assertProblem(await t.post('/api/v3/ap-invoices', invoice('RUNNING-1')), 'COLUMN_UNAVAILABLE');
    assert.deepEqual(first.unavailableFields, ['ap-invoices.retainage']);
    assert.deepEqual(await counts(t.knex), before);
    let res: any;
    assert.equal(await tripsDuring(t, async () => void (res = await t.post('/api/v3/ap-invoices', invoice('RUNNING-2')))), 0);
    assertProblem(res, 'COLUMN_UNAVAILABLE');
    assert.deepEqual(await counts(t.knex), before);
  });
});

describe('an upgrade under the maintenance lock', () => {
  test('a column added back while locked is found again when the lock is released', async () => {
    const first = await startTestApp();
    await first.knex.schema.alterTable('tkfprt', (tb) => tb.dropColumn('manprt'));
    const t = await restart(first);
    const other = openDatabase(parseDatabaseUrl(t.services.config.databaseUrl));
    try {
      assertProblem(await t.post('/api/v3/parts/query', { select: ['manufacturerPartNumber'] }), 'COLUMN_UNAVAILABLE');
      assert.equal((await t.post('/api/v3/utility/lock', { userName: 'upgrade' }, t.adminKey)).status, 200);
      await other.schema.alterTable('tkfprt', (tb) => tb.string('manprt', 30).nullable());
      assert.equal((await t.post('/api/v3/utility/un-lock', { userName: 'upgrade' }, t.adminKey)).status, 200);
      const deadline = Date.now() + 10_000;
      while (t.services.installed.lacks('tkfprt', 'manprt') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      const res = await t.post('/api/v3/parts/query', { select: ['partCode', 'manufacturerPartNumber'], page: { pageSize: 1 } });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.ok('manufacturerPartNumber' in res.body.data[0]);
    } finally {
      await other.destroy();
      await t.close();
    }
  });
});

test('InstalledSchema: a catalog that lists none of the tables (another default schema) marks nothing missing and says so', async () => {
  const t = await startTestApp();
  try {
    const lines: Array<Record<string, unknown>> = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const schema = new InstalledSchema({ knex: t.knex, engine: t.engine, logger, expected: new Map([['nosuchtable', ['a', 'b']]]) });
    await schema.load();
    assert.deepEqual(schema.missing(), []);
    assert.equal(schema.lacks('nosuchtable', 'a'), false);
    assert.ok(lines.some((l) => /could not read the installed schema/.test(String(l.msg))), JSON.stringify(lines));
  } finally {
    await t.close();
  }
});

test('InstalledSchema: a burst of missing-column reports reads the catalog once', async () => {
  const t = await startTestApp();
  try {
    let reads = 0;
    const schema = new InstalledSchema({ knex: t.knex, engine: t.engine, logger: pino({ level: 'silent' }), expected: new Map([['tkfprt', ['manprt', 'nosuchcolumn']]]) });
    t.knex.on('query', (q: { sql: string }) => {
      if (/information_schema|pragma_table_info|sys\.columns/.test(q.sql)) reads += 1;
    });
    await schema.load();
    assert.deepEqual(schema.missing(), [{ table: 'tkfprt', column: 'nosuchcolumn' }]);
    const before = reads;
    await Promise.all(Array.from({ length: 20 }, () => schema.afterMissing()));
    assert.ok(reads - before <= 1, `${reads - before} catalog reads for 20 reports`);
  } finally {
    await t.close();
  }
});
