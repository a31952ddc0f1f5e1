import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { components } from '../../../../../generated/api-types';
import type { NumberAllocator } from '../../../../storage/numbers';
import { InputErrors, calendarDate } from '../../input';
import type { PostingContext } from '../../context';
import { ReferenceCheck, loadReferenced } from '../../ledger/references';
import { readRecord, type FullRecord } from '../../records';
import type { PostOutcome, WriteDefinition } from '../../runner';
import { recordRow, tableOf } from '../../write-rows';

/**
 * POST /service-inventories: records a piece of serviced equipment at a client site (srvivt, the
 * service-inventories entity). Stored only: it posts nothing, so its result has no period, year
 * or ledgerTransaction keys (absent, not null) and empty jobCosts and inventory (spec, Write
 * result document).
 *
 *   references   clientNumber (reccln) and serviceLocation (srvloc): 404 naming the field;
 *                partNumber (tkfprt) likewise. The location must be a site of that client and
 *                neither may be inactive (422 BUSINESS_RULE_VIOLATED naming the field).
 *   dates        warrantyEnds before installDate is 400 naming warrantyEnds.
 */

export interface ServiceInventoryInput {
  clientNumber: number;
  serviceLocation: number;
  description: string;
  manufacturer: string | null;
  model: string | null;
  serialNumber: string | null;
  partNumber: number | null;
  installDate: string | null;
  warrantyEnds: string | null;
  status: number;
}

/** A service inventory item as POST /service-inventories/query returns it (the contract's ServiceInventory). */
export type PostedServiceInventory = FullRecord<components['schemas']['ServiceInventory']>;

/** No period, year or ledgerTransaction: the keys are absent, never null. */
export interface ServiceInventoryWriteResult {
  document: PostedServiceInventory;
  jobCosts: never[];
  inventory: never[];
}

interface Numbers {
  record: number;
}

const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);

/** The request body as the contract defines it (generated/api-types.ts). */
type ServiceInventoryBody = components['schemas']['ServiceInventoryInput'];

export function prepareServiceInventory(body: unknown): ServiceInventoryInput {
  // Shapes, types and ranges were checked by the contract validator (400 naming the field).
  // The contract validator has checked the body against ServiceInventoryInput before dispatch.
  const b = (body ?? {}) as ServiceInventoryBody;
  const input: ServiceInventoryInput = {
    clientNumber: Number(b.clientNumber),
    serviceLocation: Number(b.serviceLocation),
    description: String(b.description ?? ''),
    manufacturer: str(b.manufacturer),
    model: str(b.model),
    serialNumber: str(b.serialNumber),
    partNumber: b.partNumber === undefined || b.partNumber === null ? null : Number(b.partNumber),
    installDate: null,
    warrantyEnds: null,
    status: b.status === undefined ? 1 : Number(b.status),
  };
  const errors = new InputErrors();
  input.installDate = calendarDate(b.installDate, 'installDate', errors) ?? null;
  input.warrantyEnds = calendarDate(b.warrantyEnds, 'warrantyEnds', errors) ?? null;
  if (input.installDate !== null && input.warrantyEnds !== null && input.warrantyEnds < input.installDate) {
    errors.add('warrantyEnds', 'before_install_date', `warrantyEnds ${input.warrantyEnds} is before installDate ${input.installDate}`);
  }
  errors.throwIfAny();
  return input;
}

async function checkReferences(ctx: PostingContext, input: ServiceInventoryInput): Promise<void> {
  const check = new ReferenceCheck();
  const clients = await loadReferenced(ctx, 'clients', 'recordNumber', [{ field: 'clientNumber', value: input.clientNumber }], ['inactive']);
  const client = clients.get(String(input.clientNumber));
  if (!client) check.notFound('clientNumber', `client ${input.clientNumber}`);
  else if (client.inactive) check.notPostable('clientNumber', `client ${input.clientNumber} is inactive`, 'inactive');
  const locations = await loadReferenced(ctx, 'service-locations', 'recordNumber', [{ field: 'serviceLocation', value: input.serviceLocation }], ['clientNumber', 'inactive']);
  const location = locations.get(String(input.serviceLocation));
  if (!location) check.notFound('serviceLocation', `service location ${input.serviceLocation}`);
  else {
    if (location.inactive) check.notPostable('serviceLocation', `service location ${input.serviceLocation} is inactive`, 'inactive');
    if (Number(location.clientNumber) !== input.clientNumber) {
      check.notPostable('serviceLocation', `service location ${input.serviceLocation} is a site of client ${Number(location.clientNumber)}, not of client ${input.clientNumber}`, 'other_client');
    }
  }
  if (input.partNumber !== null) {
    const parts = await loadReferenced(ctx, 'parts', 'recordNumber', [{ field: 'partNumber', value: input.partNumber }], []);
    if (!parts.has(String(input.partNumber))) check.notFound('partNumber', `part ${input.partNumber}`);
  }
  check.throwIfAny();
}

export const serviceInventoriesWrite: WriteDefinition<ServiceInventoryInput, Numbers, ServiceInventoryWriteResult> = {
  route: '/service-inventories',
  what: 'recording a service inventory item',
  prepare: prepareServiceInventory,

  async allocate(_input, numbers: NumberAllocator): Promise<Numbers> {
    const got = await numbers.allocateMany({ srvivt: 1 });
    return { record: got.srvivt!.first };
  },

  async post(ctx, input, numbers): Promise<PostOutcome<ServiceInventoryWriteResult>> {
    const { trx } = ctx;
    await checkReferences(ctx, input);
    const id = randomUUID();
    await trx(tableOf('service-inventories')).insert(
      recordRow(ctx, 'service-inventories', {
        id,
        recordNumber: numbers.record,
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
    );
    const document = (await readRecord(trx, 'service-inventories', id)) as unknown as PostedServiceInventory;
    return { result: { document, jobCosts: [], inventory: [] } };
  },
};
