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

/** The storage columns that have a published name, per field set (built once: a row per line asked for it anew). */
const publishedColumnSets = new WeakMap<Record<string, FieldDef>, ReadonlySet<string>>();

function publishedColumns(fields: Record<string, FieldDef>): ReadonlySet<string> {
  let set = publishedColumnSets.get(fields);
  if (!set) publishedColumnSets.set(fields, (set = new Set(Object.values(fields).map((f) => f.column))));
  return set;
}

function buildRow(ctx: WriteContext, where: string, table: string, fields: Record<string, FieldDef>, values: Record<string, PublishedValue>, extra: StorageRow): StorageRow {
  const row: StorageRow = {};
  const installed = ctx.installed && ctx.installed.generation > 0 ? ctx.installed : undefined;
  const needed: string[] = [];
  /** False when the installed build lacks `column`: left out when there is nothing to store, else needed. */
  const fits = (column: string, value: unknown, name: string): boolean => {
    if (!installed?.lacks(table, column)) return true;
    if (value !== null && value !== undefined) needed.push(name);
    return false;
  };
  for (const [name, value] of Object.entries(values)) {
    const field = Object.hasOwn(fields, name) ? fields[name] : undefined;
    if (!field) throw new Error(`write-rows: ${where} has no published field ${name}`);
    if (!fits(field.column, value, `${where}.${name}`)) continue;
    row[field.column] = encodeField(ctx, where, field, value);
  }
  const published = publishedColumns(fields);
  for (const [column, value] of Object.entries(extra)) {
    if (published.has(column)) throw new Error(`write-rows: ${where} column ${column} has a published name: write it through that name`);
    if (Object.hasOwn(row, column)) throw new Error(`write-rows: ${where} column ${column} given twice`);
    if (!fits(column, value, `${table}.${column}`)) continue;
    row[column] = value;
  }
  if (needed.length > 0) throw columnsUnavailable(needed, 'this posting');
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
