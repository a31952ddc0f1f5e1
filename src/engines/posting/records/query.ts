import type { Knex } from 'knex';
import { Dec } from '../../../storage/decimal';
import { UNREADABLE, queryDialectFor, type Dialect } from '../../../storage/dialect';
import { publishedValue, storedValueUnreadable, type RecordSubject } from '../../query/envelope';
import type { FieldDef } from '../../../catalog/types';
import type { PostingContext } from '../context';
import { updateStamps } from './audit';
import { compiledOnce } from '../../../storage/compiled-statements';
import { classifyChangedCell, guardedChange, rememberChangedCells, type ColumnBound, type UnstorableCell } from '../../../storage/computed-changes';
import { decimalLimit } from '../limits';
import { PARENT_ID, fieldOf, shapeOf, type RecordShape } from './shapes';

/**
 * Reads and updates of stored records in PUBLISHED names (the catalog maps them: shapes.ts), for
 * what a posting looks up (the order it receives, the records it posts, the setup it posts by)
 * and the records it changes. A knex query underneath, statement for statement what a posting
 * would write by hand, so a document never spells a table or a column:
 *
 *   records(ctx, 'purchase-orders.lines').ofParent(order.id).orderBy('lineNumber').all(['id', 'quantity'])
 *   records(ctx, 'purchase-orders').where({ id }).update({ receivedTotal: increment(total), status })
 *
 * Values come back decoded by their field's kind: integers as numbers, decimals as Dec (at the
 * column's scale), booleans as booleans, dates as YYYY-MM-DD, text as stored; null stays null.
 * A stored value is read as a query reads it (envelope.ts, publishedValue): one the contract
 * cannot publish for its field is 502 STORED_VALUE_UNREADABLE naming the record, and the posting
 * rolls back; it is never taken for another value (text in an inactive flag is not "active").
 * Condition and change values are encoded the same way (a Dec at its column's scale). Every
 * update sets the audit stamps (audit.ts). A read or update runs at once (the posting's queued
 * inserts wait in its statement batch; the cascades await each insert before the next read).
 */

/** A value a condition compares with, or a change stores. */
export type RecordValue = string | number | boolean | Dec | null;

/** A stored record's fields, decoded (see above). */
export type StoredRecord = Record<string, any>;

/** A change that computes the new value from the stored one (one statement, no read first). */
export interface ComputedChange {
  readonly computed: 'increment' | 'decrementToZero';
  readonly by: Dec;
  /** The request field behind `by` (`lines[2].updateQuantity`), named should the change push the value past its column (decision 0441). */
  readonly field?: string;
}

/** stored + by. */
export function increment(by: Dec, field?: string): ComputedChange {
  return { computed: 'increment', by, ...(field !== undefined ? { field } : {}) };
}

/** stored - by, but never below zero (what arrives is no longer on order, down to none). */
export function decrementToZero(by: Dec, field?: string): ComputedChange {
  return { computed: 'decrementToZero', by, ...(field !== undefined ? { field } : {}) };
}

/** What a computed change stores, computed from the stored decimal as the SQL of computedChange does. */
function changed(stored: Dec, change: ComputedChange): Dec {
  if (change.computed === 'increment') return stored.plus(change.by);
  return stored.greaterThan(change.by) ? stored.minus(change.by) : new Dec(0);
}

type Change = RecordValue | ComputedChange;

/** What a read needs (the transaction, the engine's decimals); an update also stamps who and when. */
export type RecordsContext = Pick<PostingContext, 'trx' | 'dialect' | 'now' | 'user' | 'readAhead'>;

/** The read-ahead rows of `statement`, if the context holds them for exactly it (taken once). */
function takeReadAhead(ctx: RecordsContext, statement: Knex.QueryBuilder): Array<Record<string, unknown>> | undefined {
  const ahead = ctx.readAhead;
  if (!ahead) return undefined;
  ctx.readAhead = undefined;
  const compiled = statement.toSQL();
  const bindings = compiled.bindings as readonly unknown[];
  if (compiled.sql !== ahead.sql || bindings.length !== ahead.bindings.length) return undefined;
  for (let i = 0; i < bindings.length; i += 1) if (!Object.is(bindings[i], ahead.bindings[i])) return undefined;
  return ahead.rows;
}

