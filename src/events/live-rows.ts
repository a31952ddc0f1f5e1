import type { Knex } from 'knex';

/**
 * The webhook endpoints (`whkept`) and the event feeds (`evtfed`) are deleted softly: a deleted row
 * keeps its `state` 'deleted' (deliveries and the audit log still name it) and is never read as a
 * live one. Both are listed the same way: oldest first, then by id, with the total.
 */

/** The row `id` of `table` unless it is deleted. */
export async function liveRow(knex: Knex, table: string, id: string): Promise<Record<string, any> | undefined> {
  return knex(table).where({ id }).whereNot({ state: 'deleted' }).first();
}

/** A page of `table`'s rows that are not deleted (of `states` when given), oldest first, and how many there are in all. */
export async function liveRows(knex: Knex, table: string, options: { states?: readonly string[]; limit?: number; offset?: number }): Promise<{ total: number; rows: Array<Record<string, any>> }> {
  const base = () => {
    const q = knex(table).whereNot({ state: 'deleted' });
    if (options.states) q.whereIn('state', options.states);
    return q;
  };
  const [c] = await base().count<{ n: number | string }[]>({ n: '*' });
  let q = base().orderBy('created_at').orderBy('id');
  if (options.limit !== undefined) q = q.limit(options.limit).offset(options.offset ?? 0);
  return { total: Number(c!.n), rows: await q };
}
