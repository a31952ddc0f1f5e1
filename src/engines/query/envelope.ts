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

/** A function turning a storage row into a record of the given published fields. */
export function recordDecoder(qd: QueryDialect, fields: readonly FieldDef[]): (row: Row) => PublishedRecord {
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
