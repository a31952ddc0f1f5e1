/**
 * SQL Server compile tests (no server here): the statements the query and match engines build
 * for mssql stay under its 2,100-parameter limit for any list length, never use row-value IN
 * (which T-SQL rejects), and page with ORDER BY ... OFFSET ... FETCH.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import knexFactory from 'knex';
import { CATALOG } from '../../../generated/catalog';
import { queryDialectFor } from '../../../src/storage/dialect';
import { planQuery } from '../../../src/engines/query/plan';
import { childQueries, countQuery, pageQuery } from '../../../src/engines/query/sql';
import type { QueryRequest } from '../../../src/engines/query/types';
import { detectionQueries } from '../../../src/events/detector';
import { listQueries } from '../../../src/events/store';
import { planDeliveryList } from '../../../src/events/lists';

const mssql = knexFactory({ client: 'mssql' });
const qd = queryDialectFor('mssql');
const parts = CATALOG.parts!;
const jobCosts = CATALOG['job-costs']!;
const purchaseOrders = CATALOG['purchase-orders']!;
const LIMIT = 2100;

function statements(entity: typeof parts, body: QueryRequest) {
  const plan = planQuery(entity, body, { maxFilterDepth: 32 });
  return { plan, count: countQuery(mssql, qd, plan).toSQL().toNative(), page: pageQuery(mssql, qd, plan).toSQL().toNative() };
}

const ROW_VALUE_IN = /\(\s*\[[^\]]+\]\.\[[^\]]+\]\s*,\s*\[[^\]]+\]\.\[[^\]]+\][^)]*\)\s+in\s+\(/i;

describe('SQL Server statements', () => {
  test('a 5,000-value IN stays far below 2,100 parameters', () => {
    const values = Array.from({ length: 5000 }, (_, i) => `P-${i}`);
    for (const pageNumber of [1, 500]) {
      const { count, page } = statements(parts, { filters: { match: { field: 'partCode', operator: 'IN', values } }, orderBy: ['partCode ASC'], page: { pageNumber } });
      for (const s of [count, page]) {
        assert.ok(s.bindings.length < LIMIT, `${s.bindings.length} parameters`);
        assert.ok(s.bindings.length <= 4, `${s.bindings.length} parameters`);
        assert.match(s.sql, /OPENJSON\(@p\d+\) WITH \(\[v\] nvarchar\(4000\) '\$'\)/);
      }
    }
  });

  test('a 5,000-pair inPairs stays below 2,100 parameters and uses no row values', () => {
    const pairs = Array.from({ length: 5000 }, (_, i) => ({ jobNumber: 1000 + i, costCode: i / 10, costType: 1 + (i % 5) }));
    const { count, page } = statements(jobCosts, { filters: { match: { operator: 'inPairs', fields: ['jobNumber', 'costCode', 'costType'], pairs } } });
    for (const s of [count, page]) {
      assert.ok(s.bindings.length < LIMIT, `${s.bindings.length} parameters`);
      assert.doesNotMatch(s.sql, ROW_VALUE_IN);
      assert.match(s.sql, /EXISTS \(SELECT 1 FROM OPENJSON\(@p\d+\) WITH \(\[c0\] bigint '\$\.c0', \[c1\] decimal\(38, 3\) '\$\.c1', \[c2\] bigint '\$\.c2'\) AS \[p\]/);
    }
    const json = JSON.parse(String(count.bindings[0]));
    assert.equal(json.length, 5000);
    assert.deepEqual(json[11], { c0: 1011, c1: '1.100', c2: 2 });
  });

  test('a short inPairs is an OR of ANDs, not row values', () => {
    const { count } = statements(jobCosts, {
      filters: { match: { operator: 'inPairs', fields: ['jobNumber', 'costType'], pairs: [{ jobNumber: 1, costType: 1 }, { jobNumber: 2, costType: 3 }] } },
    });
    assert.doesNotMatch(count.sql, ROW_VALUE_IN);
    assert.match(count.sql, /\(\(\[b\]\.\[jobnum\] = @p0 and \[b\]\.\[csttyp\] = @p1\) or \(\[b\]\.\[jobnum\] = @p2 and \[b\]\.\[csttyp\] = @p3\)\)/);
  });

  test('many lists in one tree: inlined lists share one parameter budget', () => {
    const or = Array.from({ length: 60 }, (_, i) => ({ match: { field: 'recordNumber', operator: 'IN', values: Array.from({ length: 60 }, (_, j) => i * 100 + j) } }));
    const { count, page } = statements(parts, { filters: { or } });
    for (const s of [count, page]) assert.ok(s.bindings.length < LIMIT, `${s.bindings.length} parameters`);
  });

  test('deep pages: keys by OFFSET/FETCH with ORDER BY, rows joined back', () => {
    const { page } = statements(parts, { filters: { match: { field: 'partCost', operator: '>', value: 50 } }, orderBy: ['partCode ASC'], page: { pageNumber: 500, pageSize: 100 } });
    assert.match(page.sql, /order by \[b\]\.\[prtcde\] asc, \[b\]\.\[_idnum\] asc offset @p\d+ rows fetch next @p\d+ rows only/i);
    assert.match(page.sql, /where \[r\]\.\[_idnum\] in \(select \[b\]\.\[_idnum\] from \[tkfprt\] as \[b\] where \[b\]\.\[prtcst\] > @p0/i);
    assert.match(page.sql, /rows only\) order by \[r\]\.\[prtcde\] asc, \[r\]\.\[_idnum\] asc$/i);
    assert.ok(page.bindings.includes(49900));
    const first = statements(parts, { orderBy: ['partCode DESC'] }).page;
    assert.match(first.sql, /^select top \(@p0\)/i);
    assert.match(first.sql, /order by \[b\]\.\[prtcde\] desc, \[b\]\.\[_idnum\] asc$/i);
  });

  test('children: one statement per collection for a full page of 1,000 parents', () => {
    const keys = Array.from({ length: 1000 }, (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`);
    const queries = childQueries(mssql, purchaseOrders.children.lines!, keys);
    assert.equal(queries.length, 1);
    const s = queries[0]!.toSQL().toNative();
    assert.ok(s.bindings.length < LIMIT);
    assert.match(s.sql, /order by \[c\]\.\[_idref\] asc, \[c\]\.\[linnum\] asc$/);
  });

  test('LIKE escapes _ and [ so % is the only wildcard', () => {
    const { count } = statements(parts, { filters: { match: { field: 'partCode', operator: 'like', value: 'A_[1]%' } } });
    assert.match(count.sql, /\[b\]\.\[prtcde\] LIKE @p0 ESCAPE '!'/);
    assert.equal(count.bindings[0], 'A!_![1!]%');
  });
});

describe('SQL Server: text compared exactly (decision 0464)', () => {
  const vendors = CATALOG.vendors!;
  /** The exact check of a column: binary code points, a sentinel after it so trailing spaces count. */
  const exact = (column: string) => `([b].[${column}] + N'~') COLLATE Latin1_General_100_BIN2`;
  const where = (sql: string) => sql.slice(sql.indexOf(' where ') + 7);

  test("= keeps the column's own comparison (an index seek) and ANDs the exact one: the value twice, the second with the sentinel", () => {
    const { count, page } = statements(vendors, { filters: { match: { field: 'vendorName', operator: '=', value: 'Trailing Space' } }, orderBy: ['vendorName ASC'] });
    assert.equal(where(count.sql), `([b].[vndnme] = @p0 AND ${exact('vndnme')} = @p1)`);
    assert.deepEqual(count.bindings, ['Trailing Space', 'Trailing Space~']);
    assert.ok(page.sql.includes(`where ([b].[vndnme] = @p1 AND ${exact('vndnme')} = @p2) order by [b].[vndnme] asc`), page.sql);
  });

  test('!= is the exact negation, one parameter; a null column stays out (NULL + the sentinel is NULL), no IS NULL added', () => {
    for (const operator of ['!=', '<>']) {
      const { count } = statements(vendors, { filters: { match: { field: 'vendorName', operator, value: 'EMILE' } } });
      assert.equal(where(count.sql), `${exact('vndnme')} <> @p0`);
      assert.deepEqual(count.bindings, ['EMILE~']);
      assert.doesNotMatch(count.sql, /is null/i);
    }
  });

  test('IN: a short list inlined twice (the seek, the exact check), a long one as one JSON list checked exactly per entry', () => {
    const short = statements(vendors, { filters: { match: { field: 'vendorName', operator: 'IN', values: ['a', 'B '] } } }).count;
    assert.equal(where(short.sql), `([b].[vndnme] IN (@p0, @p1) AND ${exact('vndnme')} IN (@p2, @p3))`);
    assert.deepEqual(short.bindings, ['a', 'B ', 'a~', 'B ~']);
    const values = Array.from({ length: 100 }, (_, i) => `V${i}`);
    const long = statements(vendors, { filters: { match: { field: 'vendorName', operator: 'IN', values } } }).count;
    assert.equal(
      where(long.sql),
      `[b].[vndnme] IN (SELECT [l].[v] FROM OPENJSON(@p0) WITH ([v] nvarchar(4000) '$') AS [l] WHERE ([l].[v] + N'~') COLLATE Latin1_General_100_BIN2 = ${exact('vndnme')})`,
    );
    assert.deepEqual(JSON.parse(String(long.bindings[0])), values);
  });

  test('inPairs: text members exact, inlined or through OPENJSON; other kinds as they were', () => {
    const short = statements(parts, { filters: { match: { operator: 'inPairs', fields: ['partCode', 'recordNumber'], pairs: [{ partCode: 'pl-1', recordNumber: 1 }, { partCode: 'PL-2 ', recordNumber: 2 }] } } }).count;
    assert.equal(
      where(short.sql),
      `((([b].[prtcde] = @p0 AND ${exact('prtcde')} = @p1) and [b].[recnum] = @p2) or (([b].[prtcde] = @p3 AND ${exact('prtcde')} = @p4) and [b].[recnum] = @p5))`,
    );
    assert.deepEqual(short.bindings, ['pl-1', 'pl-1~', 1, 'PL-2 ', 'PL-2 ~', 2]);
    const pairs = Array.from({ length: 100 }, (_, i) => ({ partCode: `P-${i}`, recordNumber: i }));
    const long = statements(parts, { filters: { match: { operator: 'inPairs', fields: ['partCode', 'recordNumber'], pairs } } }).count;
    assert.ok(where(long.sql).endsWith(`AS [p] WHERE [b].[prtcde] = [p].[c0] AND ${exact('prtcde')} = ([p].[c0] + N'~') AND [b].[recnum] = [p].[c1])`), long.sql);
    assert.equal(long.bindings.length, 1);
  });

  test('numbers, dates, uuids and LIKE compile as before; PostgreSQL and SQLite keep the plain = (exact there already)', () => {
    const { count } = statements(vendors, { filters: { and: [{ match: { field: 'recordNumber', operator: '=', value: 5 } }, { match: { field: 'id', operator: '!=', value: '00000000-0000-4000-8000-000000000000' } }] } });
    assert.equal(where(count.sql), '([b].[recnum] = @p0 and [b].[_idnum] <> @p1)');
    const like = statements(vendors, { filters: { match: { field: 'vendorName', operator: 'LIKE', value: 'a%' } } }).count;
    assert.equal(where(like.sql), "[b].[vndnme] LIKE @p0 ESCAPE '!'");
    for (const engine of ['postgres', 'sqlite'] as const) {
      const knex = knexFactory({ client: engine === 'postgres' ? 'pg' : 'better-sqlite3', useNullAsDefault: true });
      const plan = planQuery(vendors, { filters: { or: [{ match: { field: 'vendorName', operator: '=', value: 'a' } }, { match: { field: 'vendorName', operator: '!=', value: 'd' } }, { match: { field: 'vendorName', operator: 'IN', values: ['b', 'c'] } }] } }, { maxFilterDepth: 32 });
      const sql = countQuery(knex, queryDialectFor(engine), plan).toSQL().toNative();
      assert.doesNotMatch(sql.sql, /COLLATE|~/i, engine);
      assert.deepEqual(sql.bindings, ['a', 'd', 'b', 'c'], engine);
    }
  });

  test('a thousand exact = and inlined lists in one tree stay below 2,100 parameters, every = exact', () => {
    const lists = Array.from({ length: 14 }, (_, i) => ({ match: { field: 'partCode', operator: 'IN', values: Array.from({ length: 64 }, (_, j) => `L${i}-${j}`) } }));
    const equals = Array.from({ length: 986 }, (_, i) => ({ match: { field: 'partCode', operator: '=', value: `E${i}` } }));
    for (const or of [[...lists, ...equals], [...equals, ...lists], [...equals, ...equals.slice(0, 14)]]) {
      const { count, page } = statements(parts, { filters: { or }, orderBy: ['partCode ASC'], page: { pageNumber: 3, pageSize: 10 } });
      for (const s of [count, page]) assert.ok(s.bindings.length < LIMIT - 100, `${s.bindings.length} parameters`);
      // The two-parameter form while the budget lasts, then a list of one (one parameter, exact too); no bare =.
      const leaves = or.filter((n) => n.match.operator === '=').length;
      const twoParameters = (count.sql.match(/\[b\]\.\[prtcde\] = @p\d+ AND \(\[b\]\.\[prtcde\] \+ N'~'\)/g) ?? []).length;
      const bare = (count.sql.match(/\[b\]\.\[prtcde\] = @p\d+/g) ?? []).length;
      const listsOfOne = count.bindings.filter((b) => typeof b === 'string' && b.startsWith('[') && (JSON.parse(b) as unknown[]).length === 1).length;
      assert.equal(bare, twoParameters);
      assert.equal(twoParameters + listsOfOne, leaves, `${twoParameters} + ${listsOfOne}`);
      assert.ok(twoParameters > 0 && listsOfOne > 0);
    }
  });
});

