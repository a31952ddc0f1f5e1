/**
 * POST /{entity}/query over HTTP on the seeded demo company (response validation on): every
 * rule of the read surface, with status, X-Error-Code and errors[].field asserted, and the
 * results cross-checked against the database.
 */
import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import knexFactory from 'knex';
import type { TestApp } from '../../support/app';
import { useTestApp } from '../../support/use-test-app';
import { postFails, postOk } from '../../support/http';
import { parseDatabaseUrl } from '../../../src/storage/database';
import { CATALOG } from '../../../generated/catalog';
import { queryDialectFor } from '../../../src/storage/dialect';
import { Dec } from '../../../src/storage/decimal';
import { evaluate, type Node } from '../../support/filter-eval';

let t: TestApp;
const Q = (entity: string) => `/api/v3/${entity}/query`;

useTestApp((app) => (t = app));

const ok = (path: string, body: unknown) => postOk(t, path, body);
const fails = (path: string, body: unknown, status: number, code: string, fields?: string[]) => postFails(t, path, body, status, code, fields);

/** Every record of a query (all pages of 1000). */
async function all(entity: string, body: Record<string, unknown> = {}): Promise<any[]> {
  const out: any[] = [];
  for (let page = 1; ; page++) {
    const env = await ok(Q(entity), { ...body, page: { pageNumber: page, pageSize: 1000 } });
    out.push(...env.data);
    if (env.data.length < 1000) {
      assert.equal(out.length, env.page.totalCount);
      return out;
    }
  }
}

async function tableCount(table: string, where?: (qb: any) => void): Promise<number> {
  const qb = t.knex(table).count({ n: '*' });
  if (where) where(qb);
  const rows = (await qb) as Array<{ n: number | string }>;
  return Number(rows[0]!.n);
}

describe('read envelope', () => {
  test('default page: asOf, page block, all fields, totalCount from the database', async () => {
    const before = Date.now();
    const env = await ok(Q('parts'), {});
    assert.ok(Date.parse(env.asOf) >= before - 1000 && Date.parse(env.asOf) <= Date.now() + 1000);
    assert.match(env.asOf, /Z$/);
    const total = await tableCount('tkfprt');
    assert.ok(total > 0, 'the demo company has parts');
    assert.deepEqual(env.page, { pageNumber: 1, pageSize: 100, totalCount: total, returnedCount: Math.min(100, total) });
    assert.deepEqual(Object.keys(env.data[0]).sort(), Object.keys(CATALOG.parts!.fields).sort());
  });

  test('every entity answers its query with records that validate', async () => {
    for (const entity of Object.keys(CATALOG)) {
      const def = CATALOG[entity]!;
      const env = await ok(Q(entity), { page: { pageSize: 5 }, children: Object.keys(def.children) });
      const total = await tableCount(def.table);
      assert.equal(env.page.totalCount, total, entity);
      for (const rec of env.data) for (const c of Object.keys(def.children)) assert.ok(Array.isArray(rec[c]), `${entity}.${c}`);
    }
  });

  test('published value forms: decimals numbers, dates YYYY-MM-DD, booleans, lower-case uuids, nulls kept', async () => {
    const invoices = await all('ap-invoices');
    assert.ok(invoices.length > 0);
    for (const r of invoices) {
      assert.equal(typeof r.invoiceTotal, 'number');
      assert.match(r.invoiceDate, /^\d{4}-\d{2}-\d{2}$/);
      assert.match(r.id, /^[0-9a-f-]{36}$/);
      assert.ok(r.dueDate === null || /^\d{4}-\d{2}-\d{2}$/.test(r.dueDate));
    }
    // Decimals are exact: the sum over the published numbers equals the database's exact sum.
    const dialect = t.services.dialect;
    const rows = (await t.knex('acpinv').select('_idnum', 'invttl')) as Array<{ _idnum: string; invttl: unknown }>;
    const byId = new Map(invoices.map((r) => [r.id, r]));
    for (const row of rows) assert.equal(byId.get(String(row._idnum).toLowerCase()).invoiceTotal, Number(dialect.decodeDecimal(row.invttl, 2)!.toFixed()));
    const vendors = await all('vendors', { select: ['id', 'report1099', 'inactive', 'email'] });
    for (const v of vendors) {
      assert.equal(typeof v.report1099, 'boolean');
      assert.equal(typeof v.inactive, 'boolean');
      assert.ok(v.email === null || typeof v.email === 'string');
    }
  });
});

