/**
 * The migrations compiled (not executed: no SQL Server here) for SQL Server: exact DECIMAL(p,s) for
 * every decimal field, uniqueidentifier keys, no float, the unique and foreign keys present. The
 * whole T-SQL is kept as a snapshot in test/fixtures/mssql-ddl.sql so a change to the DDL is a
 * visible diff; regenerate it with UPDATE_SNAPSHOTS=1.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import knexFactory from 'knex';
import { CATALOG } from '../../generated/catalog';
import { MIGRATIONS } from '../../db/migrate';
import { compileSteps, type AlterStep, type TableStep } from '../../db/migrations/support/schema';
import { createStatements, TABLES as TRIGGER_TABLES } from '../../db/migrations/20261122000004_upddte_triggers';
import type { FieldDef } from '../../src/catalog/types';

const SNAPSHOT = path.resolve(__dirname, '../fixtures/mssql-ddl.sql');
const mssql = knexFactory({ client: 'mssql' });
after(() => mssql.destroy());

function allSteps(): TableStep[] {
  const steps: TableStep[] = [];
  for (const [name, mod] of MIGRATIONS) {
    const s = (mod as unknown as { steps?: TableStep[] }).steps;
    if (name.endsWith('_upddte_triggers')) continue; // statements, not tables: checked below
    assert.ok(Array.isArray(s), `migration ${name} exports its steps`);
    steps.push(...s);
  }
  return steps;
}

/** Columns later migrations add to existing tables (`alterations`), compiled after the tables. */
function allAlterations(): AlterStep[] {
  return MIGRATIONS.flatMap(([, mod]) => (mod as unknown as { alterations?: AlterStep[] }).alterations ?? []);
}

const steps = allSteps();
const alterations = allAlterations();
const byTable = new Map(steps.map((s) => [s.table, s.build(mssql).toString()]));
for (const a of alterations) byTable.set(a.table, `${byTable.get(a.table) ?? ''};\n${a.build(mssql).toString()}`);
const ddl = [...compileSteps(mssql, steps), ...alterations.map((a) => a.build(mssql).toString()), ...createStatements('mssql')].join(';\n\n') + ';\n';

/** The column definition of `column` in the CREATE TABLE of `table`. */
function columnDef(table: string, column: string): string {
  const sql = byTable.get(table);
  assert.ok(sql, `no step creates ${table}`);
  const m = new RegExp(`(?:\\(|, |ADD )\\[${column}\\] (.+?)(?=, \\[|, CONSTRAINT |\\);|\\)$|;$|$)`, 'm').exec(sql);
  assert.ok(m, `${table}.${column} not in DDL`);
  return m[1]!;
}

test('matches the snapshot (UPDATE_SNAPSHOTS=1 rewrites it)', () => {
  if (process.env.UPDATE_SNAPSHOTS === '1' || !fs.existsSync(SNAPSHOT)) {
    fs.mkdirSync(path.dirname(SNAPSHOT), { recursive: true });
    fs.writeFileSync(SNAPSHOT, ddl);
  }
  assert.equal(ddl, fs.readFileSync(SNAPSHOT, 'utf8'));
});

test('no float, real or double anywhere', () => {
  assert.doesNotMatch(ddl, /\b(float|real|double)\b/i);
});

test('every decimal field is DECIMAL(p, scale) with the catalog scale; uuids are uniqueidentifier', () => {
  const check = (table: string, f: FieldDef) => {
    const def = columnDef(table, f.column);
    if (f.kind === 'decimal') {
      const m = /^decimal\((\d+), (\d+)\)/.exec(def);
      assert.ok(m, `${table}.${f.column}: ${def}`);
      assert.equal(Number(m[2]), f.scale, `${table}.${f.column} scale`);
      assert.ok(Number(m[1]) >= 7 && Number(m[1]) <= 18, `${table}.${f.column} precision`);
    }
    if (f.kind === 'uuid') assert.match(def, /^uniqueidentifier/, `${table}.${f.column}`);
    if (f.kind === 'integer') assert.match(def, /^(int|smallint|bigint)\b/, `${table}.${f.column}`);
    if (f.kind === 'string') assert.match(def, /^nvarchar\((\d+|max)\)/, `${table}.${f.column}`);
    if (f.kind === 'boolean') assert.match(def, /^bit\b/, `${table}.${f.column}`);
    if (f.kind === 'date') assert.match(def, /^date\b/, `${table}.${f.column}`);
    if (f.kind === 'datetime') assert.match(def, /^datetime2\b/, `${table}.${f.column}`);
    assert.equal(/not null/.test(def), !f.nullable, `${table}.${f.column} nullability`);
  };
  let decimals = 0;
  for (const e of Object.values(CATALOG)) {
    for (const f of Object.values(e.fields)) (check(e.table, f), (decimals += f.kind === 'decimal' ? 1 : 0));
    for (const c of Object.values(e.children)) for (const f of Object.values(c.fields)) check(c.table, f);
  }
  assert.ok(decimals > 100, `${decimals} decimal fields`);
});

