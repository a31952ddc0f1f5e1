import type { Knex } from 'knex';
import { ApiProblem } from '../../../../errors/problem';
import type { components } from '../../../../../generated/api-types';
import { Dec } from '../../../../storage/decimal';
import { toIsoDate } from '../../../../storage/db-time';
import { SCALE, type PostingContext } from '../../context';
import { InputErrors, calendarDate } from '../../input';
import { allocateLedgerRecord, writeJournal, type JournalLine, type PostedLedgerTransaction, type LedgerRecordNumbers } from '../../ledger/journal';
import type { PostedJobCost } from '../../ledger/job-costs';
import { loadPostingSetup, resolvePostingPeriod } from '../../ledger/period';
import { ReferenceCheck, isTrue, loadReferenceRows, loadReferenced } from '../../ledger/references';
import { MOVEMENT, applyStockMovements, type PostedInventoryHistory, type StockMovement } from '../../ledger/stock';
import { readRecord, type FullRecordWithLines } from '../../records';
import type { PostOutcome, WriteDefinition } from '../../runner';

/**
 * POST /service-invoices/post: invoices an Open service work order (domain notes, "How it posts",
 * source 22 Service Invoices). The work order (srvinv + srvlin) already exists; this write turns
 * it into a posted invoice, in one transaction:
 *
 *   journal    debit the receivable account (invoice total = lines + sales tax); credit each
 *              line's income account (taxable / non-taxable, srvlin.lgract, else the service
 *              type's income account, else the ledger setup's service income account) and the
 *              sales tax to the ledger setup's sales tax account; parts: debit cost of goods,
 *              credit the parts location's inventory account (invloc.lgract, else lgrstp.invact)
 *   stock      every part line leaves `partsLocation` (on hand and available) at weighted-average
 *              cost, through applyStockMovements (the code inventory allocations use): history
 *              rows of source 22, 422 INSUFFICIENT_STOCK naming every short line
 *   document   lgrrec, period and year, workStatus 5 Complete, invoice total and balance from the
 *              lines, each part line's unit cost; the status stays 1 Open (an open receivable)
 *
 * Only a work order with status 1 Open that has not posted yet (lgrrec null) posts; anything else
 * is 422 DOCUMENT_NOT_POSTABLE naming it, its status and, when it already posted, its journal.
 * Service work orders carry no job: jobCosts is always empty.
 */

export const SERVICE_SOURCE = 22;
const STATUS = { open: 1, review: 2, hold: 3, paid: 4, void: 5 } as const;
const STATUS_NAME: Record<number, string> = { 1: 'Open', 2: 'Review', 3: 'Hold', 4: 'Paid', 5: 'Void' };
const WORK_COMPLETE = 5;
const LINE_PART = 2;

export interface ServiceInvoicePostInput {
  recordNumber: number;
  invoiceDate?: string;
  partsLocation?: number;
  receivableAccount?: number;
  costOfGoodsAccount?: number;
  period?: number;
  year?: number;
}

/** A service invoice as POST /service-invoices/query returns it with its `lines` (the contract's ServiceInvoice). */
export type PostedServiceInvoice = FullRecordWithLines<components['schemas']['ServiceInvoice'], components['schemas']['ServiceInvoiceLine']>;

export interface ServiceInvoicePostResult {
  document: PostedServiceInvoice;
  ledgerTransaction: PostedLedgerTransaction;
  jobCosts: PostedJobCost[];
  inventory: PostedInventoryHistory[];
  period: number;
  year: number;
}

type Numbers = LedgerRecordNumbers;

const optInt = (v: unknown): number | undefined => (v === undefined || v === null ? undefined : Number(v));

/** The request body as the contract defines it (generated/api-types.ts). */
type ServiceWorkOrderPostBody = components['schemas']['ServiceWorkOrderPostInput'];

export function prepareServiceInvoicePost(body: unknown): ServiceInvoicePostInput {
  // Shapes, types and ranges were checked by the contract validator (400 naming the field).
  // The contract validator has checked the body against ServiceWorkOrderPostInput before dispatch.
  const b = (body ?? {}) as ServiceWorkOrderPostBody;
  const errors = new InputErrors();
  const input: ServiceInvoicePostInput = { recordNumber: Number(b.recordNumber) };
  const invoiceDate = calendarDate(b.invoiceDate, 'invoiceDate', errors);
  errors.throwIfAny();
  if (invoiceDate !== undefined) input.invoiceDate = invoiceDate;
  const partsLocation = optInt(b.partsLocation);
  if (partsLocation !== undefined) input.partsLocation = partsLocation;
  const receivable = optInt(b.receivableAccount);
  if (receivable !== undefined) input.receivableAccount = receivable;
  const cogs = optInt(b.costOfGoodsAccount);
  if (cogs !== undefined) input.costOfGoodsAccount = cogs;
  if (b.period !== undefined) input.period = b.period;
  if (b.year !== undefined) input.year = b.year;
  return input;
}

