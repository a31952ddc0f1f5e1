/**
 * SQL Server is compiled only (no server in CI): the statements of the reference change counter
 * (migration 20261124000041) are checked for their T-SQL shape, as test/storage/mssql-compile.test.ts
 * does for the upddte triggers, and the counter read compiles for mssql.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import knexFactory from 'knex';
import { COUNTER_TABLE, REFERENCE_TABLES, createStatements, dropStatements } from '../../db/migrations/20261124000041_reference_change_counter';
import { MORE_REFERENCE_TABLES } from '../../db/migrations/20261126000001_reference_counter_vendors_jobs';
import { GROUPED_REFERENCE_TABLES } from '../../db/migrations/20261126000002_reference_counter_cost_codes_phases';

const mssql = knexFactory({ client: 'mssql' });
after(() => mssql.destroy());

test('one AFTER INSERT, UPDATE, DELETE trigger per reference table, each its own batch, bumping the one counter row', () => {
  for (const tables of [REFERENCE_TABLES, MORE_REFERENCE_TABLES, GROUPED_REFERENCE_TABLES]) checkTriggers(tables);
});

function checkTriggers(tables: readonly string[]): void {
  const statements = createStatements('mssql', tables);
  assert.equal(statements.length, tables.length);
  tables.forEach((table, i) => {
    const sql = statements[i]!;
    assert.match(sql, new RegExp(`^CREATE OR ALTER TRIGGER \\[${table}_refchg\\] ON \\[${table}\\] AFTER INSERT, UPDATE, DELETE AS BEGIN SET NOCOUNT ON; `));
    assert.match(sql, /IF EXISTS \(SELECT 1 FROM inserted\) OR EXISTS \(SELECT 1 FROM deleted\) UPDATE \[refchg\] SET \[n\] = \[n\] \+ 1 WHERE \[id\] = 1; END$/);
    assert.ok(!/;\s*GO\b/i.test(sql), 'no GO separator: one batch per knex.raw');
    // Balanced brackets and parentheses (a cheap syntax check of what cannot be run here).
    assert.equal((sql.match(/\[/g) ?? []).length, (sql.match(/\]/g) ?? []).length);
    assert.equal((sql.match(/\(/g) ?? []).length, (sql.match(/\)/g) ?? []).length);
  });
  assert.deepEqual(dropStatements('mssql', tables), tables.map((t) => `DROP TRIGGER IF EXISTS [${t}_refchg]`));
}

test('the counter read compiles for SQL Server', () => {
  const sql = mssql(COUNTER_TABLE).where({ id: 1 }).first('n').toSQL().toNative().sql;
  assert.equal(sql, 'select top (@p0) [n] from [refchg] where [id] = @p1');
});

test('PostgreSQL: statement-level triggers (a bulk UPDATE bumps once), TRUNCATE included; SQLite: one trigger per event', () => {
  for (const tables of [REFERENCE_TABLES, MORE_REFERENCE_TABLES, GROUPED_REFERENCE_TABLES]) {
    for (const t of tables) {
      assert.ok(createStatements('postgres', tables).some((s) => s.includes(`ON "${t}" FOR EACH STATEMENT`) && s.includes('TRUNCATE')));
      for (const e of ['INSERT', 'UPDATE', 'DELETE']) assert.ok(createStatements('sqlite', tables).some((s) => s.includes(`AFTER ${e} ON "${t}"`)));
    }
  }
});
