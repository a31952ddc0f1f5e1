import { CATALOG } from '../../../../generated/catalog';
import { parseColumnType } from '../../../catalog/bounds';
import type { FieldDef } from '../../../catalog/types';

/**
 * Where the records of a set live, from the catalog (generated/catalog.ts: x-table, x-column,
 * x-scale): the one place the write side turns a published name into a table or a column. A set
 * is an entity (`purchase-orders`) or one of its child collections (`purchase-orders.lines`).
 */

/** A child's pseudo-field for its parent's key (`_idref`), which has no published name. */
export const PARENT_ID = 'parentId';

export interface RecordShape {
  /** `entity` or `entity.collection`, for messages. */
  name: string;
  /** The entity the set belongs to (its own name for an entity). */
  entityName: string;
  table: string;
  /** The unique key column (`_idnum`): the `id` field. */
  keyColumn: string;
  fields: Readonly<Record<string, FieldDef>>;
  /** A child collection: the column holding its parent's key (`_idref`) and its order column (`linnum`). */
  parentColumn?: string;
  orderColumn?: string;
  /** Published name of each column that has one. */
  nameOfColumn: ReadonlyMap<string, string>;
}

const shapes = new Map<string, RecordShape>();

function build(name: string): RecordShape {
  const [entityName = '', collection, more] = name.split('.');
  const entity = Object.hasOwn(CATALOG, entityName) ? CATALOG[entityName] : undefined;
  if (!entity || more !== undefined) throw new Error(`records: no entity ${entityName} in the catalog`);
  if (collection === undefined) {
    return { name, entityName, table: entity.table, keyColumn: entity.keyColumn, fields: entity.fields, nameOfColumn: columnNames(entity.fields) };
  }
  const child = Object.hasOwn(entity.children, collection) ? entity.children[collection] : undefined;
  if (!child) throw new Error(`records: ${entityName} has no child collection ${collection}`);
  if (Object.hasOwn(child.fields, PARENT_ID)) throw new Error(`records: ${name} publishes a field named ${PARENT_ID}`);
  const fields: Record<string, FieldDef> = {
    ...child.fields,
    [PARENT_ID]: { name: PARENT_ID, column: child.parentColumn, kind: 'uuid', nullable: false, sqlType: 'uniqueidentifier' },
  };
  return { name, entityName, table: child.table, keyColumn: child.fields.id?.column ?? '_idnum', fields, parentColumn: child.parentColumn, orderColumn: child.orderColumn, nameOfColumn: columnNames(fields) };
}

function columnNames(fields: Readonly<Record<string, FieldDef>>): Map<string, string> {
  return new Map(Object.values(fields).map((f) => [f.column, f.name]));
}

/** The shape of `entity` or `entity.collection` (built once). */
export function shapeOf(name: string): RecordShape {
  let shape = shapes.get(name);
  if (!shape) shapes.set(name, (shape = build(name)));
  return shape;
}

/** The published field `field` of a set; an unknown name is a bug. */
export function fieldOf(shape: RecordShape, field: string): FieldDef {
  const def = Object.hasOwn(shape.fields, field) ? shape.fields[field] : undefined;
  if (!def) throw new Error(`records: ${shape.name} has no published field ${field}`);
  return def;
}

/** The storage column of the published field `field` of `set`. */
export function columnOf(set: string, field: string): string {
  return fieldOf(shapeOf(set), field).column;
}

/** The table a record of `entityName` is written to (its x-table). */
export function tableOf(entityName: string): string {
  return shapeOf(entityName).table;
}

/** The table of a child collection, and the column holding its parent's key (`_idref`). */
export function childTableOf(entityName: string, collection: string): { table: string; parentColumn: string } {
  const shape = shapeOf(`${entityName}.${collection}`);
  return { table: shape.table, parentColumn: shape.parentColumn! };
}

/**
 * `text` cut to the width of the column it is stored in (`nvarchar(50)`: 50 UTF-16 code units, as
 * SQL Server counts them; src/catalog/bounds.ts parses the type). A column without a width keeps it whole.
 */
export function fitText(set: string, field: string, text: string): string {
  const type = parseColumnType(fieldOf(shapeOf(set), field).sqlType);
  if (type.kind !== 'string') throw new Error(`records: ${set}.${field} is not text`);
  return type.maxLength === undefined ? text : text.slice(0, type.maxLength);
}

/**
 * The name of the lock that serialises postings on one natural key of `entityName` (ctx.lockName):
 * `<table>:<parts>`, or `<table>.<column>:<parts>` when the key is named by a field. The names are
 * those every instance has always taken (a rolling deployment runs old and new side by side: a
 * renamed lock would not serialise them).
 */
export function recordLockName(entityName: string, parts: ReadonlyArray<string | number>, field?: string): string {
  const shape = shapeOf(entityName);
  const on = field === undefined ? shape.table : `${shape.table}.${fieldOf(shape, field).column}`;
  return `${on}:${parts.join(':')}`;
}

/** The record number counter of `entityName` (storage/numbers.ts names a table's counter by the table). */
export function counterOf(entityName: string): string {
  return shapeOf(entityName).table;
}