describe('select', () => {
  test('returns exactly the selected published fields', async () => {
    const env = await ok(Q('parts'), { select: ['partCode', 'partCost', 'recordNumber'], page: { pageSize: 3 } });
    for (const r of env.data) assert.deepEqual(Object.keys(r), ['partCode', 'partCost', 'recordNumber']);
  });

  test('unknown names: 400 UNKNOWN_FIELD naming the name and its position', async () => {
    const body = await fails(Q('parts'), { select: ['partCode', 'prtcde', 'partName'] }, 400, 'UNKNOWN_FIELD', ['select[1]']);
    assert.match(body.detail, /prtcde/);
  });

  test('dotted paths: validated against the child model, need the collection in children, do not narrow', async () => {
    const env = await ok(Q('purchase-orders'), { select: ['orderNumber', 'lines.extendedTotal'], children: ['lines'], page: { pageSize: 20 } });
    const withLines = env.data.find((r: any) => r.lines.length > 0);
    assert.ok(withLines, 'some order has lines');
    assert.deepEqual(Object.keys(withLines.lines[0]).sort(), Object.keys(CATALOG['purchase-orders']!.children.lines!.fields).sort());
    await fails(Q('purchase-orders'), { select: ['orderNumber', 'lines.extendedTotal'] }, 400, 'VALIDATION_FAILED', ['select[1]']);
    await fails(Q('purchase-orders'), { select: ['lines.bogus'], children: ['lines'] }, 400, 'UNKNOWN_FIELD', ['select[0]']);
    await fails(Q('purchase-orders'), { select: ['items.extendedTotal'], children: ['lines'] }, 400, 'UNKNOWN_FIELD', ['select[0]']);
  });
});

describe('children', () => {
  test('one array per record, empty when none, matching the child table', async () => {
    const orders = await all('purchase-orders', { select: ['id'], children: ['lines'] });
    const counts = new Map<string, number>();
    for (const r of (await t.knex('pcorln').select('_idref').count({ n: '*' }).groupBy('_idref')) as Array<{ _idref: string; n: number | string }>) {
      counts.set(String(r._idref).toLowerCase(), Number(r.n));
    }
    let lines = 0;
    for (const o of orders) {
      assert.ok(Array.isArray(o.lines));
      assert.equal(o.lines.length, counts.get(o.id) ?? 0);
      const numbers = o.lines.map((l: any) => l.lineNumber);
      assert.deepEqual(numbers, [...numbers].sort((a: number, b: number) => a - b));
      lines += o.lines.length;
    }
    assert.equal(lines, await tableCount('pcorln'));
  });

  test('assemblies use the name parts', async () => {
    const env = await ok(Q('assemblies'), { children: ['parts'], page: { pageSize: 5 } });
    for (const r of env.data) assert.ok(Array.isArray(r.parts));
  });

  test('unknown names: 400 UNKNOWN_CHILD_COLLECTION listing the valid ones', async () => {
    let body = await fails(Q('purchase-orders'), { children: ['lines', 'items'] }, 400, 'UNKNOWN_CHILD_COLLECTION', ['children[1]']);
    assert.match(body.detail, /items/);
    assert.match(body.detail, /valid: lines/);
    body = await fails(Q('assemblies'), { children: ['lines'] }, 400, 'UNKNOWN_CHILD_COLLECTION', ['children[0]']);
    assert.match(body.detail, /valid: parts/);
    body = await fails(Q('parts'), { children: ['lines'] }, 400, 'UNKNOWN_CHILD_COLLECTION', ['children[0]']);
    assert.match(body.detail, /no child collections/);
  });

  test('child fields cannot be filtered or ordered', async () => {
    await fails(Q('purchase-orders'), { children: ['lines'], filters: { match: { field: 'lines.extendedTotal', operator: '>', value: 1 } } }, 400, 'UNKNOWN_FIELD', ['filters.match.field']);
    await fails(Q('purchase-orders'), { children: ['lines'], orderBy: ['lines.lineNumber ASC'] }, 400, 'VALIDATION_FAILED', ['orderBy[0]']);
  });
});

