/**
 * The document kinds change events are sent for (the spec's Events table): each kind's table
 * and the catalog entity its `data.record` is read through. Payroll is never sent: no payroll
 * kind exists here, and nothing else is detected.
 */
export const EVENT_KINDS = {
  payable_invoice: { entity: 'ap-invoices', table: 'acpinv' },
  purchase_order: { entity: 'purchase-orders', table: 'pchord' },
  ledger_transaction: { entity: 'ledger-transactions', table: 'lgrtrn' },
  service_invoice: { entity: 'service-invoices', table: 'srvinv' },
  inventory_allocation: { entity: 'inventory-allocations', table: 'invalc' },
} as const;

export type EventKind = keyof typeof EVENT_KINDS;
export type ChangeType = 'created' | 'updated';

/** The test event (POST /webhook-endpoints/{id}/test); never detected, never subscribed to. */
export const TEST_EVENT_TYPE = 'webhook.test';

export const EVENT_TYPES: readonly string[] = Object.keys(EVENT_KINDS).flatMap((k) => [`${k}.created`, `${k}.updated`]);

export function kindOfType(type: string): EventKind | undefined {
  const kind = type.split('.')[0] as EventKind;
  return EVENT_TYPES.includes(type) ? kind : undefined;
}

/**
 * Where a change was made (`data.source`): `api` when the row's user stamp is the one the
 * posting engine writes for API keys (`api:<key name>`, src/engines/posting/runner.ts), else
 * `accounting_system` (the desktop application, or anything else writing the database).
 */
export type ChangeSource = 'api' | 'accounting_system';
export const API_USER_PREFIX = 'api:';

export function sourceOf(userStamp: string | null | undefined): ChangeSource {
  return typeof userStamp === 'string' && userStamp.startsWith(API_USER_PREFIX) ? 'api' : 'accounting_system';
}
