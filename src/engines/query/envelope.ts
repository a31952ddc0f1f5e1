/**
 * Step 4: rows become published records and the read envelope. Values are decoded through
 * the query dialect: decimals exact (JSON numbers from the exact decimal), dates YYYY-MM-DD,
 * datetimes ISO 8601 UTC, booleans true/false, uuids lower-case, nulls kept; a stored value the
 * contract cannot publish for its field is 502 STORED_VALUE_UNREADABLE (recordDecoder).
 */
import type { ChildDef, EntityDef, FieldDef } from '../../catalog/types';
import { fitsRead, parseColumnType, publishedAs, readBounds } from '../../catalog/bounds';
import { ApiProblem } from '../../errors/problem';
import { UNREADABLE, type DecodedValue, type QueryDialect } from '../../storage/dialect';

export type Row = Record<string, unknown>;
export type PublishedRecord = Record<string, unknown>;

export interface PageInfo {
  pageNumber: number;
  pageSize: number;
  totalCount: number;
  returnedCount: number;
}

export interface ReadEnvelope {
  asOf: string;
  page: PageInfo;
  data: PublishedRecord[];
}

/** Whose rows a decoder reads: what names the record of a value that cannot be read. */
export interface RecordSubject {
  /** The published entity (`ap-invoices`). */
  entity: string;
  /** A child collection (`lines`): the rows are lines of the entity's records. */
  collection?: string;
  /** The row's name for the column holding the record's key (`_idnum`; `__k` where a read selected it so). */
  keyColumn: string;
  /** A child collection's column holding its parent's key (`_idref`). */
  parentColumn?: string;
}

/** The subject of an entity's rows (`keyColumn`: the rows' name for its key, when a read renamed it). */
export function entitySubject(entity: Pick<EntityDef, 'entity' | 'keyColumn'>, keyColumn = entity.keyColumn): RecordSubject {
  return { entity: entity.entity, keyColumn };
}

/** The subject of the rows of `entity`'s child collection `child`. */
export function childSubject(entity: string, child: ChildDef): RecordSubject {
  return { entity, collection: child.name, keyColumn: child.fields.id?.column ?? '_idnum', parentColumn: child.parentColumn };
}

export interface DecoderOptions {
  /**
   * A value that cannot be read: 'throw' (the default) throws STORED_VALUE_UNREADABLE naming it;
   * 'omit' leaves the field out of its record and lists it in `unreadableFieldsOf(record)` (the
   * event detector, which reports it in the event rather than stopping every event of the kind).
   */
  unreadable?: 'throw' | 'omit';
}

type Decode = (i: number, raw: unknown, row: Row) => unknown;
type Build = (row: Row) => PublishedRecord;
type Factory = (decode: Decode, columns: string[]) => Build;

/**
 * Record constructors by list of published names. A record filled field by field from `{}`
 * grows its property store several times over (22 fields: four reallocations, each garbage), and
 * under load that garbage was the largest single allocation of a read (decision 0032). An object
 * literal with every name is allocated once, at its final size, with
 * one shape for every record of the list. Bounded: select lists are chosen by the caller.
 */
const factories = new Map<string, Factory>();
const MAX_FACTORIES = 256;

function factoryFor(names: readonly string[]): Factory | undefined {
  // Names come from the catalog; a name an object literal would treat specially is built the slow way.
  if (names.some((n) => n === '__proto__')) return undefined;
  const key = names.join('\u0000');
  let factory = factories.get(key);
  if (!factory) {
    const body = names.map((n, i) => `${JSON.stringify(n)}: decode(${i}, row[columns[${i}]], row)`).join(',\n');
    // eslint-disable-next-line @typescript-eslint/no-implied-eval
    factory = new Function('decode', 'columns', `return function record(row) { return {\n${body}\n}; };`) as Factory;
    if (factories.size >= MAX_FACTORIES) factories.clear();
    factories.set(key, factory);
  }
  return factory;
}

/** The fields a decoder with `unreadable: 'omit'` left out of a record it made. */
const omitted = new WeakMap<PublishedRecord, string[]>();

/** The fields left out of `record` because their stored values cannot be read (decoded with `unreadable: 'omit'`). */
export function unreadableFieldsOf(record: PublishedRecord): readonly string[] {
  return omitted.get(record) ?? [];
}

/**
 * A function turning a storage row into a record of the given published fields (in their order).
 * Every value is decoded by the dialect and must then be one the contract publishes for its field
 * (src/catalog/bounds.ts, fitsRead; null only where the field is nullable): the one place a
 * read, a match, a write's read-back and the event detector turn stored values into published
 * ones. One that is not is never published as something else (docs/decisions/0370).
 */
