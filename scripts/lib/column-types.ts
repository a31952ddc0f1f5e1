/**
 * The storage column types, read from the migrations themselves: every table step of
 * db/migrations compiled (no connection) for SQL Server, the strictest engine, and each column
 * definition of its CREATE TABLE (and of the ALTER TABLE ... ADD of later migrations) parsed. Keyed `table.column`, valued with the SQL type as
 * compiled (`int`, `smallint`, `decimal(14, 2)`, `nvarchar(50)`, `date`, `datetime2`, ...), which
 * src/catalog/bounds.ts turns into value bounds.
 */
import knexFactory from 'knex';
import { MIGRATIONS } from '../../db/migrate';
import type { AlterStep, TableStep } from '../../db/migrations/support/schema';

export type ColumnTypes = ReadonlyMap<string, string>;

/**
 * Column definitions of one compiled CREATE TABLE: its body split at top-level commas (check
 * constraints hold nested parentheses and bracketed names), each `[name] type ...` kept.
 */
export function parseCreateTable(sql: string): Array<[string, string]> {
  const open = sql.indexOf('(');
  const parts: string[] = [];
  let depth = 0;
  let quoted = false;
  let start = open + 1;
  for (let i = open + 1; i < sql.length; i += 1) {
    const c = sql[i];
    if (c === "'") quoted = !quoted;
    if (quoted) continue;
    if (c === '(') depth += 1;
    else if (c === ')') {
      if (depth === 0) {
        parts.push(sql.slice(start, i));
        break;
      }
      depth -= 1;
    } else if (c === ',' && depth === 0) {
      parts.push(sql.slice(start, i));
      start = i + 1;
    }
  }
  const out: Array<[string, string]> = [];
  for (const part of parts) {
    const m = /^\s*\[([^\]]+)\] ([a-z0-9]+(?:\((?:\d+|max)(?:, ?\d+)?\))?)/i.exec(part);
    if (m) out.push([m[1]!, m[2]!]);
  }
  return out;
}

let cached: ColumnTypes | undefined;

export function columnTypes(): ColumnTypes {
  if (cached) return cached;
  const mssql = knexFactory({ client: 'mssql' });
  const types = new Map<string, string>();
  try {
    for (const [, mod] of MIGRATIONS) {
      const steps = (mod as unknown as { steps?: TableStep[] }).steps ?? [];
      for (const step of steps) {
        const sql = step.build(mssql).toString();
        const create = /^create table \[([^\]]+)\]/i.exec(sql);
        if (!create || create[1] !== step.table) throw new Error(`step ${step.table} does not start with its CREATE TABLE`);
        for (const [column, type] of parseCreateTable(sql.split(';')[0]!)) types.set(`${step.table}.${column}`, type);
      }
      // Columns added to existing tables (`ALTER TABLE [t] ADD [c] type ...`).
      const alterations = (mod as unknown as { alterations?: AlterStep[] }).alterations ?? [];
      for (const step of alterations) {
        for (const statement of step.build(mssql).toString().split(';')) {
          const add = /^\s*alter table \[([^\]]+)\] add (.*)$/is.exec(statement);
          if (!add) continue;
          for (const [column, type] of parseCreateTable(`(${add[2]})`)) types.set(`${add[1]}.${column}`, type);
        }
      }
    }
  } finally {
    void mssql.destroy();
  }
  cached = types;
  return types;
}
