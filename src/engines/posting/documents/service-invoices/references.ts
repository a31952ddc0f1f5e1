import { ApiProblem } from '../../../../errors/problem';
import { Dec } from '../../../../storage/decimal';
import type { PostingContext } from '../../context';
import { ReferenceCheck, loadReferenceRows, loadReferenced } from '../../ledger/references';
import { records, type StoredRecord } from '../../records';
import { SERVICE_SOURCE, type ServiceInvoicePostInput } from './input';

/**
 * POST /service-invoices/post, the references: the work order (Open and not posted yet), its
 * lines and where each line's income goes (the line's account, else the service type's, else the
 * ledger setup's), the client, the parts location and the accounts the posting names or derives.
 * 404 for what the request names and does not exist, 422 for the rest, every finding at once.
 */

const STATUS_OPEN = 1;
const STATUS_NAME: Record<number, string> = { 1: 'Open', 2: 'Review', 3: 'Hold', 4: 'Paid', 5: 'Void' };
/** A line of type 2 is a part. */
const LINE_PART = 2;

/**
 * The accounts the request names (docs/decisions/0436). A work order carries no job and no
 * equipment, so neither account may keep the job or the equipment subsidiary ledger (its postings
 * there would have no job cost or equipment cost behind them). The receivable is a current asset
 * that keeps the clients subsidiary ledger (as the seed's 1110, 1115 and 1120); cost of goods is
 * an expense account (9 direct expense without a job subsidiary, as the seed's 5200; 11 overhead;
 * 13 other expense), never 10 equipment expense, an asset or an income account.
 * ledger-accounts accountType: 2 current asset, 9 direct expense, 11 overhead, 13 other expense;
 * subsidiaryType: 1 jobs, 2 equipment, 4 clients.
 */
const RECEIVABLE_TYPE = 2;
const SUBSIDIARY_CLIENTS = 4;
const COST_OF_GOODS_TYPES = new Set([9, 11, 13]);
const SUBSIDIARY_NAME: Record<number, string> = { 1: 'job', 2: 'equipment' };

/** Why `account` cannot take what `field` posts, or undefined when it can. */
function accountRefusal(field: 'receivableAccount' | 'costOfGoodsAccount', number: number, account: StoredRecord): string | undefined {
  const type = Number(account.accountType);
  const subsidiary = Number(account.subsidiaryType ?? 0);
  const ledger = SUBSIDIARY_NAME[subsidiary];
  if (ledger) return `ledger account ${number} keeps the ${ledger} subsidiary ledger; a service work order carries no ${ledger}`;
  if (field === 'receivableAccount' && (type !== RECEIVABLE_TYPE || subsidiary !== SUBSIDIARY_CLIENTS)) {
    return `ledger account ${number} (type ${type}, subsidiary ${subsidiary}) is not a receivable: a current asset (type 2) keeping the clients subsidiary ledger (4)`;
  }
  if (field === 'costOfGoodsAccount' && !COST_OF_GOODS_TYPES.has(type)) {
    return `ledger account ${number} (type ${type}) is not a cost of goods account: a direct expense (9), overhead (11) or other expense (13) account`;
  }
  return undefined;
}

/** A number of a stored record, or undefined when it has none. */
const opt = (v: number | null | undefined): number | undefined => v ?? undefined;

interface ResolvedLine {
  index: number;
  /** The work order line (every published field, and `id`). */
  row: StoredRecord;
  quantity: Dec;
  extended: Dec;
  taxable: boolean;
  incomeAccount: number;
  part: number | null;
}

/** The work order, checked and resolved. */
export interface WorkOrder {
  /** The work order (every published field, and `id`). */
  header: StoredRecord;
  /** For messages: `service work order 12 (SI-0012)`. */
  label: string;
  invoiceDate: string;
  lines: ResolvedLine[];
  /** Part lines with a quantity: they leave the parts location. */
  partLines: ResolvedLine[];
  salesTax: Dec;
  amountPaid: Dec;
  salesTaxAccount: number | undefined;
  receivableAccount: number;
  inventoryAccount: number | undefined;
  /** The client (clientName, shortName, termsDays). */
  client: StoredRecord;
}

