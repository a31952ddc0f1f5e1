/**
 * Property: for random valid filter trees over the demo company (parts, job costs), the query
 * returns exactly the rows an in-memory evaluation of the same tree returns (all rows fetched
 * once, the tree evaluated in JavaScript by test/support/filter-eval.ts).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { TestApp } from '../../support/app';
import { useTestApp } from '../../support/use-test-app';
import { CATALOG } from '../../../generated/catalog';
import type { FieldDef } from '../../../src/catalog/types';
import { evaluate, type Json, type Node } from '../../support/filter-eval';

let t: TestApp;

useTestApp((app) => (t = app));

async function all(entity: string, body: Record<string, unknown>): Promise<any[]> {
  const out: any[] = [];
  for (let page = 1; ; page++) {
    const res = await t.post(`/api/v3/${entity}/query`, { ...body, page: { pageNumber: page, pageSize: 1000 } });
    assert.equal(res.status, 200, JSON.stringify(res.body).slice(0, 500));
    out.push(...res.body.data);
    if (res.body.data.length < 1000) return out;
  }
}

/** A leaf over `field`, with values drawn from the data (so trees select something) or made up. */
function leafArb(field: FieldDef, records: any[]): fc.Arbitrary<Node> {
  const seen = records.map((r) => r[field.name] as Json).filter((v) => v !== null);
  const pick = seen.length > 0 ? fc.constantFrom(...seen) : fc.constant(null);
  const name = field.name;
  switch (field.kind) {
    case 'integer':
    case 'decimal': {
      const made = field.kind === 'integer' ? fc.integer({ min: -5, max: 5000 }) : fc.integer({ min: -500, max: 500000 }).map((n) => n / 100);
      const value = fc.oneof(pick, made).filter((v) => v !== null) as fc.Arbitrary<number>;
      return fc.oneof(
        fc.record({ op: fc.constantFrom('=', '!=', '>', '<', '>=', '<=', '<>'), value }).map(({ op, value: v }) => ({ match: { field: name, operator: op, value: v } })),
        fc.array(value, { minLength: 1, maxLength: 8 }).map((values) => ({ match: { field: name, operator: 'in', values } })),
      );
    }
    case 'date': {
      const made = fc.date({ min: new Date('2020-01-01'), max: new Date('2030-12-31'), noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10));
      const value = fc.oneof(pick, made).filter((v) => v !== null) as fc.Arbitrary<string>;
      return fc.record({ op: fc.constantFrom('=', '!=', '>', '<', '>=', '<='), value }).map(({ op, value: v }) => ({ match: { field: name, operator: op, value: v } }));
    }
    case 'boolean':
      return fc.record({ op: fc.constantFrom('=', '!='), value: fc.boolean() }).map(({ op, value }) => ({ match: { field: name, operator: op, value } }));
    case 'string': {
      const ascii = seen.filter((v) => typeof v === 'string' && /^[\x20-\x7e]*$/.test(v)) as string[];
      const base = ascii.length > 0 ? fc.constantFrom(...ascii) : fc.constant('x');
      const value = fc.oneof(base, fc.string({ maxLength: 4 }));
      const fragment = fc
        .tuple(base, fc.nat(), fc.nat(), fc.boolean())
        .map(([s, a, b, upper]) => {
          const clean = s.replace(/[%_]/g, '');
          const from = clean.length ? a % clean.length : 0;
          const part = clean.slice(from, from + 1 + (b % 4));
          return upper ? part.toUpperCase() : part.toLowerCase();
        });
      const pattern = fc.tuple(fragment, fc.constantFrom('p%', '%p', '%p%', 'p')).map(([p, shape]) => shape.replace('p', p));
      return fc.oneof(
        fc.record({ op: fc.constantFrom('=', '!='), value }).map(({ op, value: v }) => ({ match: { field: name, operator: op, value: v } })),
        fc.record({ op: fc.constantFrom('LIKE', 'like', 'NOT LIKE', 'not like'), value: pattern }).map(({ op, value: v }) => ({ match: { field: name, operator: op, value: v } })),
        fc.array(value, { minLength: 1, maxLength: 6 }).map((values) => ({ match: { field: name, operator: 'IN', values } })),
      );
    }
    default:
      return fc.constant({ match: { field: name, operator: '!=', value: '00000000-0000-4000-8000-000000000000' } });
  }
}

function pairsArb(fields: FieldDef[], records: any[]): fc.Arbitrary<Node> {
  const names = fields.map((f) => f.name);
  const complete = records.filter((r) => names.every((n) => r[n] !== null));
  return fc.array(fc.constantFrom(...complete), { minLength: 1, maxLength: 12 }).map((rows) => ({
    match: { operator: 'inPairs', fields: names, pairs: rows.map((r) => Object.fromEntries(names.map((n) => [n, r[n]]))) },
  }));
}

function treeArb(leaves: fc.Arbitrary<Node>): fc.Arbitrary<Node> {
  const { tree } = fc.letrec<{ tree: Node; node: Node }>((tie) => ({
    tree: fc.oneof({ maxDepth: 3, depthIdentifier: 'filter' }, leaves, tie('node')),
    node: fc.oneof(
      fc.array(tie('tree'), { minLength: 1, maxLength: 4 }).map((and) => ({ and })),
      fc.array(tie('tree'), { minLength: 1, maxLength: 4 }).map((or) => ({ or })),
    ),
  }));
  return tree;
}

const CASES: Array<{ entity: string; fields: string[]; pairs: string[] }> = [
  { entity: 'parts', fields: ['recordNumber', 'partCode', 'partName', 'partUnit', 'partClass', 'partCost', 'costCode', 'inactive', 'manufacturer'], pairs: ['partUnit', 'partClass'] },
  { entity: 'job-costs', fields: ['jobNumber', 'phaseNumber', 'costCode', 'costType', 'transactionDate', 'description', 'costAmount', 'status', 'enteredDate'], pairs: ['jobNumber', 'costCode', 'costType'] },
];

describe('random filter trees return exactly the in-memory evaluation', () => {
  for (const c of CASES) {
    test(c.entity, async () => {
      const def = CATALOG[c.entity]!;
      const records = await all(c.entity, {});
      assert.ok(records.length > 0, `${c.entity} has rows`);
      const fields = c.fields.map((f) => def.fields[f]!);
      const leaves = fc.oneof(...fields.map((f) => leafArb(f, records)), pairsArb(c.pairs.map((f) => def.fields[f]!), records));
      let nonEmpty = 0;
      await fc.assert(
        fc.asyncProperty(treeArb(leaves), async (filters) => {
          const got = (await all(c.entity, { filters, select: ['id'] })).map((r) => r.id).sort();
          const want = records.filter((r) => evaluate(filters, r)).map((r) => r.id).sort();
          if (want.length > 0) nonEmpty++;
          assert.deepEqual(got, want);
        }),
        { numRuns: Number(process.env.PROPERTY_RUNS ?? 60), seed: Number(process.env.PROPERTY_SEED ?? 20261122) },
      );
      assert.ok(nonEmpty > 5, `only ${nonEmpty} trees selected anything`);
    });
  }
});
