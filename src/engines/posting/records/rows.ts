import { CATALOG } from '../../../../generated/catalog';
import type { FieldDef } from '../../../catalog/types';
import { Dec } from '../../../storage/decimal';
import { columnsUnavailable } from '../../../catalog/installed';
import type { PostingContext } from '../context';
import { insertStamps } from './audit';

/**
 * The write side of the catalog (generated/catalog.ts: x-table, x-column, x-scale): a posting
 * builds the row it inserts from a partial record in PUBLISHED names, and this module maps each
 * name to its column and encodes each decimal at its field's scale. Reads (engines/query) and
 * writes therefore share one mapping; no engine spells an entity's column.
 *
 * `extra` carries storage columns that have no published name (the parent key `_idref` of a
 * line, a column the contract does not publish). A column that has a published name is refused
 * there: it must be written through its name.
 *
 * On an older build of the accounting database (ctx.installed): a column the build lacks is left
 * out of the row when the write has nothing to store there (null); a value for it is needed, and
 * the row is refused with 422 COLUMN_UNAVAILABLE naming it (needs.ts, rule 2): nothing a request
 * or a cascade meant to store is dropped silently.
 */

/** A value of a published field: decimals as Dec (or a number, converted exactly), the rest as is. */
export type PublishedValue = string | number | boolean | Dec | null | undefined;

export type StorageRow = Record<string, unknown>;

type WriteContext = Pick<PostingContext, 'dialect' | 'user' | 'installed'>;

function encodeField(ctx: WriteContext, where: string, field: FieldDef, value: PublishedValue): unknown {
  if (field.kind !== 'decimal' || value === null || value === undefined) return value;
  if (field.scale === undefined) throw new Error(`write-rows: ${where}.${field.name} is a decimal without a scale`);
  if (value instanceof Dec) return ctx.dialect.encodeDecimal(value, field.scale);
  if (typeof value === 'number') return ctx.dialect.encodeDecimal(new Dec(value), field.scale);
  throw new Error(`write-rows: ${where}.${field.name} is a decimal, got ${typeof value}`);
}

/** A field set's fields by published name, and its storage columns that have one (built once per set: a row per line asked for them anew). */
interface FieldIndex {
  byName: ReadonlyMap<string, FieldDef>;
  published: ReadonlySet<string>;
}

const fieldIndexes = new WeakMap<Record<string, FieldDef>, FieldIndex>();

function fieldIndexOf(fields: Record<string, FieldDef>): FieldIndex {
  let index = fieldIndexes.get(fields);
  if (!index) {
    const own = Object.keys(fields).map((name) => [name, fields[name]!] as const);
    index = { byName: new Map(own), published: new Set(own.map(([, f]) => f.column)) };
    fieldIndexes.set(fields, index);
  }
  return index;
}

function buildRow(ctx: WriteContext, where: string, table: string, fields: Record<string, FieldDef>, values: Record<string, PublishedValue>, extra: StorageRow): StorageRow {
  const row: StorageRow = {};
  const installed = ctx.installed && ctx.installed.generation > 0 ? ctx.installed : undefined;
  // Names the installed build lacks a column for while the write has a value for them (needs.ts, rule 2).
  let needed: string[] | undefined;
  const index = fieldIndexOf(fields);
  for (const name of Object.keys(values)) {
    const value = values[name];
    const field = index.byName.get(name);
    if (!field) throw new Error(`write-rows: ${where} has no published field ${name}`);
    // A column the installed build lacks: left out when there is nothing to store, else needed.
    if (installed?.lacks(table, field.column)) {
      if (value !== null && value !== undefined) (needed ??= []).push(`${where}.${name}`);
      continue;
    }
    row[field.column] = encodeField(ctx, where, field, value);
  }
  for (const column of Object.keys(extra)) {
    const value = extra[column];
    if (index.published.has(column)) throw new Error(`write-rows: ${where} column ${column} has a published name: write it through that name`);
    if (Object.hasOwn(row, column)) throw new Error(`write-rows: ${where} column ${column} given twice`);
    if (installed?.lacks(table, column)) {
      if (value !== null && value !== undefined) (needed ??= []).push(`${table}.${column}`);
      continue;
    }
    row[column] = value;
  }
  if (needed) throw columnsUnavailable(needed, 'this posting');
  return Object.assign(row, insertStamps(ctx.user));
}

function entityOf(entityName: string) {
  const entity = Object.hasOwn(CATALOG, entityName) ? CATALOG[entityName] : undefined;
  if (!entity) throw new Error(`write-rows: no entity ${entityName} in the catalog`);
  return entity;
}

/** The storage row of a record of `entityName` (its x-table) built from published names. */
export function recordRow(ctx: WriteContext, entityName: string, values: Record<string, PublishedValue>, extra: StorageRow = {}): StorageRow {
  const entity = entityOf(entityName);
  return buildRow(ctx, entityName, entity.table, entity.fields, values, extra);
}

/** The storage row of one element of a child collection (e.g. `lines`); the parent key goes in `extra` under `childTableOf(...).parentColumn`. */
export function childRow(ctx: WriteContext, entityName: string, collection: string, values: Record<string, PublishedValue>, extra: StorageRow = {}): StorageRow {
  const entity = entityOf(entityName);
  const child = Object.hasOwn(entity.children, collection) ? entity.children[collection] : undefined;
  if (!child) throw new Error(`write-rows: ${entityName} has no child collection ${collection}`);
  return buildRow(ctx, `${entityName}.${collection}`, child.table, child.fields, values, extra);
}