/** The work order (404), and 422 when it posted already or is not Open. The caller holds its lock. */
export async function readWorkOrder(ctx: PostingContext, input: ServiceInvoicePostInput): Promise<{ header: StoredRecord; label: string }> {
  const header = await records(ctx, 'service-invoices').where({ recordNumber: input.recordNumber }).first();
  if (!header) {
    throw new ApiProblem('REFERENCE_NOT_FOUND', `Referenced records do not exist: recordNumber: service work order ${input.recordNumber} does not exist.`, {
      errors: [{ field: 'recordNumber', code: 'not_found', message: `service work order ${input.recordNumber} does not exist` }],
    });
  }
  const status = Number(header.status);
  const label = `service work order ${input.recordNumber} (${String(header.invoiceNumber ?? '')})`;
  if ((header.ledgerRecordNumber ?? null) !== null) {
    throw new ApiProblem('DOCUMENT_NOT_POSTABLE', `${label} was already invoiced: it posted ledger transaction ${Number(header.ledgerRecordNumber)} (status ${status} ${STATUS_NAME[status] ?? ''}).`, {
      errors: [{ field: 'recordNumber', code: 'already_posted', message: `already posted as ledger transaction ${Number(header.ledgerRecordNumber)}` }],
      extensions: { recordNumber: input.recordNumber, status, ledgerRecordNumber: Number(header.ledgerRecordNumber) },
    });
  }
  if (status !== STATUS_OPEN) {
    throw new ApiProblem('DOCUMENT_NOT_POSTABLE', `${label} has status ${status} (${STATUS_NAME[status] ?? 'unknown'}); only an Open (1) work order posts.`, {
      errors: [{ field: 'recordNumber', code: 'not_open', message: `status ${status} (${STATUS_NAME[status] ?? 'unknown'}), not Open` }],
      extensions: { recordNumber: input.recordNumber, status },
    });
  }
  return { header, label };
}

