/**
 * The read pipeline: validated body -> plan -> SQL -> envelope. Count, page and children are
 * read in ONE snapshot (QueryDialect.readSnapshot), so totalCount and data always agree (a
 * reused count is one computed in a snapshot with the same change token: count-cache.ts).
 */
import type { Knex } from 'knex';
import type { QueryDialect } from '../../storage/dialect';
import { attachChildren } from './children';
import { readEnvelope, recordDecoder, type ReadEnvelope, type Row } from './envelope';
import { countQuery, pageQuery } from './sql';
import { cachedCount, countKey, rememberCount } from './count-cache';
import type { QueryPlan } from './types';

export async function executePlan(knex: Knex, qd: QueryDialect, plan: QueryPlan): Promise<ReadEnvelope> {
  const decode = recordDecoder(qd, plan.fields);
  return qd.readSnapshot(knex, async (reader) => {
    const count = countQuery(reader.db, qd, plan);
    const token = await reader.changeToken();
    const key = token === undefined ? undefined : countKey(count);
    let totalCount = cachedCount(knex, key, token);
    if (totalCount === undefined) {
      const countRows = await reader.all(count);
      totalCount = Number(countRows[0]?.n ?? 0);
      rememberCount(knex, key, token, totalCount);
    }
    // Past the last row there is nothing to read.
    const rows: Row[] = plan.offset < totalCount ? await reader.all(pageQuery(reader.db, qd, plan)) : [];
    const records = rows.map(decode);
    const keys = plan.children.length > 0 ? rows.map((r) => r[plan.entity.keyColumn]) : [];
    // The driver rows are garbage from here: not kept alive while the children are read.
    rows.length = 0;
    if (plan.children.length > 0) await attachChildren(reader, qd, plan.children, keys, records);
    return readEnvelope(plan.pageNumber, plan.pageSize, totalCount, records);
  });
}
