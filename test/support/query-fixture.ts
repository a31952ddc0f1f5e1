/**
 * A small fixture catalog and table pair for engine-level tests of the query engine that do
 * not depend on the real catalog: `widgets` (all field kinds) with child collection `lines`.
 */
import { randomUUID } from 'node:crypto';
import knexFactory, { type Knex } from 'knex';
import type { EntityDef, FieldDef } from '../../src/catalog/types';
import { dialectFor } from '../../src/storage/dialect';
import { parseDatabaseUrl, type Engine } from '../../src/storage/database';
import { Dec } from '../../src/storage/decimal';
import { installDataCounter } from '../../db/migrations/20261125000001_data_change_counter';
import { createThrowawayDatabase } from './pg-throwaway';

/** SQLite, or PostgreSQL with TEST_ENGINE=postgres and TEST_POSTGRES_URL. */
export const FIXTURE_ENGINE: Engine = process.env.TEST_ENGINE === 'postgres' && process.env.TEST_POSTGRES_URL ? 'postgres' : 'sqlite';

/** `extra.sqlType` is the column's type as created below (its value bounds: src/catalog/bounds.ts). */
const f = (name: string, column: string, kind: FieldDef['kind'], extra: Partial<FieldDef> & { sqlType: string }): FieldDef => ({ name, column, kind, nullable: true, ...extra });

export const WIDGETS: EntityDef = {
  entity: 'widgets',
  schema: 'Widget',
  table: 'wdgt',
  tag: 'Inventory',
  queryOperationId: 'queryWidgets',
  requestSchema: 'WidgetQueryRequest',
  keyColumn: '_idnum',
  fields: {
    id: f('id', '_idnum', 'uuid', { nullable: false, sqlType: 'uniqueidentifier' }),
    recordNumber: f('recordNumber', 'recnum', 'integer', { nullable: false, sqlType: 'int' }),
    widgetCode: f('widgetCode', 'wdgcde', 'string', { nullable: false, sqlType: 'nvarchar(20)' }),
    widgetName: f('widgetName', 'wdgnme', 'string', { sqlType: 'nvarchar(50)' }),
    widgetCost: f('widgetCost', 'wdgcst', 'decimal', { scale: 2, sqlType: 'decimal(12, 2)' }),
    quantity: f('quantity', 'qtyohn', 'decimal', { scale: 4, sqlType: 'decimal(12, 4)' }),
    activeDate: f('activeDate', 'actdte', 'date', { sqlType: 'date' }),
    inactive: f('inactive', 'inactv', 'boolean', { nullable: false, sqlType: 'bit' }),
    vendorId: f('vendorId', 'vndid', 'uuid', { sqlType: 'uniqueidentifier' }),
    updatedAt: f('updatedAt', 'upddte', 'datetime', { sqlType: 'datetime2' }),
  },
  children: {
    lines: {
      name: 'lines',
      schema: 'WidgetLine',
      table: 'wdgln',
      parentColumn: '_idref',
      orderColumn: 'linnum',
      fields: {
        lineNumber: f('lineNumber', 'linnum', 'integer', { nullable: false, sqlType: 'int' }),
        description: f('description', 'dscrpt', 'string', { sqlType: 'nvarchar(50)' }),
        extendedTotal: f('extendedTotal', 'extttl', 'decimal', { scale: 2, sqlType: 'decimal(12, 2)' }),
      },
    },
  },
  changeStamps: { lastUpdated: 'upddte' },
  matchFields: ['widgetCode', 'widgetName'],
  requestExtras: {
    activeOnly: { field: 'inactive', operator: '=', value: false, kind: 'flag' },
    costAbove: { field: 'widgetCost', operator: '>', kind: 'value' },
  },
};

export interface FixtureRow {
  id: string;
  recordNumber: number;
  widgetCode: string;
  widgetName: string | null;
  widgetCost: number | null;
  quantity: number | null;
  activeDate: string | null;
  inactive: boolean;
  vendorId: string | null;
  updatedAt: string;
  lines: Array<{ lineNumber: number; description: string | null; extendedTotal: number }>;
}

