import { randomUUID } from 'node:crypto';
import type { PostingContext } from '../../context';
import { insertRecordsReturning, recordRow } from '../../records';
import type { ServiceInventoryInput } from './input';
import type { PostedServiceInventory } from './read-back';

/**
 * POST /service-inventories, the cascade: the item stored, nothing posted. Returns it as stored,
 * as the query engine reads it (the insert's RETURNING: records/insert.ts insertRecordsReturning).
 */
export async function insertServiceInventory(ctx: PostingContext, input: ServiceInventoryInput, recordNumber: number): Promise<PostedServiceInventory> {
  const id = randomUUID();
  const [stored] = await insertRecordsReturning(ctx.writes, 'service-inventories', [
    recordRow(ctx, 'service-inventories', {
      id,
      recordNumber,
      clientNumber: input.clientNumber,
      serviceLocation: input.serviceLocation,
      description: input.description,
      manufacturer: input.manufacturer,
      model: input.model,
      serialNumber: input.serialNumber,
      partNumber: input.partNumber,
      installDate: input.installDate,
      warrantyEnds: input.warrantyEnds,
      status: input.status,
    }),
  ]);
  return stored as unknown as PostedServiceInventory;
}
