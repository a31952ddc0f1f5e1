/**
 * The count index (src/engines/query/count-index.ts): a comparison on a number column whose value
 * changes with every request is counted from the column's sorted values once that pays, exactly as
 * a count statement would count (NULLs left out, every operator, values equal to a stored one),
 * never under another change token than the one the values were read in, and never for a column
 * holding a value that is not a number. Checked through HTTP against counts the database makes on a
 * second connection, and through /metrics (query_counts_total{source="index"}).
 */
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import type { Knex } from 'knex';
import { startTestApp, type TestApp } from '../../support/app';
import { openDatabase, parseDatabaseUrl } from '../../../src/storage/database';
import { Dec } from '../../../src/storage/decimal';

let t: TestApp;
let other: Knex;

before(async () => {
  t = await startTestApp();
  other = openDatabase(parseDatabaseUrl(t.services.config.databaseUrl, { min: 0, max: 1 }));
});
after(async () => {
  await other?.destroy();
  await t?.close();
});

type Op = '>' | '>=' | '<' | '<=' | '=' | '<>';
const OPS: Op[] = ['>', '>=', '<', '<=', '=', '<>'];

async function totalCount(filters: unknown): Promise<number> {
  const res = await t.post('/api/v3/parts/query', { filters, select: ['recordNumber'], page: { pageNumber: 1, pageSize: 1 } });
  assert.equal(res.status, 200, res.text);
  return res.body.page.totalCount as number;
}

/** What the database counts on the second connection (the published value encoded as stored). */
async function databaseCount(column: string, op: Op, stored: unknown): Promise<number> {
  const row = await other('tkfprt').where(column, op, stored as Knex.Value).count({ n: '*' }).first();
  return Number(row!.n);
}

/** totalCounts answered from the count index so far (the /metrics counter). */
async function fromIndex(): Promise<number> {
  const res = await t.http.get('/metrics');
  assert.equal(res.status, 200);
  const m = /^query_counts_total\{source="index"\} (\d+)/m.exec(res.text);
  assert.ok(m, 'query_counts_total{source="index"} is exported');
  return Number(m![1]);
}

const money = (v: string) => t.services.dialect.encodeDecimal(new Dec(v), 4);

test('a threshold that changes with every request is counted exactly, from the column in memory once that pays', async () => {
  const before = await fromIndex();
  // Values stored in the column (boundaries: = and >= must count them), and values between them.
  const costs = (await other('tkfprt').distinct('prtcst').orderBy('prtcst').limit(400)) as Array<{ prtcst: unknown }>;
  const stored = costs.map((c) => t.services.dialect.decodeDecimal(c.prtcst as never, 4)!);
  assert.ok(stored.length >= 10, 'the demo company has parts with several costs');
  let asked = 0;
  for (let i = 0; i < 30; i += 1) {
    const base = stored[(i * 7) % stored.length]!;
    const value = i % 2 === 0 ? base : base.plus('0.0001');
    const op = OPS[i % OPS.length]!;
    const got = await totalCount({ match: { field: 'partCost', operator: op, value: Number(value.toFixed()) } });
    assert.equal(got, await databaseCount('prtcst', op, money(value.toFixed())), `partCost ${op} ${value.toFixed()}`);
    asked += 1;
  }
  // A nullable integer column: NULLs are never counted, <> included.
  const vendors = ((await other('tkfprt').distinct('vndnum').whereNotNull('vndnum').orderBy('vndnum')) as Array<{ vndnum: number }>).map((v) => Number(v.vndnum));
  assert.ok(vendors.length >= 2, 'parts have several vendors');
  const nulls = Number((await other('tkfprt').whereNull('vndnum').count({ n: '*' }).first())!.n);
  for (let i = 0; i < 24; i += 1) {
    const op = OPS[i % OPS.length]!;
    // A different value each time: the stored ones first (boundaries), then values between and past them.
    const value = i < vendors.length ? vendors[i]! : vendors[0]! + 3 * i + 1;
    assert.equal(await totalCount({ match: { field: 'vendorNumber', operator: op, value } }), await databaseCount('vndnum', op, value), `vendorNumber ${op} ${value}`);
    asked += 1;
  }
  const indexed = (await fromIndex()) - before;
  assert.ok(indexed > 0 && indexed < asked, `some counts came from the index (${indexed} of ${asked}), after count statements first`);
  if (nulls > 0) {
    const all = Number((await other('tkfprt').count({ n: '*' }).first())!.n);
    assert.equal(await totalCount({ match: { field: 'vendorNumber', operator: '<>', value: -1 } }), all - nulls, 'NULL is not <> -1');
  }
});