describe('SQL Server statements of the events wing', () => {
  test('detection reads headers and lines, payroll journals left out of both', () => {
    const from = new Date('2026-11-27T10:00:00Z');
    const to = new Date('2026-11-27T10:05:00Z');
    const { headers, lines } = detectionQueries(mssql, 'ledger_transaction', from, to);
    const h = headers.toSQL().toNative();
    assert.match(h.sql, /from \[lgrtrn\] where \[upddte\] > @p0 and \[upddte\] <= @p1 and \[srcnum\] not in \(@p2, @p3, @p4\)/);
    assert.deepEqual(h.bindings.slice(2), [16, 17, 18]);
    assert.equal(lines.length, 1);
    const l = lines[0]!.toSQL().toNative();
    assert.match(l.sql, /from \[lgtnln\] as \[l\] inner join \[lgrtrn\] as \[h\] on \[h\]\.\[_idnum\] = \[l\]\.\[_idref\] where \[l\]\.\[upddte\] > @p0 and \[l\]\.\[upddte\] <= @p1 and \[h\]\.\[insdte\] <= @p2 and \[h\]\.\[srcnum\] not in/);
    const ap = detectionQueries(mssql, 'payable_invoice', from, to);
    assert.doesNotMatch(ap.headers.toSQL().toNative().sql, /not in/);
    assert.match(ap.lines[0]!.toSQL().toNative().sql, /from \[apivln\] as \[l\] inner join \[acpinv\] as \[h\]/);
  });

  test('the webhook lists page with ORDER BY ... OFFSET ... FETCH', () => {
    const { plan } = planDeliveryList({ filters: { match: { field: 'attempts', operator: '>=', value: 3 } }, orderBy: ['createdAt DESC'], page: { pageNumber: 3, pageSize: 20 } }, { maxFilterDepth: 32 });
    const { count, page } = listQueries(mssql, qd, plan);
    assert.match(count.toSQL().toNative().sql, /select count\(\*\) as \[n\] from \[whkdlv\] as \[b\] where \[b\]\.\[attempts\] >= @p0/);
    const p = page.toSQL().toNative();
    assert.match(p.sql, /order by \[b\]\.\[created_at\] desc, \[b\]\.\[id\] asc offset @p1 rows fetch next @p2 rows only/);
    assert.deepEqual(p.bindings, [3, 40, 20]);
  });
});
