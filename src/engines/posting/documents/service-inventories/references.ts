import type { PostingContext } from '../../context';
import { ReferenceCheck, loadReferenced } from '../../ledger/references';
import type { ServiceInventoryInput } from './input';

/**
 * POST /service-inventories, the references: the client and the service location (404 naming the
 * field), the part likewise. The location must be a site of that client and neither may be
 * inactive (422 BUSINESS_RULE_VIOLATED naming the field).
 */
export async function checkReferences(ctx: PostingContext, input: ServiceInventoryInput): Promise<void> {
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