describe('filters', () => {
  let parts: any[];
  before(async () => {
    parts = await all('parts');
  });

  const check = async (entity: string, records: any[], filters: Node) => {
    const got = (await all(entity, { filters, select: ['id'] })).map((r) => r.id).sort();
    const want = records.filter((r) => evaluate(filters, r)).map((r) => r.id).sort();
    assert.deepEqual(got, want, JSON.stringify(filters).slice(0, 300));
    return got.length;
  };

  test('every operator, operators case-insensitive', async () => {
    const sample = parts[Math.floor(parts.length / 2)];
    const trees: Node[] = [
      { match: { field: 'partCost', operator: '>', value: 50 } },
      { match: { field: 'partCost', operator: '<', value: 50 } },
      { match: { field: 'partCost', operator: '>=', value: sample.partCost } },
      { match: { field: 'partCost', operator: '<=', value: sample.partCost } },
      { match: { field: 'partCode', operator: '=', value: sample.partCode } },
      { match: { field: 'partCode', operator: '!=', value: sample.partCode } },
      { match: { field: 'partName', operator: 'LIKE', value: `${String(sample.partName).slice(0, 3)}%` } },
      { match: { field: 'partName', operator: 'like', value: '%E%' } },
      { match: { field: 'partName', operator: 'not like', value: '%e%' } },
      { match: { field: 'recordNumber', operator: 'In', values: parts.slice(0, 10).map((p) => p.recordNumber) } },
      { match: { field: 'inactive', operator: '=', value: true } },
      { match: { operator: 'INPAIRS', fields: ['partCode', 'partUnit'], pairs: parts.slice(0, 5).map((p) => ({ partCode: p.partCode, partUnit: p.partUnit })) } },
      { or: [{ match: { field: 'partClass', operator: '=', value: sample.partClass ?? 1 } }, { and: [{ match: { field: 'partCost', operator: '>', value: 10 } }, { match: { field: 'inactive', operator: '=', value: false } }] }] },
    ];
    for (const tree of trees) await check('parts', parts, tree);
    assert.ok((await check('parts', parts, trees[0]!)) > 0);
  });

  test('counts agree with the database', async () => {
    const env = await ok(Q('parts'), { filters: { match: { field: 'partCost', operator: '>', value: 50 } }, page: { pageSize: 1 } });
    const scaled = t.services.dialect.encodeDecimal(new Dec(50), 4);
    assert.equal(env.page.totalCount, await tableCount('tkfprt', (qb) => qb.where('prtcst', '>', scaled)));
  });

  test('totalCount follows writes by another connection (a reused count is exact)', async () => {
    const body = { filters: { match: { field: 'partCost', operator: '>', value: 50 } }, select: ['id'], page: { pageSize: 1 } };
    const first = (await ok(Q('parts'), body)).page.totalCount;
    assert.equal((await ok(Q('parts'), body)).page.totalCount, first);
    const other = knexFactory(parseDatabaseUrl(t.services.config.databaseUrl, { min: 0, max: 1 }).config);
    try {
      const scaled = (v: number) => t.services.dialect.encodeDecimal(new Dec(v), 4);
      const victim = (await other('tkfprt').where('prtcst', '>', scaled(50)).orderBy('recnum').first('_idnum', 'prtcst')) as { _idnum: string; prtcst: unknown };
      await other('tkfprt').where({ _idnum: victim._idnum }).update({ prtcst: scaled(1) });
      assert.equal((await ok(Q('parts'), body)).page.totalCount, first - 1);
      await other('tkfprt').where({ _idnum: victim._idnum }).update({ prtcst: victim.prtcst });
      assert.equal((await ok(Q('parts'), body)).page.totalCount, first);
    } finally {
      await other.destroy();
    }
  });

  test('dates and inPairs over job costs; long lists (5,000 values)', async () => {
    const costs = await all('job-costs');
    assert.ok(costs.length > 0);
    const d = costs[Math.floor(costs.length / 3)].transactionDate;
    await check('job-costs', costs, { match: { field: 'transactionDate', operator: '>=', value: d } });
    await check('job-costs', costs, { match: { field: 'transactionDate', operator: '=', value: d } });
    const pairs = costs.slice(0, 40).map((c) => ({ jobNumber: c.jobNumber, costCode: c.costCode, costType: c.costType }));
    assert.ok((await check('job-costs', costs, { match: { operator: 'inPairs', fields: ['jobNumber', 'costCode', 'costType'], pairs } })) >= 40);
    const many = Array.from({ length: 5000 }, (_, i) => ({ jobNumber: costs[i % costs.length].jobNumber, costCode: i % 97, costType: 1 + (i % 9) }));
    many.push(...pairs);
    await check('job-costs', costs, { match: { operator: 'inPairs', fields: ['jobNumber', 'costCode', 'costType'], pairs: many } });
    const values = Array.from({ length: 5000 }, (_, i) => i + 1);
    await check('job-costs', costs, { match: { field: 'recordNumber', operator: 'IN', values } });
  });

  test('value presence per operator: 400 naming the extra or missing key', async () => {
    await fails(
      Q('parts'),
      { filters: { and: [{ match: { field: 'partCost', operator: '>', value: 1 } }, { match: { field: 'partCode', operator: '=', value: 'x', values: ['x'] } }] } },
      400,
      'VALIDATION_FAILED',
      ['filters.and[1].match.values'],
    );
    await fails(Q('parts'), { filters: { match: { field: 'partCode', operator: 'IN', value: 'x' } } }, 400, 'VALIDATION_FAILED', ['filters.match.value', 'filters.match.values']);
    await fails(Q('parts'), { filters: { match: { field: 'partCode', operator: 'IN' } } }, 400, 'VALIDATION_FAILED', ['filters.match.values']);
    await fails(Q('parts'), { filters: { match: { field: 'partCode', operator: '=' } } }, 400, 'VALIDATION_FAILED', ['filters.match.value']);
    await fails(Q('parts'), { filters: { match: { field: 'partCode', operator: 'inPairs', fields: ['partCode'], pairs: [{ partCode: 'x' }] } } }, 400, 'VALIDATION_FAILED', ['filters.match.field']);
    await fails(Q('parts'), { filters: { match: { operator: 'inPairs', fields: ['partCode', 'partUnit'], pairs: [{ partCode: 'x' }] } } }, 400, 'VALIDATION_FAILED', ['filters.match.pairs[0].partUnit']);
    await fails(Q('parts'), { filters: { match: { operator: 'inPairs', fields: ['partCode'], pairs: [{ partCode: 'x', partUnit: 'ea' }] } } }, 400, 'VALIDATION_FAILED', ['filters.match.pairs[0].partUnit']);
  });

  test('values checked against the field kind, LIKE on strings only', async () => {
    await fails(Q('parts'), { filters: { match: { field: 'partCost', operator: '>', value: 'cheap' } } }, 400, 'VALIDATION_FAILED', ['filters.match.value']);
    await fails(Q('parts'), { filters: { match: { field: 'recordNumber', operator: '=', value: 1.5 } } }, 400, 'VALIDATION_FAILED', ['filters.match.value']);
    await fails(Q('parts'), { filters: { match: { field: 'inactive', operator: '=', value: 'no' } } }, 400, 'VALIDATION_FAILED', ['filters.match.value']);
    await fails(Q('parts'), { filters: { match: { field: 'id', operator: '=', value: 'abc' } } }, 400, 'VALIDATION_FAILED', ['filters.match.value']);
    await fails(Q('job-costs'), { filters: { match: { field: 'transactionDate', operator: '>', value: '2026-02-30' } } }, 400, 'VALIDATION_FAILED', ['filters.match.value']);
    await fails(Q('job-costs'), { filters: { or: [{ match: { field: 'costAmount', operator: 'LIKE', value: '1%' } }] } }, 400, 'VALIDATION_FAILED', ['filters.or[0].match.operator']);
    await fails(Q('parts'), { filters: { match: { field: 'partCode', operator: 'IN', values: ['a', 2, 'c'] } } }, 400, 'VALIDATION_FAILED', ['filters.match.values[1]']);
    await fails(Q('parts'), { filters: { match: { field: 'bogus', operator: '=', value: 1 } } }, 400, 'UNKNOWN_FIELD', ['filters.match.field']);
  });

  test('filter depth beyond the bound is 400 FILTER_TOO_DEEP', async () => {
    let node: any = { match: { field: 'partCost', operator: '>', value: 1 } };
    for (let i = 0; i < 40; i++) node = { and: [node] };
    await fails(Q('parts'), { filters: node }, 400, 'FILTER_TOO_DEEP', ['filters']);
  });

  test('entity-specific request extras are ANDed with filters', async () => {
    const invoices = await all('ap-invoices');
    const open = await all('ap-invoices', { openOnly: true, select: ['id', 'invoiceBalance'] });
    assert.deepEqual(open.map((r) => r.id).sort(), invoices.filter((r) => r.invoiceBalance !== 0).map((r) => r.id).sort());
    const v = invoices[0].vendorNumber;
    const both = await all('ap-invoices', { vendorNumber: v, openOnly: false, filters: { match: { field: 'invoiceTotal', operator: '>', value: 0 } }, select: ['id'] });
    assert.deepEqual(both.map((r) => r.id).sort(), invoices.filter((r) => r.vendorNumber === v && r.invoiceTotal > 0).map((r) => r.id).sort());
    await fails(Q('ap-invoices'), { vendorNumber: 'ACME' }, 400, 'VALIDATION_FAILED', ['vendorNumber']);
    // Extras exist only on their entity's schema.
    await fails(Q('parts'), { openOnly: true }, 400, 'VALIDATION_FAILED', ['openOnly']);
  });
});