test('a range of comparisons on one column is counted from the index', async () => {
  const vendors = ((await other('tkfprt').distinct('vndnum').whereNotNull('vndnum').orderBy('vndnum')) as Array<{ vndnum: number }>).map((v) => Number(v.vndnum));
  // Warm: enough different counts on the column under this token.
  for (let i = 0; i < 10; i += 1) await totalCount({ match: { field: 'vendorNumber', operator: '>', value: vendors[i % vendors.length]! + i } });
  const before = await fromIndex();
  for (let i = 0; i < 6; i += 1) {
    // Ranges that hold rows: an empty first page needs no count at all (run.ts, emptyPage).
    const low = vendors[i % vendors.length]!;
    const high = vendors[Math.min((i % vendors.length) + 3, vendors.length - 1)]! + 1;
    const got = await totalCount({ and: [{ match: { field: 'vendorNumber', operator: '>=', value: low } }, { match: { field: 'vendorNumber', operator: '<', value: high } }] });
    const want = Number((await other('tkfprt').where('vndnum', '>=', low).where('vndnum', '<', high).count({ n: '*' }).first())!.n);
    assert.equal(got, want, `${low} <= vendorNumber < ${high}`);
  }
  assert.equal((await fromIndex()) - before, 6, 'every range counted from the index');
});

test('a commit through another connection is counted on the very next read: the index is never reused under a new token', async () => {
  const vendors = ((await other('tkfprt').distinct('vndnum').whereNotNull('vndnum').orderBy('vndnum')) as Array<{ vndnum: number }>).map((v) => Number(v.vndnum));
  const threshold = vendors[Math.floor(vendors.length / 2)]!;
  for (let i = 0; i < 10; i += 1) await totalCount({ match: { field: 'vendorNumber', operator: '<', value: vendors[i % vendors.length]! + 1 } });
  const before = await fromIndex();
  const first = await totalCount({ match: { field: 'vendorNumber', operator: '>', value: threshold } });
  assert.equal((await fromIndex()) - before, 1, 'counted from the index');
  const part = await other('tkfprt').where('vndnum', '<=', threshold).orderBy('recnum').first('recnum', 'vndnum');
  assert.ok(part, 'a part at or under the threshold exists');
  await other('tkfprt').where({ recnum: part.recnum }).update({ vndnum: threshold + 1_000_000 });
  try {
    assert.equal(await totalCount({ match: { field: 'vendorNumber', operator: '>', value: threshold } }), first + 1, 'the other connection’s commit is counted at once');
  } finally {
    await other('tkfprt').where({ recnum: part.recnum }).update({ vndnum: part.vndnum });
  }
  assert.equal(await totalCount({ match: { field: 'vendorNumber', operator: '>', value: threshold } }), first, 'and its undo too');
});

test('a column whose values are not exact numbers is never indexed, and is still counted as the database counts', async () => {
  if (t.engine === 'postgres') {
    // NUMERIC arrives as text from node-postgres: decimal columns keep their count statements.
    const before = await fromIndex();
    for (let i = 0; i < 20; i += 1) {
      const op = OPS[i % OPS.length]!;
      const value = `${10 + i}.25`;
      assert.equal(await totalCount({ match: { field: 'partCost', operator: op, value: Number(value) } }), await databaseCount('prtcst', op, money(value)), `partCost ${op} ${value}`);
    }
    assert.equal((await fromIndex()) - before, 0, 'no count of a NUMERIC column from an index');
    return;
  }
  const part = await other('tkfprt').whereNotNull('prtcls').orderBy('recnum').first('recnum', 'prtcls');
  assert.ok(part, 'a part with a class exists');
  // SQLite keeps text in an INTEGER column, and compares text above every number.
  await other.raw("update tkfprt set prtcls = 'x' where recnum = ?", [part.recnum]);
  try {
    const before = await fromIndex();
    for (let i = 0; i < 20; i += 1) {
      const op = OPS[i % OPS.length]!;
      assert.equal(await totalCount({ match: { field: 'partClass', operator: op, value: i % 4 } }), await databaseCount('prtcls', op, i % 4), `partClass ${op} ${i % 4}`);
    }
    assert.equal((await fromIndex()) - before, 0, 'no count from an index of that column');
  } finally {
    await other('tkfprt').where({ recnum: part.recnum }).update({ prtcls: part.prtcls });
  }
});

/**
 * The statements less those of count-index reads: a read whose count statements have cost more
 * than reading the column would reads its values once, in a snapshot of their own (run.ts
 * readValuesAt, count-index.ts). Whether it does depends on how long the counts took (a busy
 * machine: sooner), and it is no statement of the read itself.
 */