test('primary, unique and foreign keys are present', () => {
  for (const e of Object.values(CATALOG)) {
    const sql = byTable.get(e.table)!;
    assert.match(sql, new RegExp(`CONSTRAINT \\[${e.table}_pk\\] PRIMARY KEY \\(\\[_idnum\\]\\)`), e.table);
    assert.match(sql, new RegExp(`ALTER TABLE \\[${e.table}\\] ADD CONSTRAINT \\[${e.table}_recnum_uq\\] UNIQUE \\(\\[recnum\\]\\)`), e.table);
    assert.match(sql, /\[insdte\] datetime2 not null CONSTRAINT \[\w+\] DEFAULT SYSUTCDATETIME\(\)/, e.table);
    for (const c of Object.values(e.children)) {
      const csql = byTable.get(c.table)!;
      assert.match(csql, new RegExp(`FOREIGN KEY \\(\\[_idref\\]\\) REFERENCES \\[${e.table}\\] \\(\\[_idnum\\]\\) ON DELETE CASCADE`), c.table);
      assert.match(csql, new RegExp(`ADD CONSTRAINT \\[${c.table}_idref_linnum_uq\\] UNIQUE \\(\\[_idref\\], \\[linnum\\]\\)`), c.table);
    }
  }
  const fk = (table: string, column: string, target: string) =>
    assert.match(byTable.get(table)!, new RegExp(`FOREIGN KEY \\(\\[${column}\\]\\) REFERENCES \\[${target}\\] \\(\\[recnum\\]\\)`), `${table}.${column}`);
  fk('jobcst', 'jobnum', 'actrec');
  fk('acpinv', 'vndnum', 'actpay');
  fk('lgtnln', 'lgract', 'lgract');
  fk('lgrbal', 'lgract', 'lgract');
  fk('apivln', 'lgract', 'lgract');
  fk('lgrtrn', 'srcnum', 'source');
  assert.match(byTable.get('lgrbal')!, /UNIQUE \(\[lgract\], \[postyr\], \[actprd\]\)/);
  assert.match(byTable.get('idmkey')!, /UNIQUE \(\[api_key_id\], \[idem_key\]\)/);
  assert.match(byTable.get('apikey')!, /UNIQUE \(\[key_hash\]\)/);
  assert.doesNotMatch(ddl, /CURRENT_TIMESTAMP/, 'timestamps default to UTC (SYSUTCDATETIME), not the host clock');
  // Referenced record numbers are unique *constraints*, not filtered unique indexes (which SQL Server cannot reference).
  assert.doesNotMatch(ddl, /WHERE \[recnum\] IS NOT NULL/);
});

test('tables are created before the tables that reference them', () => {
  const seen = new Set<string>();
  for (const s of steps) {
    const sql = byTable.get(s.table)!;
    for (const m of sql.matchAll(/REFERENCES \[(\w+)\]/g)) assert.ok(seen.has(m[1]!) || m[1] === s.table, `${s.table} references ${m[1]} before it exists`);
    seen.add(s.table);
  }
});

test('every entity and line table gets an upddte trigger (UTC, explicit values kept)', () => {
  const tables = new Set<string>();
  for (const e of Object.values(CATALOG)) {
    tables.add(e.table);
    for (const c of Object.values(e.children)) tables.add(c.table);
  }
  assert.deepEqual([...TRIGGER_TABLES].sort(), [...tables].sort());
  for (const sql of createStatements('mssql')) {
    assert.match(sql, /^CREATE OR ALTER TRIGGER \[\w{6}_upddte\] ON \[\w{6}\] AFTER UPDATE AS BEGIN SET NOCOUNT ON; IF NOT UPDATE\(\[upddte\]\)/);
    assert.match(sql, /SYSUTCDATETIME\(\)/);
  }
});