describe('orderBy and paging', () => {
  test('ordering, case-insensitive direction, unique tiebreak: pages never overlap or skip', async () => {
    const total = await tableCount('tkfprt');
    for (const orderBy of [['partCost desc'], ['partUnit ASC', 'inactive Desc'], ['inactive asc']]) {
      const ids: string[] = [];
      let last: any;
      for (let page = 1; ; page++) {
        const env = await ok(Q('parts'), { orderBy, select: ['id', 'partCost', 'partUnit', 'inactive'], page: { pageNumber: page, pageSize: 37 } });
        for (const r of env.data) {
          if (orderBy[0] === 'partCost desc' && last) assert.ok(last.partCost >= r.partCost);
          last = r;
          ids.push(r.id);
        }
        if (env.data.length < 37) break;
      }
      assert.equal(ids.length, total);
      assert.equal(new Set(ids).size, total);
    }
  });

  test('unknown orderBy field is 400 UNKNOWN_FIELD; bad clause 400', async () => {
    await fails(Q('parts'), { orderBy: ['partCode ASC', 'cost DESC'] }, 400, 'UNKNOWN_FIELD', ['orderBy[1]']);
    await fails(Q('parts'), { orderBy: ['partCode sideways'] }, 400, 'VALIDATION_FAILED', ['orderBy[0]']);
  });

  test('page bounds: rejected, never clamped', async () => {
    await fails(Q('parts'), { page: { pageSize: 0 } }, 400, 'VALIDATION_FAILED', ['page.pageSize']);
    await fails(Q('parts'), { page: { pageSize: 1001 } }, 400, 'VALIDATION_FAILED', ['page.pageSize']);
    await fails(Q('parts'), { page: { pageNumber: 0 } }, 400, 'VALIDATION_FAILED', ['page.pageNumber']);
    await fails(Q('parts'), { page: { pageNumber: 1.5 } }, 400, 'VALIDATION_FAILED', ['page.pageNumber']);
    const env = await ok(Q('parts'), { page: { pageNumber: 2, pageSize: 1000 } });
    assert.equal(env.page.pageSize, 1000);
    const beyond = await ok(Q('parts'), { page: { pageNumber: 100000, pageSize: 10 } });
    assert.equal(beyond.page.returnedCount, 0);
    assert.deepEqual(beyond.data, []);
  });
});