function withoutIndexReads(statements: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < statements.length; i += 1) {
    if (/^BEGIN .*READ ONLY/i.test(statements[i]!)) {
      const end = statements.findIndex((s, j) => j > i && /^COMMIT/i.test(s));
      const block = statements.slice(i, end < 0 ? statements.length : end + 1);
      if (block.some((s) => /^select "b"\."\w+" as "v" from /.test(s))) {
        i = end < 0 ? statements.length : end;
        continue;
      }
    }
    out.push(statements[i]!);
  }
  return out;
}

test('PostgreSQL: a read without children is ONE statement (token, count and page in one snapshot); a repeated one too', async () => {
  const statements: string[] = [];
  const listen = (q: { sql?: string }) => statements.push(String(q.sql));
  const query = { filters: { match: { field: 'vendorNumber', operator: '>=', value: 1 } }, orderBy: ['partCode DESC'], select: ['partCode'], page: { pageNumber: 2, pageSize: 3 } };
  const first = await t.post('/api/v3/parts/query', query);
  assert.equal(first.status, 200, first.text);
  t.services.knex.on('query', listen);
  try {
    const again = await t.post('/api/v3/parts/query', query);
    assert.equal(again.status, 200, again.text);
    assert.deepEqual(again.body.data, first.body.data, 'the same page');
    assert.equal(again.body.page.totalCount, first.body.page.totalCount);
    const another = await t.post('/api/v3/parts/query', { ...query, filters: { match: { field: 'vendorNumber', operator: '>=', value: 2 } } });
    assert.equal(another.status, 200, another.text);
    assert.equal(another.body.page.totalCount, await databaseCount('vndnum', '>=', 2), 'counted in the same statement');
  } finally {
    t.services.knex.off('query', listen);
  }
  const reads = withoutIndexReads(statements).filter((s) => !/apikey|mntlck|instnc/i.test(s));
  if (t.engine === 'postgres') assert.equal(reads.length, 2, `one statement a read:\n${reads.join('\n')}`);
  else assert.equal(reads.length, 0, 'SQLite reads run on the connection itself, outside knex');
});

test('PostgreSQL: the statement of a read is the page itself, the token and the count in its select list; an empty page reads right', async () => {
  const statements: string[] = [];
  const listen = (q: { sql?: string }) => statements.push(String(q.sql));
  const readsOf = () => statements.filter((s) => !/apikey|mntlck|instnc/i.test(s));
  // A filter on a decimal: no count index on PostgreSQL, and a count no earlier read holds.
  const query = { filters: { match: { field: 'partCost', operator: '>=', value: 0 } }, orderBy: ['partCode ASC'], select: ['partCode', 'vendorNumber'], page: { pageNumber: 1, pageSize: 5 } };
  t.services.knex.on('query', listen);
  try {
    const first = await t.post('/api/v3/parts/query', query);
    assert.equal(first.status, 200, first.text);
    assert.equal(first.body.page.totalCount, await databaseCount('prtcst', '>=', money('0')));
    if (t.engine === 'postgres') {
      const [read] = readsOf();
      // No wrapping of the page (a LATERAL join ordered again outside cost PostgreSQL about twice the CPU: decision 0350).
      assert.doesNotMatch(read!, /lateral/i, read);
      assert.match(read!, /^select "b"\."prtcde", "b"\."vndnum", \(select .*\) as "__token", \(select count\(\*\) .*\) as "__count" from "tkfprt" as "b" where /, read);
    }
    // Nothing matches: an empty first page is totalCount 0 from that one statement.
    statements.length = 0;
    const none = await t.post('/api/v3/parts/query', { ...query, filters: { match: { field: 'partCost', operator: '<', value: -1 } } });
    assert.equal(none.status, 200, none.text);
    assert.deepEqual(none.body.page, { pageNumber: 1, pageSize: 5, totalCount: 0, returnedCount: 0 });
    assert.deepEqual(none.body.data, []);
    if (t.engine === 'postgres') assert.equal(readsOf().length, 1, `one statement:\n${readsOf().join('\n')}`);
    // A page past the end: empty, with the total (read again in a snapshot).
    const total = first.body.page.totalCount as number;
    const past = await t.post('/api/v3/parts/query', { ...query, page: { pageNumber: Math.ceil(total / 5) + 1, pageSize: 5 } });
    assert.equal(past.status, 200, past.text);
    assert.deepEqual(past.body.page, { pageNumber: Math.ceil(total / 5) + 1, pageSize: 5, totalCount: total, returnedCount: 0 });
  } finally {
    t.services.knex.off('query', listen);
  }
});
