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