describe('change stamps', () => {
  test('lastUpdated where supported: inclusive from the start of the UTC day', async () => {
    const total = await tableCount('tkfprt');
    const rows = (await t.knex('tkfprt').select('_idnum', 'upddte')) as Array<{ _idnum: string; upddte: unknown }>;
    const qd = queryDialectFor(t.engine);
    const days = rows.map((r) => String(qd.decodeValue('datetime', r.upddte)).slice(0, 10)).sort();
    const day = days[Math.floor(days.length / 2)]!;
    const env = await ok(Q('parts'), { lastUpdated: day, page: { pageSize: 1 } });
    assert.equal(env.page.totalCount, days.filter((d) => d >= day).length);
    assert.ok(env.page.totalCount <= total);
    const future = await ok(Q('parts'), { lastUpdated: '2999-01-01' });
    assert.equal(future.page.totalCount, 0);
    const past = await ok(Q('parts'), { lastUpdated: '1900-01-01', page: { pageSize: 1 } });
    assert.equal(past.page.totalCount, total);
  });

  test('createdSince where supported', async () => {
    const total = await tableCount('jobcst');
    const past = await ok(Q('job-costs'), { createdSince: '1900-01-01', page: { pageSize: 1 } });
    assert.equal(past.page.totalCount, total);
    const future = await ok(Q('job-costs'), { createdSince: '2999-12-31', page: { pageSize: 1 } });
    assert.equal(future.page.totalCount, 0);
  });

  test('elsewhere 501 CHANGE_STAMP_UNSUPPORTED naming the field and the entity', async () => {
    let body = await fails(Q('vendors'), { lastUpdated: '2026-01-01' }, 501, 'CHANGE_STAMP_UNSUPPORTED', ['lastUpdated']);
    assert.match(body.detail, /lastUpdated/);
    assert.match(body.detail, /vendors/);
    body = await fails(Q('parts'), { createdSince: '2026-01-01' }, 501, 'CHANGE_STAMP_UNSUPPORTED', ['createdSince']);
    assert.match(body.detail, /createdSince.*parts/);
    await fails(Q('job-costs'), { lastUpdated: '2026-01-01' }, 501, 'CHANGE_STAMP_UNSUPPORTED', ['lastUpdated']);
  });

  test('a stamp that is not a date is 400', async () => {
    await fails(Q('parts'), { lastUpdated: '2026-13-01' }, 400, 'VALIDATION_FAILED', ['lastUpdated']);
  });
});