/** Deterministic pseudo-random rows (no Math.random: failures must reproduce). */
export function fixtureRows(count: number): FixtureRow[] {
  let seed = 42;
  const rnd = () => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed / 2147483648;
  };
  const names = ['Copper pipe 3/4', 'Café valve', 'PVC elbow', 'Brass fitting', null, 'Steel  bolt', 'copper-pipe ½'];
  const vendors = [randomUUID(), randomUUID(), null];
  const rows: FixtureRow[] = [];
  for (let i = 0; i < count; i++) {
    const lineCount = Math.floor(rnd() * 4);
    rows.push({
      id: randomUUID(),
      recordNumber: i + 1,
      widgetCode: `W-${String(Math.floor(rnd() * 500)).padStart(4, '0')}`,
      widgetName: names[i % names.length]!,
      widgetCost: i % 11 === 0 ? null : Math.round(rnd() * 20000) / 100,
      quantity: i % 13 === 0 ? null : Math.round(rnd() * 1000000) / 10000,
      activeDate: i % 7 === 0 ? null : `2026-${String(1 + Math.floor(rnd() * 12)).padStart(2, '0')}-${String(1 + Math.floor(rnd() * 28)).padStart(2, '0')}`,
      inactive: rnd() < 0.3,
      vendorId: vendors[i % 3]!,
      updatedAt: `2026-11-${String(1 + (i % 28)).padStart(2, '0')} ${String(i % 24).padStart(2, '0')}:15:00`,
      lines: Array.from({ length: lineCount }, (_, j) => ({
        lineNumber: j + 1,
        description: j % 2 ? `line ${j}` : null,
        extendedTotal: Math.round(rnd() * 100000) / 100,
      })),
    });
  }
  return rows;
}

export interface FixtureDatabase {
  knex: Knex;
  engine: Engine;
  destroy(): Promise<void>;
}

async function emptyDatabase(): Promise<FixtureDatabase> {
  if (FIXTURE_ENGINE === 'sqlite') {
    // The connection as the service opens one: its pragmas and the SQLite dialect's LIKE function (decision 0463).
    const knex = knexFactory(parseDatabaseUrl('sqlite://:memory:').config);
    return { knex, engine: 'sqlite', destroy: () => knex.destroy() };
  }
  const db = await createThrowawayDatabase(process.env.TEST_POSTGRES_URL!, 'ais_qfx');
  const knex = knexFactory({ client: 'pg', connection: db.url, pool: { min: 0, max: 4 } });
  return {
    knex,
    engine: 'postgres',
    destroy: async () => {
      await knex.destroy();
      db.drop();
    },
  };
}

/** A fresh database (SQLite in memory, or a throwaway PostgreSQL database) holding the fixture rows. */
export async function fixtureDatabase(rows: FixtureRow[]): Promise<FixtureDatabase> {
  const db = await emptyDatabase();
  const { knex } = db;
  const dialect = dialectFor(db.engine);
  await knex.schema.createTable('wdgt', (t) => {
    t.uuid('_idnum').primary();
    t.integer('recnum').notNullable().unique();
    t.string('wdgcde', 20).notNullable();
    t.string('wdgnme', 50).nullable();
    dialect.decimalColumn(t, 'wdgcst', 12, 2).nullable();
    dialect.decimalColumn(t, 'qtyohn', 12, 4).nullable();
    t.date('actdte').nullable();
    t.boolean('inactv').notNullable();
    t.uuid('vndid').nullable();
    t.datetime('upddte').notNullable();
    t.index(['wdgcde', '_idnum', 'wdgcst']);
  });
  await knex.schema.createTable('wdgln', (t) => {
    t.uuid('_idnum').primary();
    t.uuid('_idref').notNullable();
    t.integer('linnum').notNullable();
    t.string('dscrpt', 50).nullable();
    dialect.decimalColumn(t, 'extttl', 12, 2).notNullable();
    t.unique(['_idref', 'linnum']);
  });
  // Change tokens (count reuse, match index) come from the data change counter, as in the books.
  await installDataCounter(knex, ['wdgt', 'wdgln']);
  const enc = (v: number | null, scale: number) => (v === null ? null : dialect.encodeDecimal(new Dec(String(v)), scale));
  for (let i = 0; i < rows.length; i += 200) {
    const slice = rows.slice(i, i + 200);
    await knex('wdgt').insert(
      slice.map((r) => ({
        _idnum: r.id,
        recnum: r.recordNumber,
        wdgcde: r.widgetCode,
        wdgnme: r.widgetName,
        wdgcst: enc(r.widgetCost, 2),
        qtyohn: enc(r.quantity, 4),
        actdte: r.activeDate,
        inactv: db.engine === 'sqlite' ? (r.inactive ? 1 : 0) : r.inactive,
        vndid: r.vendorId,
        upddte: db.engine === 'sqlite' ? r.updatedAt : r.updatedAt.replace(' ', 'T') + 'Z',
      })),
    );
    const lines = slice.flatMap((r) =>
      r.lines.map((l) => ({ _idnum: randomUUID(), _idref: r.id, linnum: l.lineNumber, dscrpt: l.description, extttl: enc(l.extendedTotal, 2) })),
    );
    if (lines.length > 0) await knex('wdgln').insert(lines);
  }
  return db;
}