/** The work order as the service-invoices query returns it, with its lines (read-back.ts). */
export async function readServiceInvoice(db: Knex | Knex.Transaction, id: string): Promise<PostedServiceInvoice> {
  return (await readRecord(db, 'service-invoices', id, { children: ['lines'] })) as unknown as PostedServiceInvoice;
}

function addDays(date: string, days: number): string {
  const d = new Date(`${date}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + days);
  return d.toISOString().slice(0, 10);
}

interface ResolvedLine {
  index: number;
  row: Record<string, any>;
  quantity: Dec;
  extended: Dec;
  taxable: boolean;
  incomeAccount: number;
  part: number | null;
}

export const serviceInvoicePostWrite: WriteDefinition<ServiceInvoicePostInput, Numbers, ServiceInvoicePostResult> = {
  route: '/service-invoices/post',
  what: 'posting a service work order',
  prepare: prepareServiceInvoicePost,

  allocate: allocateLedgerRecord,

  async post(ctx, input, numbers): Promise<PostOutcome<ServiceInvoicePostResult>> {
    const { trx, dialect } = ctx;
    const dec = (raw: unknown, scale: number) => dialect.decodeDecimal(raw, scale) ?? new Dec(0);
    const money = (v: Dec) => dialect.encodeDecimal(v, SCALE.money);

    // One posting per work order: serialise on it, then read its state.
    await ctx.lockName(`srvinv:${input.recordNumber}`);
    const header = await trx('srvinv').where({ recnum: input.recordNumber }).first();
    if (!header) {
      throw new ApiProblem('REFERENCE_NOT_FOUND', `Referenced records do not exist: recordNumber: service work order ${input.recordNumber} does not exist.`, {
        errors: [{ field: 'recordNumber', code: 'not_found', message: `service work order ${input.recordNumber} does not exist` }],
      });
    }
    const status = Number(header.status);
    const label = `service work order ${input.recordNumber} (${String(header.invnum ?? '')})`;
    if (header.lgrrec !== null && header.lgrrec !== undefined) {
      throw new ApiProblem('DOCUMENT_NOT_POSTABLE', `${label} was already invoiced: it posted ledger transaction ${Number(header.lgrrec)} (status ${status} ${STATUS_NAME[status] ?? ''}).`, {
        errors: [{ field: 'recordNumber', code: 'already_posted', message: `already posted as ledger transaction ${Number(header.lgrrec)}` }],
        extensions: { recordNumber: input.recordNumber, status, ledgerRecordNumber: Number(header.lgrrec) },
      });
    }
    if (status !== STATUS.open) {
      throw new ApiProblem('DOCUMENT_NOT_POSTABLE', `${label} has status ${status} (${STATUS_NAME[status] ?? 'unknown'}); only an Open (1) work order posts.`, {
        errors: [{ field: 'recordNumber', code: 'not_open', message: `status ${status} (${STATUS_NAME[status] ?? 'unknown'}), not Open` }],
        extensions: { recordNumber: input.recordNumber, status },
      });
    }

    const invoiceDate = input.invoiceDate ?? toIsoDate(header.invdte)!;
    const periodRequest = { date: invoiceDate, dateField: 'invoiceDate', period: input.period ?? null, year: input.year ?? null };
    const { setup, fiscal } = await loadPostingSetup(trx, periodRequest, ctx.references);
    const extra = (await trx('lgrstp').orderBy('recnum').first('arcact', 'invact', 'stxact', 'srvact')) ?? {};
    const lineRows: Array<Record<string, any>> = await trx('srvlin').where({ _idref: header._idnum }).orderBy('linnum');

    const check = new ReferenceCheck();
    const clients = await loadReferenced(ctx, 'clients', 'recordNumber', [{ field: 'recordNumber', value: Number(header.clnnum) }], ['clientName', 'shortName', 'termsDays']);
    const client = clients.get(String(Number(header.clnnum)));
    let typeAccount: number | undefined;
    if (header.srvtyp !== null && header.srvtyp !== undefined) {
      const type = await trx('srvtyp').where({ recnum: Number(header.srvtyp) }).first('lgract');
      typeAccount = optInt(type?.lgract);
    }
    const setupIncome = optInt(extra.srvact);
    const lines: ResolvedLine[] = lineRows.map((row, index) => ({
      index,
      row,
      quantity: dec(row.linqty, SCALE.quantity),
      extended: dec(row.extttl, SCALE.money),
      taxable: isTrue(row.taxabl),
      incomeAccount: optInt(row.lgract) ?? typeAccount ?? setupIncome ?? 0,
      part: Number(row.lintyp) === LINE_PART && row.prtnum !== null && row.prtnum !== undefined ? Number(row.prtnum) : null,
    }));
    const partLines = lines.filter((l) => l.part !== null && l.quantity.greaterThan(0));
    for (const l of lines) {
      if (l.incomeAccount === 0 && !l.extended.isZero()) {
        check.notPostable('recordNumber', `line ${Number(l.row.linnum)} has no income account and neither the service type nor the ledger setup names one`, 'setup_incomplete');
      }
    }
    const salesTax = dec(header.taxamt, SCALE.money);
    const stxact = optInt(extra.stxact);
    if (!salesTax.isZero() && stxact === undefined) check.notPostable('recordNumber', 'the work order carries sales tax and the ledger setup has no sales tax account', 'setup_incomplete');

    const receivableAccount = input.receivableAccount ?? optInt(extra.arcact);
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
        inventoryAccount = optInt(location.inventoryAccount) ?? optInt(extra.invact);
        if (inventoryAccount === undefined && partLines.length > 0) check.notPostable('partsLocation', `inventory location ${input.partsLocation} has no inventory account and the ledger setup has none`, 'setup_incomplete');
      }
    }
    const accountRefs: Array<{ field: string; value: number }> = [];
    if (input.receivableAccount !== undefined) accountRefs.push({ field: 'receivableAccount', value: input.receivableAccount });
    if (input.costOfGoodsAccount !== undefined) accountRefs.push({ field: 'costOfGoodsAccount', value: input.costOfGoodsAccount });
    const accounts = await loadReferenceRows(ctx, 'ledger-accounts', accountRefs, ['inactive']);
    for (const ref of accountRefs) {
      const account = accounts.get(String(ref.value));
      if (!account) check.notFound(ref.field, `ledger account ${ref.value}`);
      else if (account.inactive) check.notPostable(ref.field, `ledger account ${ref.value} is inactive`, 'inactive');
    }
    // Accounts the work order and the setup name (not the request): they must exist and be active,
    // else the posting is refused naming the work order (never a foreign-key error half-way).
    const derived = new Map<number, string>();
    for (const l of lines) if (l.incomeAccount !== 0 && !l.extended.isZero()) derived.set(l.incomeAccount, `income account of line ${Number(l.row.linnum)}`);
    if (!salesTax.isZero() && stxact !== undefined) derived.set(stxact, 'sales tax account of the ledger setup');
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
    if (!client) check.notPostable('recordNumber', `client ${Number(header.clnnum)} of the work order does not exist`, 'setup_incomplete');
    check.throwIfAny();

    const { period, year } = await resolvePostingPeriod(trx, setup, periodRequest, fiscal);

    // Totals from the lines: the invoice is what its lines and its tax say.
    const linesTotal = lines.reduce((s, l) => s.plus(l.extended), new Dec(0));
    const invoiceTotal = linesTotal.plus(salesTax);
    const amountPaid = dec(header.amtpad, SCALE.money);
    if (invoiceTotal.isZero() && partLines.length === 0) {
      throw new ApiProblem('BUSINESS_RULE_VIOLATED', `${label} has nothing to invoice: its lines total 0 and it uses no parts.`, {
        errors: [{ field: 'recordNumber', code: 'nothing_to_post' }],
      });
    }

    // Parts leave the location first (lock order: part locks before ledger balance rows).
    const movements: StockMovement[] = partLines.map((l) => ({
      field: `lines[${l.index}]`,
      partNumber: l.part!,
      locationNumber: input.partsLocation!,
      movementType: MOVEMENT.consumed,
      quantity: l.quantity.negated(),
      onHand: true,
      available: true,
      sourceNumber: SERVICE_SOURCE,
      documentNumber: String(header.invnum ?? ''),
      sourceRecordNumber: input.recordNumber,
      transactionDate: invoiceDate,
      period,
      year,
    }));
    const stock = await applyStockMovements(ctx, movements);
    const costByLine = new Map<number, Dec>();
    partLines.forEach((l, i) => costByLine.set(l.index, stock.applied[i]!.value.negated()));
    const costOfGoods = [...costByLine.values()].reduce((s, v) => s.plus(v), new Dec(0));

    // The journal.
    const clientName = String(client!.shortName || client!.clientName || `Client ${Number(header.clnnum)}`);
    const invoiceNumber = String(header.invnum ?? '') || String(input.recordNumber);
    const journalLines: JournalLine[] = [];
    let n = 0;
    const push = (account: number, description: string, debit: Dec, credit: Dec) => {
      if (debit.isZero() && credit.isZero()) return;
      journalLines.push({ lineNumber: (n += 1), ledgerAccount: account, description: description.slice(0, 50), debit, credit });
    };
    push(receivableAccount!, `${clientName} ${invoiceNumber} client ${Number(header.clnnum)}`, invoiceTotal, new Dec(0));
    const income = new Map<string, { account: number; taxable: boolean; amount: Dec }>();
    for (const l of lines) {
      if (l.extended.isZero()) continue;
      const key = `${l.incomeAccount}/${l.taxable}`;
      const sum = income.get(key) ?? { account: l.incomeAccount, taxable: l.taxable, amount: new Dec(0) };
      sum.amount = sum.amount.plus(l.extended);
      income.set(key, sum);
    }
    for (const s of income.values()) push(s.account, s.taxable ? 'Taxable service income' : 'Non-taxable service income', new Dec(0), s.amount);
    push(stxact ?? 0, 'Sales tax', new Dec(0), salesTax);
    push(input.costOfGoodsAccount ?? 0, 'Parts used', costOfGoods, new Dec(0));
    push(inventoryAccount ?? 0, `Parts from location ${input.partsLocation ?? ''}`.trim(), new Dec(0), costOfGoods);
    if (journalLines.some((l) => l.debit.isNegative() || l.credit.isNegative())) {
      // A negative line (a credit line on the work order) would need the other side: refused, never guessed.
      throw new ApiProblem('BUSINESS_RULE_VIOLATED', `${label} has negative amounts (lines or tax); it cannot be posted as an invoice.`, {
        errors: [{ field: 'recordNumber', code: 'negative_amount' }],
      });
    }
    const ledgerTransaction = await writeJournal(ctx, {
      recordNumber: numbers.ledgerRecord,
      transactionNumber: invoiceNumber.slice(0, 20),
      transactionDate: invoiceDate,
      enteredDate: ctx.today,
      description: `${clientName.slice(0, 35)} ${invoiceNumber}`.slice(0, 50),
      sourceNumber: SERVICE_SOURCE,
      period,
      year,
      lines: journalLines,
    });

    // The document: invoiced. The update is conditional on "not posted yet" (the lock makes it certain).
    const dueDate = toIsoDate(header.duedte) ?? addDays(invoiceDate, Number(client!.termsDays ?? 30));
    const updated = await trx('srvinv')
      .where({ _idnum: header._idnum })
      .whereNull('lgrrec')
      .update({
        invdte: invoiceDate,
        duedte: dueDate,
        wrksts: WORK_COMPLETE,
        invttl: money(invoiceTotal),
        invbal: money(invoiceTotal.minus(amountPaid)),
        lgrrec: numbers.ledgerRecord,
        actprd: period,
        postyr: year,
        upddte: ctx.now,
        updusr: ctx.user,
      });
    if (Number(updated) !== 1) throw new Error(`service work order ${input.recordNumber} changed while it was being posted`);
    for (const l of lines) {
      const cost = costByLine.get(l.index);
      const change: Record<string, unknown> = {};
      if (cost !== undefined) change.untcst = dialect.encodeDecimal(cost.div(l.quantity).toDecimalPlaces(SCALE.price, Dec.ROUND_HALF_UP), SCALE.price);
      if ((l.row.lgract === null || l.row.lgract === undefined) && l.incomeAccount !== 0) change.lgract = l.incomeAccount;
      if (Object.keys(change).length === 0) continue;
      await trx('srvlin')
        .where({ _idnum: l.row._idnum })
        .update({ ...change, upddte: ctx.now, updusr: ctx.user });
    }
    const document = await readServiceInvoice(trx, String(header._idnum));
    return { result: { document, ledgerTransaction, jobCosts: [], inventory: stock.inventory, period, year } };
  },
};