describe('routes and v2 fields', () => {
  test('unknown entity: 404 UNKNOWN_ENTITY', async () => {
    const body = await fails('/api/v3/widgets/query', {}, 404, 'UNKNOWN_ENTITY');
    assert.match(body.detail, /widgets/);
    await fails('/api/v3/ap-invoices/match', { matchString: 'a', matchFields: ['invoiceNumber'], select: ['id'], maxDistance: 1 }, 404, 'UNKNOWN_ENTITY');
  });

  test('v2 fields: 400 V2_FIELD_REJECTED naming the v3 replacement, before the generic unknown-field error', async () => {
    const cases: Array<[Record<string, unknown>, string, RegExp]> = [
      [{ withChildren: true }, 'withChildren', /children/],
      [{ offset: 100 }, 'offset', /page\.pageNumber/],
      [{ filter: { match: { field: 'partCost', operator: '>', value: 1 } } }, 'filter', /filters/],
      [{ selectFields: ['partCode'] }, 'selectFields', /select/],
    ];
    for (const [body, field, replacement] of cases) {
      const problem = await fails(Q('parts'), body, 400, 'V2_FIELD_REJECTED', [field]);
      assert.match(problem.detail, replacement);
    }
    await fails('/api/v3/parts/match', { matchString: 'a', matchFields: ['partName'], select: ['id'], maxDistance: 1, selectFields: ['id'] }, 400, 'V2_FIELD_REJECTED', ['selectFields']);
  });

  test('other unknown top-level fields stay VALIDATION_FAILED', async () => {
    await fails(Q('parts'), { bogus: 1 }, 400, 'VALIDATION_FAILED', ['bogus']);
  });
});

