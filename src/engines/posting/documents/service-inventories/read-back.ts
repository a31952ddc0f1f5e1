import type { Knex } from 'knex';
import type { components } from '../../../../../generated/api-types';
import { readRecord, type FullRecord } from '../../records';

/** POST /service-inventories, the result: the item as the query engine reads it (through the catalog). */

/** A service inventory item as POST /service-inventories/query returns it (the contract's ServiceInventory). */
export type PostedServiceInventory = FullRecord<components['schemas']['ServiceInventory']>;

/** No period, year or ledgerTransaction: the keys are absent, never null. */
export interface ServiceInventoryWriteResult {
  document: PostedServiceInventory;
  jobCosts: never[];
  inventory: never[];
}

/** The item `id` as the service-inventories query returns it (engines/query/read-records.ts). */
export async function readServiceInventory(trx: Knex.Transaction, id: string): Promise<PostedServiceInventory> {
  return (await readRecord(trx, 'service-inventories', id)) as unknown as PostedServiceInventory;
}