const isComputed = (v: unknown): v is ComputedChange => typeof v === 'object' && v !== null && 'computed' in v;

/**
 * The SET expression of a computed change of `column` by `by` (encoded): NULL when the stored value
 * is no decimal as this engine stores one (another program's text or fraction on SQLite, NaN or an
 * infinity on PostgreSQL), never added to as 0 or its numeric prefix, nor swallowing `by`; NULL
 * too when the result lies beyond `bound` (the column's: a received total pushed past
 * decimal(14, 2), decision 0441). Every column a posting changes so is NOT NULL (db/migrations:
 * pchord.rcvttl, pcorln.rcvdte, invqty.qtyord), so the NULL refuses the statement and the refusal
 * is named after the rollback (RecordQuery.changedCells, storage/computed-changes.ts;
 * docs/decisions/0391). The expression is written twice (its test and its value): the bindings
 * are `by, by` (increment) and `by, by, by, by` (decrementToZero) (`computedBindings`). A nullable
 * column would store the NULL: it needs another guard before it is changed so. Exported for the
 * compile tests.
 */
export function computedChange(db: Knex | Knex.Transaction, dialect: Dialect, column: string, computed: ComputedChange['computed'], by: Knex.Value, bound: ColumnBound): Knex.Raw {
  return computed === 'increment'
    ? guardedChange(db, dialect, column, '?? + ?', [column, by], bound)
    : guardedChange(db, dialect, column, 'CASE WHEN ?? > ? THEN ?? - ? ELSE 0 END', [column, by, column, by], bound);
}

/** The value bindings of computedChange, in order. */
export function computedBindings(computed: ComputedChange['computed'], by: Knex.Value): Knex.Value[] {
  return computed === 'increment' ? [by, by] : [by, by, by, by];
}

function encode(dialect: Dialect, shape: RecordShape, field: FieldDef, value: RecordValue): unknown {
  if (field.kind !== 'decimal' || value === null) return value;
  if (field.scale === undefined) throw new Error(`records: ${shape.name}.${field.name} is a decimal without a scale`);
  if (value instanceof Dec) return dialect.encodeDecimal(value, field.scale);
  if (typeof value === 'number') return dialect.encodeDecimal(new Dec(value), field.scale);
  throw new Error(`records: ${shape.name}.${field.name} is a decimal, got ${typeof value}`);
}

/** The output name under which a read that did not ask for `id` selects the key anyway: a value that cannot be read names its record. */
const KEY = '__key';

/** Selected columns as a statement signature names them (the key's alias included). */
function signatureOf(columns: ReadonlyArray<string | Record<string, string>>): string {
  return columns.map((c) => (typeof c === 'string' ? c : Object.entries(c).map(([alias, column]) => `${column} as ${alias}`).join(','))).join(',');
}

/** Whose rows a set's are (envelope.ts): names the record of a value that cannot be read. */
function subjectOf(shape: RecordShape, row: Record<string, unknown>): RecordSubject {
  const collection = shape.name.includes('.') ? shape.name.slice(shape.entityName.length + 1) : undefined;
  return {
    entity: shape.entityName,
    ...(collection !== undefined ? { collection } : {}),
    keyColumn: row[shape.keyColumn] !== undefined ? shape.keyColumn : KEY,
    ...(shape.parentColumn !== undefined ? { parentColumn: shape.parentColumn } : {}),
  };
}

function decode(dialect: Dialect, shape: RecordShape, field: FieldDef, raw: unknown, row: Record<string, unknown>): unknown {
  const value = publishedValue(queryDialectFor(dialect.engine), field, raw);
  if (value === UNREADABLE) throw storedValueUnreadable(subjectOf(shape, row), field, raw, row);
  if (value === null) return null;
  switch (field.kind) {
    case 'decimal':
      // Exact, from what is stored (the check above saw it is a value of the column).
      return dialect.decodeDecimal(raw, field.scale ?? 0);
    case 'uuid':
      return String(raw);
    case 'datetime':
      return raw;
    default:
      return value;
  }
}

