import { randomUUID } from 'node:crypto';
import type { PostingContext } from '../../context';
import { insertRecords, recordRow } from '../../records';
import type { ServiceInventoryInput } from './input';

/** POST /service-inventories, the cascade: the item stored, nothing posted. Returns its id. */
export async function insertServiceInventory(ctx: PostingContext, input: ServiceInventoryInput, recordNumber: number): Promise<string> {
  const id = randomUUID();
  await insertRecords(ctx.trx, 'service-inventories', [
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
  return id;
}
