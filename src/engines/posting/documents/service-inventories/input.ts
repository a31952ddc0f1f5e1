import type { components } from '../../../../../generated/api-types';
import { InputErrors, calendarDate } from '../../input';

/**
 * POST /service-inventories, the input: the body (typed from the contract: generated/api-types.ts),
 * its dates real calendar dates and the warranty ending no earlier than the install (400 naming
 * warrantyEnds, before dispatch).
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