export function recordDecoder(qd: QueryDialect, fields: readonly FieldDef[], subject: RecordSubject, options: DecoderOptions = {}): Build {
  const kinds = fields.map((f) => f.kind);
  const scales = fields.map((f) => f.scale);
  const columns = fields.map((f) => f.column);
  const nullable = fields.map((f) => f.nullable);
  const bounds = fields.map((f) => readBounds(parseColumnType(f.sqlType)));
  const omit = options.unreadable === 'omit';
  let faults: string[] | undefined;
  const decode: Decode = (i, raw, row) => {
    const value = qd.decodeValue(kinds[i]!, raw, scales[i]);
    if (value === null ? nullable[i] : value !== UNREADABLE && fitsRead(bounds[i]!, value)) return value;
    if (!omit) throw storedValueUnreadable(subject, fields[i]!, raw, row);
    (faults ??= []).push(fields[i]!.name);
    return undefined;
  };
  const factory = factoryFor(fields.map((f) => f.name));
  const build: Build = factory
    ? factory(decode, columns)
    : (row) => {
        const out: PublishedRecord = {};
        fields.forEach((f, i) => {
          out[f.name] = decode(i, row[f.column], row);
        });
        return out;
      };
  if (!omit) return build;
  return (row) => {
    faults = undefined;
    const record = build(row);
    // `build` sets `faults` through `decode` (TypeScript cannot see it).
    const found = faults as string[] | undefined;
    if (found) {
      for (const name of found) delete record[name];
      omitted.set(record, found);
    }
    return record;
  };
}

/**
 * One stored value as recordDecoder reads it (the same decoding and check, for a caller that reads
 * values one at a time: the posting engines' records, src/engines/posting/records/query.ts):
 * its published form, or UNREADABLE.
 */
export function publishedValue(qd: QueryDialect, field: FieldDef, raw: unknown): DecodedValue {
  const value = qd.decodeValue(field.kind, raw, field.scale);
  if (value === null ? field.nullable : value !== UNREADABLE && fitsRead(readBounds(parseColumnType(field.sqlType)), value)) return value;
  return UNREADABLE;
}

/** What a stored value is, for a message: its kind and size, never its content (it may be personal data). */
function describeStored(raw: unknown): string {
  if (raw === null || raw === undefined) return 'NULL';
  if (typeof raw === 'string') return `text (${raw.length} characters)`;
  if (typeof raw === 'number' || typeof raw === 'bigint') {
    const n = Number(raw);
    if (Number.isNaN(n)) return 'NaN';
    if (!Number.isFinite(n)) return n > 0 ? 'infinity' : '-infinity';
    return Number.isInteger(n) ? 'a whole number' : 'a fraction';
  }
  if (raw instanceof Date) return Number.isNaN(raw.getTime()) ? 'an invalid date' : `a date in the year ${raw.getFullYear()}`;
  if (raw instanceof Uint8Array) return `binary data (${raw.length} bytes)`;
  return `a value of type ${typeof raw}`;
}

/** The key of a record as a row holds it, lower-case where it is text; undefined when the row does not hold it. */
export function keyText(raw: unknown): string | undefined {
  if (raw === null || raw === undefined) return undefined;
  return typeof raw === 'string' ? raw.toLowerCase() : String(raw);
}

/** 502 STORED_VALUE_UNREADABLE naming the entity, the record (and a line's document) and the field. */
export function storedValueUnreadable(subject: RecordSubject, field: FieldDef, raw: unknown, row: Row): ApiProblem {
  const recordId = keyText(row[subject.keyColumn]);
  const parentId = subject.parentColumn ? keyText(row[subject.parentColumn]) : undefined;
  const name = subject.collection ? `${subject.collection}.${field.name}` : field.name;
  const published = `${publishedAs(parseColumnType(field.sqlType))}${field.nullable ? ' or null' : ''}`;
  const record = `${subject.entity} ${subject.collection ? `${subject.collection} line` : 'record'} ${recordId ?? '(key not read)'}${parentId ? ` of ${parentId}` : ''}`;
  return new ApiProblem(
    'STORED_VALUE_UNREADABLE',
    `${record}: the accounting database holds ${describeStored(raw)} in ${name}, not ${published} as the contract publishes it. ` +
      `The record cannot be read with ${name} until the value is corrected in the accounting database; a read without ${name} in select is not affected.`,
    { extensions: { unreadableValue: { entity: subject.entity, field: name, ...(recordId !== undefined ? { recordId } : {}), ...(parentId !== undefined ? { parentId } : {}) } } },
  );
}

/** A STORED_VALUE_UNREADABLE whose record is not named: the row did not hold its key. */
export function isUnnamedUnreadable(err: unknown): boolean {
  if (!(err instanceof ApiProblem) || err.code !== 'STORED_VALUE_UNREADABLE') return false;
  const where = err.extensions.unreadableValue as { recordId?: string } | undefined;
  return where?.recordId === undefined;
}

/**
 * The read envelope. `asOf` is the server clock taken BEFORE the read's snapshot (its first
 * statement), never after the rows came back: an integrator uses it as the next lastUpdated
 * watermark, and a change committed between the snapshot and a later clock would be neither in
 * this answer nor after the watermark. An earlier clock can only deliver a record again (decision 0400).
 */
export function readEnvelope(asOf: Date, pageNumber: number, pageSize: number, totalCount: number, data: PublishedRecord[]): ReadEnvelope {
  return {
    asOf: asOf.toISOString(),
    page: { pageNumber, pageSize, totalCount, returnedCount: data.length },
    data,
  };
}