/** Everything the posting names or derives, checked (404 / 422). `invoiceDate`: the date it posts on. */
export async function resolveWorkOrder(ctx: PostingContext, input: ServiceInvoicePostInput, header: StoredRecord, label: string, invoiceDate: string): Promise<WorkOrder> {
  const ledgerSetup = (await records(ctx, 'ledger-setups').orderBy('recordNumber').first(['arControlAccount', 'inventoryAccount', 'salesTaxPayableAccount', 'serviceIncomeAccount'])) ?? {};
  const lineRows = await records(ctx, 'service-invoices.lines').ofParent(header.id).orderBy('lineNumber').all();

  const check = new ReferenceCheck();
  const clients = await loadReferenced(ctx, 'clients', 'recordNumber', [{ field: 'recordNumber', value: Number(header.clientNumber) }], ['clientName', 'shortName', 'termsDays']);
  const client = clients.get(String(Number(header.clientNumber)));
  let typeAccount: number | undefined;
  if ((header.serviceType ?? null) !== null) {
    const type = await records(ctx, 'service-types').where({ recordNumber: Number(header.serviceType) }).first(['incomeAccount']);
    typeAccount = opt(type?.incomeAccount);
  }
  const setupIncome = opt(ledgerSetup.serviceIncomeAccount);
  const lines: ResolvedLine[] = lineRows.map((row, index) => ({
    index,
    row,
    quantity: row.quantity ?? new Dec(0),
    extended: row.extendedTotal ?? new Dec(0),
    taxable: row.taxable === true,
    incomeAccount: opt(row.ledgerAccount) ?? typeAccount ?? setupIncome ?? 0,
    part: Number(row.lineType) === LINE_PART && (row.partNumber ?? null) !== null ? Number(row.partNumber) : null,
  }));
  const partLines = lines.filter((l) => l.part !== null && l.quantity.greaterThan(0));
  for (const l of lines) {
    if (l.incomeAccount === 0 && !l.extended.isZero()) {
      check.notPostable('recordNumber', `line ${Number(l.row.lineNumber)} has no income account and neither the service type nor the ledger setup names one`, 'setup_incomplete');
    }
  }
  const salesTax: Dec = header.salesTax ?? new Dec(0);
  const salesTaxAccount = opt(ledgerSetup.salesTaxPayableAccount);
  if (!salesTax.isZero() && salesTaxAccount === undefined) check.notPostable('recordNumber', 'the work order carries sales tax and the ledger setup has no sales tax account', 'setup_incomplete');

  const receivableAccount = input.receivableAccount ?? opt(ledgerSetup.arControlAccount);
  if (receivableAccount === undefined) check.notPostable('receivableAccount', 'no receivableAccount given and the ledger setup has no AR control account', 'required');

  // Parts: where they come from and where their cost goes.
  let inventoryAccount: number | undefined;
  if (partLines.length > 0) {
    if (input.partsLocation === undefined) check.notPostable('partsLocation', `the work order has ${partLines.length} part line(s): name the inventory location they leave`, 'required');
    if (input.costOfGoodsAccount === undefined) check.notPostable('costOfGoodsAccount', 'the work order has part lines: name the cost of goods sold account', 'required');
  }
  if (input.partsLocation !== undefined) {
    const locations = await loadReferenced(ctx, 'inventory-locations', 'recordNumber', [{ field: 'partsLocation', value: input.partsLocation }], ['inventoryAccount', 'inactive']);
    const location = locations.get(String(input.partsLocation));
    if (!location) check.notFound('partsLocation', `inventory location ${input.partsLocation}`);
    else {
      if (location.inactive && partLines.length > 0) check.notPostable('partsLocation', `inventory location ${input.partsLocation} is inactive`, 'inactive');
      inventoryAccount = opt(location.inventoryAccount) ?? opt(ledgerSetup.inventoryAccount);
      if (inventoryAccount === undefined && partLines.length > 0) check.notPostable('partsLocation', `inventory location ${input.partsLocation} has no inventory account and the ledger setup has none`, 'setup_incomplete');
    }
  }
  const accountRefs: Array<{ field: 'receivableAccount' | 'costOfGoodsAccount'; value: number }> = [];
  if (input.receivableAccount !== undefined) accountRefs.push({ field: 'receivableAccount', value: input.receivableAccount });
  if (input.costOfGoodsAccount !== undefined) accountRefs.push({ field: 'costOfGoodsAccount', value: input.costOfGoodsAccount });
  const accounts = await loadReferenceRows(ctx, 'ledger-accounts', accountRefs, ['accountType', 'subsidiaryType', 'inactive']);
  for (const ref of accountRefs) {
    const account = accounts.get(String(ref.value));
    if (!account) {
      check.notFound(ref.field, `ledger account ${ref.value}`);
      continue;
    }
    if (account.inactive) check.notPostable(ref.field, `ledger account ${ref.value} is inactive`, 'inactive');
    const refusal = accountRefusal(ref.field, ref.value, account);
    if (refusal) check.notPostable(ref.field, refusal, ref.field === 'receivableAccount' ? 'not_receivable_account' : 'not_cost_of_goods_account');
  }
  // Accounts the work order and the setup name (not the request): they must exist and be active,
  // else the posting is refused naming the work order (never a foreign-key error half-way).
  const derived = new Map<number, string>();
  for (const l of lines) if (l.incomeAccount !== 0 && !l.extended.isZero()) derived.set(l.incomeAccount, `income account of line ${Number(l.row.lineNumber)}`);
  if (!salesTax.isZero() && salesTaxAccount !== undefined) derived.set(salesTaxAccount, 'sales tax account of the ledger setup');
  if (partLines.length > 0 && inventoryAccount !== undefined) derived.set(inventoryAccount, `inventory account of location ${input.partsLocation}`);
  if (input.receivableAccount === undefined && receivableAccount !== undefined) derived.set(receivableAccount, 'AR control account of the ledger setup');
  const derivedRows = await loadReferenceRows(ctx, 'ledger-accounts', [...derived.keys()].map((value) => ({ field: 'recordNumber', value })), ['inactive']);
  for (const [account, what] of derived) {
    const row = derivedRows.get(String(account));
    if (!row) check.notPostable('recordNumber', `ledger account ${account} (${what}) does not exist`, 'setup_incomplete');
    else if (row.inactive) check.notPostable('recordNumber', `ledger account ${account} (${what}) is inactive`, 'inactive');
  }
  const source = (await loadReferenceRows(ctx, 'transaction-sources', [{ field: 'recordNumber', value: SERVICE_SOURCE }], ['recordNumber'])).get(String(SERVICE_SOURCE));
  if (!source) check.notPostable('recordNumber', `transaction source ${SERVICE_SOURCE} (Service Invoices) does not exist`, 'setup_incomplete');
  if (!client) check.notPostable('recordNumber', `client ${Number(header.clientNumber)} of the work order does not exist`, 'setup_incomplete');
  check.throwIfAny();
  return {
    header,
    label,
    invoiceDate,
    lines,
    partLines,
    salesTax,
    amountPaid: header.amountPaid ?? new Dec(0),
    salesTaxAccount,
    receivableAccount: receivableAccount!,
    inventoryAccount,
    client: client!,
  };
}