/** A stored row (storage columns) in published names, decoded; columns without a published name are left out. */
function decodeRecord(dialect: Dialect, shape: RecordShape, row: Record<string, unknown>): StoredRecord {
  const out: StoredRecord = {};
  for (const [column, raw] of Object.entries(row)) {
    const name = shape.nameOfColumn.get(column);
    if (name !== undefined) out[name] = decode(dialect, shape, shape.fields[name]!, raw, row);
  }
  return out;
}

/** A row of `set` as stored (storage columns, as another reader such as the reference cache holds it), in published names, decoded. */
export function decodeStored(dialect: Dialect, set: string, row: Record<string, unknown>): StoredRecord {
  return decodeRecord(dialect, shapeOf(set), row);
}

export class RecordQuery {
  private readonly shape: RecordShape;
  private readonly query: Knex.QueryBuilder;
  /**
   * What the statement is made of, call by call (its SQL text follows from it), and the values
   * knex binds, in its order: the statement is compiled once per signature
   * (storage/compiled-statements.ts checks the bindings on the first compile).
   */
  private signature: string;
  private readonly bindings: unknown[] = [];

  constructor(
    private readonly ctx: RecordsContext,
    set: string,
  ) {
    this.shape = shapeOf(set);
    this.query = ctx.trx(this.shape.table);
    this.signature = `records ${this.shape.table}`;
  }

  /** Conditions on `values` (one per field, in order): `= ?`, or IS NULL for null. */
  private noteConditions(kind: string, columns: Record<string, unknown>): void {
    for (const [column, value] of Object.entries(columns)) {
      if (value === null) this.signature += ` ${kind} ${column} null`;
      else {
        this.signature += ` ${kind} ${column}`;
        this.bindings.push(value);
      }
    }
  }

  /** The query compiled once per signature, `extra` bindings after the conditions' (a limit). */
  private compiled(query: Knex.QueryBuilder, signature: string, extra: readonly unknown[] = []): Knex.QueryBuilder {
    return compiledOnce(query, signature, extra.length > 0 ? [...this.bindings, ...extra] : this.bindings);
  }

  private column(field: string): string {
    return fieldOf(this.shape, field).column;
  }

  private encoded(field: string, value: RecordValue): unknown {
    return encode(this.ctx.dialect, this.shape, fieldOf(this.shape, field), value);
  }

