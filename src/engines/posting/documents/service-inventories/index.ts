import type { NumberAllocator } from '../../../../storage/numbers';
import { allocateRecordNumbers } from '../../records';
import type { PostOutcome, WriteDefinition } from '../../runner';
import { insertServiceInventory } from './cascade';
import { prepareServiceInventory, type ServiceInventoryInput } from './input';
import type { ServiceInventoryWriteResult } from './read-back';
import { checkReferences } from './references';

/**
 * POST /service-inventories: records a piece of serviced equipment at a client site (the
 * service-inventories entity). Stored only: it posts nothing, so its result has no period, year
 * or ledgerTransaction keys (absent, not null) and empty jobCosts and inventory (spec, Write
 * result document).
 *
 *   input.ts       the body; warrantyEnds before installDate is 400 naming warrantyEnds
 *   references.ts  client, service location (a site of that client), part
 *   cascade.ts     the item stored, returned as stored (the insert's RETURNING)
 *   read-back.ts   the result's shape
 */

interface Numbers {
  record: number;
}

export const serviceInventoriesWrite: WriteDefinition<ServiceInventoryInput, Numbers, ServiceInventoryWriteResult> = {
  route: '/service-inventories',
  what: 'recording a service inventory item',
  prepare: prepareServiceInventory,

  async allocate(_input, numbers: NumberAllocator): Promise<Numbers> {
    const got = await allocateRecordNumbers(numbers, { 'service-inventories': 1 });
    return { record: got['service-inventories'].first };
  },

  async post(ctx, input, numbers): Promise<PostOutcome<ServiceInventoryWriteResult>> {
    await checkReferences(ctx, input);
    const document = await insertServiceInventory(ctx, input, numbers.record);
    return { result: { document, jobCosts: [], inventory: [] } };
  },
};
