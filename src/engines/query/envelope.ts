/**
 * Step 4: rows become published records and the read envelope. Values are decoded through
 * the query dialect: decimals exact (JSON numbers from the exact decimal), dates YYYY-MM-DD,
 * datetimes ISO 8601 UTC, booleans true/false, uuids lower-case, nulls kept.
 */
import type { FieldDef } from '../../catalog/types';
import type { QueryDialect } from '../../storage/dialect';

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

type Decode = QueryDialect['decodeValue'];
type Build = (row: Row) => PublishedRecord;
type Factory = (decode: Decode, kinds: unknown[], columns: string[], scales: unknown[]) => Build;

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
    const body = names.map((n, i) => `${JSON.stringify(n)}: decode(kinds[${i}], row[columns[${i}]], scales[${i}])`).join(',\n');
    // eslint-disable-next-line @typescript-eslint/no-implied-eval
    factory = new Function('decode', 'kinds', 'columns', 'scales', `return function record(row) { return {\n${body}\n}; };`) as Factory;
    if (factories.size >= MAX_FACTORIES) factories.clear();
    factories.set(key, factory);
  }
  return factory;
}

/** A function turning a storage row into a record of the given published fields (in their order). */
export function recordDecoder(qd: QueryDialect, fields: readonly FieldDef[]): (row: Row) => PublishedRecord {
  const factory = factoryFor(fields.map((f) => f.name));
  const decode: Decode = (kind, raw, scale) => qd.decodeValue(kind, raw, scale);
  if (factory) return factory(decode, fields.map((f) => f.kind), fields.map((f) => f.column), fields.map((f) => f.scale));
  const plan = fields.map((f) => ({ name: f.name, column: f.column, kind: f.kind, scale: f.scale }));
  return (row) => {
    const out: PublishedRecord = {};
    for (const f of plan) out[f.name] = qd.decodeValue(f.kind, row[f.column], f.scale);
    return out;
  };
}

export function readEnvelope(pageNumber: number, pageSize: number, totalCount: number, data: PublishedRecord[]): ReadEnvelope {
  return {
    asOf: new Date().toISOString(),
    page: { pageNumber, pageSize, totalCount, returnedCount: data.length },
    data,
  };
}
