import type { Knex } from 'knex';
import { rangeValues, type NumberAllocator, type NumberRange } from '../../../storage/numbers';
import { counterOf } from './shapes';

/**
 * Record numbers by entity (storage/numbers.ts keeps one counter per table, named by the table:
 * the catalog says which).
 */

/** Numbers of several entities in one committed statement, outside the posting transaction (NumberAllocator.allocateMany). */
export async function allocateRecordNumbers<E extends string>(numbers: NumberAllocator, counts: Readonly<Record<E, number>>): Promise<Record<E, NumberRange>> {
  const byCounter: Record<string, number> = {};
  for (const [entity, count] of Object.entries<number>(counts)) byCounter[counterOf(entity)] = count;
  const got = await numbers.allocateMany(byCounter);
  const out = {} as Record<E, NumberRange>;
  for (const entity of Object.keys(counts) as E[]) out[entity] = got[counterOf(entity)]!;
  return out;
}

/** `count` numbers of `entityName` inside the posting transaction (rolled back with it). */
export async function allocateRecordNumbersIn(numbers: NumberAllocator, trx: Knex.Transaction, entityName: string, count: number): Promise<NumberRange> {
  return numbers.allocateIn(trx, counterOf(entityName), count);
}

export { rangeValues };
