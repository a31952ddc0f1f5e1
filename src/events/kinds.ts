/**
 * Transaction sources of payroll journals (domain notes: 16 Post Payroll, 17 Post Payroll - Hand
 * Checks, 18 Daily Payroll). The spec's Events rule 5, "Payroll is never sent": a journal from one
 * of these sources (the payroll batch's totals per pay period, posted through the API or in the
 * accounting system) sends no event, created or updated (docs/decisions/0240-payroll-never-sent.md).
 */
export const PAYROLL_SOURCES: readonly number[] = [16, 17, 18];

/** Rows of a kind that are never sent: `field` (a published field of the kind's entity) is one of `values`. */
export interface NeverSent {
  field: string;
  values: readonly number[];
}

/**
 * The document kinds change events are sent for (the spec's Events table): each kind's table
 * and the catalog entity its `data.record` is read through. Payroll is never sent: no payroll
 * kind exists here, payroll journals are left out of ledger transactions (`never`), and nothing
 * else is detected.
 */
export const EVENT_KINDS: Record<'payable_invoice' | 'purchase_order' | 'ledger_transaction' | 'service_invoice' | 'inventory_allocation', { entity: string; table: string; never?: NeverSent }> = {
  payable_invoice: { entity: 'ap-invoices', table: 'acpinv' },
  purchase_order: { entity: 'purchase-orders', table: 'pchord' },
  ledger_transaction: { entity: 'ledger-transactions', table: 'lgrtrn', never: { field: 'sourceNumber', values: PAYROLL_SOURCES } },
  service_invoice: { entity: 'service-invoices', table: 'srvinv' },
  inventory_allocation: { entity: 'inventory-allocations', table: 'invalc' },
};

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