  private columns(values: Readonly<Record<string, RecordValue>>): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const [field, value] of Object.entries(values)) out[this.column(field)] = this.encoded(field, value);
    return out;
  }

  /** Every field equal to its value. */
  where(values: Readonly<Record<string, RecordValue>>): this {
    const columns = this.columns(values);
    this.noteConditions('where', columns);
    this.query.where(columns);
    return this;
  }

  /** Not every field equal to its value (one field: not equal). */
  whereNot(values: Readonly<Record<string, RecordValue>>): this {
    const columns = this.columns(values);
    this.noteConditions('not', columns);
    this.query.whereNot(columns);
    return this;
  }

  whereIn(field: string, values: readonly RecordValue[]): this {
    const encoded = values.map((v) => this.encoded(field, v));
    this.signature += ` in ${this.column(field)} ${encoded.length}`;
    this.bindings.push(...encoded);
    this.query.whereIn(this.column(field), encoded as readonly any[]);
    return this;
  }

  whereNull(field: string): this {
    this.signature += ` null ${this.column(field)}`;
    this.query.whereNull(this.column(field));
    return this;
  }

  whereNotNull(field: string): this {
    this.signature += ` notnull ${this.column(field)}`;
    this.query.whereNotNull(this.column(field));
    return this;
  }

  orderBy(field: string, direction: 'asc' | 'desc' = 'asc'): this {
    this.signature += ` order ${this.column(field)} ${direction}`;
    this.query.orderBy(this.column(field), direction);
    return this;
  }

  /** A child collection's records of one parent (`_idref`). */
  ofParent(id: string): this {
    return this.where({ [PARENT_ID]: id });
  }

  /** A child collection's records of these parents. */
  ofParents(ids: readonly string[]): this {
    return this.whereIn(PARENT_ID, ids);
  }

  limit(count: number): this {
    // Its binding comes after the conditions' (knex writes `limit ?` last): noted at the read.
    this.limited = count;
    this.query.limit(count);
    return this;
  }

  private limited: number | undefined;

  /** The columns of `fields`, and the key (as KEY) when they do not hold it; none: every column. */
  private selected(fields: readonly string[] | undefined): Array<string | Record<string, string>> {
    if (fields === undefined) return [];
    const columns = fields.map((f) => this.column(f));
    return columns.includes(this.shape.keyColumn) ? columns : [...columns, { [KEY]: this.shape.keyColumn }];
  }

  /** The matching records with `fields` (every stored column that has a published name when absent). */
  async all(fields?: readonly string[]): Promise<StoredRecord[]> {
    const columns = this.selected(fields);
    const query = columns.length > 0 ? this.query.select(columns) : this.query;
    const limit = this.limited === undefined ? [] : [this.limited];
    const rows = (await this.compiled(query, `${this.signature} limit ${limit.length} all ${signatureOf(columns)}`, limit)) as Array<Record<string, unknown>>;
    return rows.map((row) => decodeRecord(this.ctx.dialect, this.shape, row));
  }

  /** The statement of `first(fields)`, compiled (`?` placeholders), not sent: what a BEGIN may read ahead (ReadAhead). */
  private firstQuery(fields?: readonly string[]): Knex.QueryBuilder {
    const columns = this.selected(fields);
    const query = columns.length > 0 ? this.query.first(columns) : this.query.first();
    // first() is `limit 1`, bound last.
    return this.compiled(query, `${this.signature} first ${signatureOf(columns)}`, [1]);
  }

  /** The SQL and bindings `first(fields)` would send (for runner.ts firstRead). */
  firstStatement(fields?: readonly string[]): { sql: string; bindings: readonly unknown[] } {
    const compiled = this.firstQuery(fields).toSQL();
    return { sql: compiled.sql, bindings: compiled.bindings as readonly unknown[] };
  }

  /** The first matching record with `fields` (every stored column that has a published name when absent), or undefined. */
  async first(fields?: readonly string[]): Promise<StoredRecord | undefined> {
    const statement = this.firstQuery(fields);
    const ahead = takeReadAhead(this.ctx, statement);
    const row = (ahead ? ahead[0] : await statement) as Record<string, unknown> | undefined;
    return row === undefined ? undefined : decodeRecord(this.ctx.dialect, this.shape, row);
  }

  /**
   * Per value of `groupField`, the sum of `sumField` over the matching records (decoded as that
   * field). Summed by the database, unless a value of a decimal `sumField` is not one the engine
   * stores (text in SQLite, which sum() reads as 0; NaN in PostgreSQL): then the rows are read one
   * by one and summed here, and a value that cannot be read is refused naming its record, never
   * summed as something else (docs/decisions/0370).
   */
  async sums(groupField: string, sumField: string): Promise<Array<{ group: unknown; sum: any }>> {
    const group = fieldOf(this.shape, groupField);
    const summed = fieldOf(this.shape, sumField);
    const { dialect, trx } = this.ctx;
    const rowsOf = this.query.clone();
    const checked = summed.kind === 'decimal';
    const aggregates = [trx.raw('sum(??) as v', [summed.column]), ...(checked ? [trx.raw(`${dialect.decimalsNotStored} as unreadable`, [summed.column])] : [])];
    const rows = (await this.query.groupBy(group.column).select(group.column, ...aggregates)) as Array<Record<string, unknown>>;
    if (checked && rows.some((row) => Number(row.unreadable) > 0)) return this.sumsRowByRow(rowsOf, group, summed);
    // A sum is no stored value (it may exceed its column): decoded, not checked against the column.
    const sumOf = (raw: unknown) => (raw === null || raw === undefined ? null : checked ? dialect.decodeDecimal(raw, summed.scale ?? 0) : Number(raw));
    return rows.map((row) => ({ group: decode(dialect, this.shape, group, row[group.column], row), sum: sumOf(row.v) }));
  }

  /** `sums` of a decimal field read record by record: each value decoded (or refused) as a read of it would be. */
  private async sumsRowByRow(query: Knex.QueryBuilder, group: FieldDef, summed: FieldDef): Promise<Array<{ group: unknown; sum: Dec | null }>> {
    const rows = (await query.select(group.column, summed.column, { [KEY]: this.shape.keyColumn })) as Array<Record<string, unknown>>;
    const sums = new Map<unknown, { group: unknown; sum: Dec | null }>();
    for (const row of rows) {
      const key = row[group.column];
      const value = decode(this.ctx.dialect, this.shape, summed, row[summed.column], row) as Dec | null;
      let cell = sums.get(key);
      if (!cell) sums.set(key, (cell = { group: decode(this.ctx.dialect, this.shape, group, key, row), sum: null }));
      // SUM skips NULLs and is NULL over none.
      if (value !== null) cell.sum = cell.sum === null ? value : cell.sum.plus(value);
    }
    return [...sums.values()];
  }

  /**
   * The cells `update` changes by a computed change (`changes`, by column), to read again should
   * the database refuse one (storage/computed-changes.ts): the same conditions on another
   * connection (the statement cloned before it becomes the update, compiled only on that failure),
   * each column's test, the key and a child's parent key beside; each cell classified by the
   * change it was to take (no decimal, or pushed past its bound).
   */
  private changedCells(changes: ReadonlyMap<string, { change: ComputedChange; bound: ColumnBound }>): Parameters<typeof rememberChangedCells>[1] {
    const { shape } = this;
    const conditions = this.query.clone();
    const columns = [...changes.keys()];
    return {
      set: shape.name,
      table: shape.table,
      columns,
      async unstorable(db, notStored, dialect) {
        const keys = [shape.keyColumn, ...(shape.parentColumn !== undefined ? [shape.parentColumn] : [])];
        const { sql, bindings } = conditions.select(...keys, ...columns, ...columns.map(notStored)).toSQL();
        const result = await db.raw(sql, bindings);
        const rows = (Array.isArray(result) ? result : result.rows) as Array<Record<string, unknown>>;
        const out: UnstorableCell[] = [];
        for (const row of rows) {
          for (const [column, { change, bound }] of changes) {
            const why = classifyChangedCell(dialect, row[column], row[`${column}_not_stored`], bound, (stored) => changed(stored, change));
            if (!why) continue;
            out.push({ set: shape.name, table: shape.table, column, raw: row[column], row: Object.fromEntries(keys.map((k) => [k, row[k]])), ...why, ...(change.field !== undefined ? { field: change.field } : {}) });
          }
        }
        return out;
      },
    };
  }

  /** Changes the matching records (and their audit stamps); returns how many rows changed. */
  async update(changes: Readonly<Record<string, Change>>): Promise<number> {
    const { trx } = this.ctx;
    const row: Record<string, unknown> = {};
    // SET binds before WHERE, in the order of the changes (then the stamps).
    let signature = `${this.signature} set`;
    const set: unknown[] = [];
    const computed = new Map<string, { change: ComputedChange; bound: ColumnBound }>();
    for (const [field, value] of Object.entries(changes)) {
      const column = this.column(field);
      if (!isComputed(value)) {
        row[column] = this.encoded(field, value);
        signature += ` ${column}`;
        set.push(row[column]);
        continue;
      }
      const by = this.encoded(field, value.by) as Knex.Value;
      // The column's bound, from the catalog (limits.ts): past it the change is refused (decision 0441).
      const bound: ColumnBound = { max: decimalLimit(this.shape.name, field), scale: fieldOf(this.shape, field).scale ?? 0 };
      row[column] = computedChange(trx, this.ctx.dialect, column, value.computed, by, bound);
      signature += ` ${column} ${value.computed}`;
      set.push(...computedBindings(value.computed, by));
      computed.set(column, { change: value, bound });
    }
    if (computed.size > 0) rememberChangedCells(trx, this.changedCells(computed));
    const stamps = updateStamps(this.ctx);
    for (const [column, value] of Object.entries(stamps)) {
      signature += ` ${column}`;
      set.push(value);
    }
    const query = this.query.update({ ...row, ...stamps });
    return Number(await compiledOnce(query, `${signature} where`, [...set, ...this.bindings]));
  }
}

/** A read or update of the records of `set`: an entity (`purchase-orders`) or a child collection (`purchase-orders.lines`). */
export function records(ctx: RecordsContext, set: string): RecordQuery {
  return new RecordQuery(ctx, set);
}