describe('orderBy without a direction (decision 0401)', () => {
  test('a clause without ASC or DESC is ascending, as the published 3.0.0 contract accepts it', async () => {
    const read = (orderBy: string[]) => ok(Q('parts'), { orderBy, select: ['id', 'partCode'], page: { pageSize: 50 } });
    const bare = await read(['partCode']);
    const asc = await read(['partCode ASC']);
    const desc = await read(['partCode DESC']);
    assert.equal(bare.data.length, 50);
    assert.deepEqual(bare.data, asc.data, 'partCode is partCode ASC');
    assert.notDeepEqual(bare.data, desc.data);
    const codes = (bare.data as Array<{ partCode: string }>).map((r) => r.partCode);
    const first = (await t.knex('tkfprt').orderBy([{ column: 'prtcde', order: 'asc' }, { column: '_idnum', order: 'asc' }]).limit(50).select('prtcde')) as Array<{ prtcde: string }>;
    assert.deepEqual(codes, first.map((r) => r.prtcde), 'ascending as the database orders it');
    // Several clauses, some without a direction, and spaces around.
    const mixed = await ok(Q('parts'), { orderBy: ['  partUnit ', 'partCode DESC'], select: ['partUnit', 'partCode'], page: { pageSize: 200 } });
    const explicit = await ok(Q('parts'), { orderBy: ['partUnit ASC', 'partCode DESC'], select: ['partUnit', 'partCode'], page: { pageSize: 200 } });
    assert.deepEqual(mixed.data, explicit.data);
    // Still refused: a direction that is neither.
    await fails(Q('parts'), { orderBy: ['partCode up'] }, 400, 'VALIDATION_FAILED', ['orderBy[0]']);
  });

  test('the contract keeps accepting it and says it is ascending', () => {
    const orderBy = (doc: string) => {
      const schema = (JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', '..', doc), 'utf8')) as any).components.schemas.OrderBy;
      return { pattern: new RegExp(schema.items.pattern as string), description: schema.description as string };
    };
    const published = orderBy('generated/openapi.public.json');
    for (const clause of ['partCode', ' partCode ', 'partCode ASC', 'partCode desc']) assert.match(clause, published.pattern, clause);
    assert.doesNotMatch('partCode up', published.pattern);
    assert.match(published.description, /without a direction .* is ascending/);
  });
});
