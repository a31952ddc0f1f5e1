import type { WriteDefinition } from './runner';
import { ledgerTransactionsWrite } from './documents/ledger-transactions';
import { apInvoicesWrite } from './documents/ap-invoices';
import { serviceInvoicePostWrite } from './documents/service-invoices';
import { serviceInventoriesWrite } from './documents/service-inventories';
import { inventoryAllocationsWrite } from './documents/inventory-allocations';
import { purchaseOrderReceiptsWrite } from './documents/purchase-order-receipts';
import { payrollPostWrite } from './documents/payroll-records';

/**
 * The table of writes: one line per write operation of openapi.yaml. A write is one folder under
 * documents/ and one line here. A route listed with `null` is in the contract but not wired up
 * yet: it answers 501 NOT_IMPLEMENTED (spec, Writes). test/engines/posting/write-table.test.ts holds this table
 * against the contract.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyWriteDefinition = WriteDefinition<any, any, any>;

export interface WriteEntry {
  /** Path under /api/v3, as in openapi.yaml. */
  route: string;
  definition: AnyWriteDefinition | null;
}

export const WRITES: readonly WriteEntry[] = [
  { route: '/ledger-transactions', definition: ledgerTransactionsWrite },
  { route: '/ap-invoices', definition: apInvoicesWrite },
  { route: '/inventory-allocations', definition: inventoryAllocationsWrite },
  { route: '/purchase-order-receipts', definition: purchaseOrderReceiptsWrite },
  { route: '/service-invoices/post', definition: serviceInvoicePostWrite },
  { route: '/service-inventories', definition: serviceInventoriesWrite },
  { route: '/payroll-records/post', definition: payrollPostWrite },
];
