import type { components } from '../../../../../generated/api-types';
import type { FullRecord } from '../../records';

/**
 * POST /service-inventories, the result: the item as the query engine reads it (through the
 * catalog), which the insert returns (cascade.ts: its RETURNING, decoded as a query decodes it).
 */

/** A service inventory item as POST /service-inventories/query returns it (the contract's ServiceInventory). */
export type PostedServiceInventory = FullRecord<components['schemas']['ServiceInventory']>;

/** No period, year or ledgerTransaction: the keys are absent, never null. */
export interface ServiceInventoryWriteResult {
  document: PostedServiceInventory;
  jobCosts: never[];
  inventory: never[];
}
