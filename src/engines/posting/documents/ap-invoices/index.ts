import type { NumberAllocator } from '../../../../storage/numbers';
import { loadPostingSetup, resolvePostingPeriod } from '../../ledger/period';
import { ReferenceCheck, loadReferenceRows } from '../../ledger/references';
import { storableDateAfter } from '../../limits';
import { allocateRecordNumbers, fitText, rangeValues, recordLockName, records, type RecordsContext } from '../../records';
import { resendConflict } from '../../resend';
import type { PostOutcome, WriteDefinition } from '../../runner';
import { insertInvoice, postInvoiceEquipmentCosts, postInvoiceJobCosts, postInvoiceJournal, type InvoiceToWrite } from './cascade';
import { AP_SOURCE, STATUS_OPEN, STATUS_REVIEW, STATUS_VOID, checkApTotals, jobOf, prepareApInvoice, type ApInvoiceInput } from './input';
import { differences, existingResult, type ApInvoiceWriteResult } from './read-back';
import { resolveLines } from './references';

/**
 * POST /ap-invoices: enters a payable invoice and, when it is Open, posts its cascade in the
 * same transaction (domain notes, "How it posts", source 11). The pieces:
 *
 *   input.ts       the body parsed (400 before dispatch) and the totals (422) decided from it alone
 *   references.ts  vendor, jobs, phases, accounts, cost codes and types, equipment; the defaults
 *   cascade.ts     invoice + lines, journal, job costs, equipment costs (balances through the journal)
 *   read-back.ts   the posted invoice and journal as the query engine reads them; duplicates
 *
 * Status 2 (Review) stores the invoice and its lines only: no journal (the result has no
 * ledgerTransaction key), no job costs, no equipment costs. Both statuses go through the same checks.
 */

export { type ApInvoiceInput, type ApLineInput } from './input';
export { type ApInvoiceWriteResult, type PostedApInvoice } from './read-back';
export { insertInvoice, invoiceJobCosts, invoiceJournalLines, type InvoiceToWrite } from './cascade';
export { type MissingEquipment } from './references';
export { resolveLines as resolveApLines, type ResolvedLine as ResolvedApLine } from './references';

interface Numbers {
  invoiceRecord: number;
  ledgerRecord: number | null;
  jobCostRecords: number[];
  /** One per line that may be on an equipment-expense account (it names equipment and has no job); unused ones are gaps. */
  equipmentCostRecords: number[];
}

/** The name `post` locks first (taken by the transaction's BEGIN where it can: runner.ts firstLock). */
const lockOf = (input: ApInvoiceInput): string => recordLockName('ap-invoices', [input.vendorNumber, input.invoiceNumber]);

/** The invoices entered under the input's vendor invoice number (a void one excepted): read right after the lock (runner.ts firstRead). */
const enteredUnderNumber = (ctx: RecordsContext, input: ApInvoiceInput) =>
  records(ctx, 'ap-invoices').where({ vendorNumber: input.vendorNumber, invoiceNumber: input.invoiceNumber }).whereNot({ status: STATUS_VOID }).orderBy('recordNumber');

export const apInvoicesWrite: WriteDefinition<ApInvoiceInput, Numbers, ApInvoiceWriteResult> = {
  route: '/ap-invoices',
  what: 'entering an AP invoice',
  prepare: prepareApInvoice,
  firstLock: lockOf,
  firstRead: (ctx, input) => enteredUnderNumber(ctx, input).firstStatement(['id']),

  async allocate(input, numbers: NumberAllocator): Promise<Numbers> {
    const posts = input.status === STATUS_OPEN;
    const jobLines = posts ? input.lines.filter((l) => jobOf(input, l) !== undefined).length : 0;
    // Which accounts are equipment-expense ones is known only once the accounts are read: a line
    // on one names its equipment and has no job (references.ts refuses the others).
    const equipmentLines = posts ? input.lines.filter((l) => l.equipmentNumber !== undefined && jobOf(input, l) === undefined).length : 0;
    const got = await allocateRecordNumbers(numbers, { 'ap-invoices': 1, 'ledger-transactions': posts ? 1 : 0, 'job-costs': jobLines, 'equipment-costs': equipmentLines });
    return {
      invoiceRecord: got['ap-invoices'].first,
      ledgerRecord: posts ? got['ledger-transactions'].first : null,
      jobCostRecords: rangeValues(got['job-costs']),
      equipmentCostRecords: rangeValues(got['equipment-costs']),
    };
  },

  async post(ctx, input, numbers): Promise<PostOutcome<ApInvoiceWriteResult>> {
    checkApTotals(input);
    const { trx } = ctx;

    // One vendor invoice number is entered once: serialise, then look.
    await ctx.lockName(lockOf(input));
    const already = await enteredUnderNumber(ctx, input).first(['id']);
    if (already) {
      const existing = await existingResult(ctx, already.id);
      const diff = differences(existing.document, input);
      if (diff.length === 0) return { result: existing, duplicate: true };
      throw resendConflict(
        {
          code: 'DOCUMENT_NUMBER_CONFLICT',
          numberField: 'invoiceNumber',
          numberCode: 'already_entered',
          detail: `Invoice ${input.invoiceNumber} of vendor ${input.vendorNumber} was already entered (AP invoice ${existing.document.recordNumber})`,
          existingRecordNumber: existing.document.recordNumber,
        },
        diff,
      );
    }

    const periodRequest = { date: input.invoiceDate, dateField: 'invoiceDate', period: input.period ?? null, year: input.year ?? null };
    const { setup, fiscal } = await loadPostingSetup(trx, periodRequest, ctx.references);
    const { lines, vendor } = await resolveLines(ctx, input, setup);
    const posts = input.status === STATUS_OPEN && input.invoiceTotal.greaterThan(0);
    if (posts) {
      const check = new ReferenceCheck();
      if (setup.apControlAccount === null) check.notPostable('vendorNumber', 'the ledger setup has no AP control account', 'setup_incomplete');
      const source = (await loadReferenceRows(ctx, 'transaction-sources', [{ field: 'status', value: AP_SOURCE }], ['recordNumber'])).get(String(AP_SOURCE));
      if (!source) check.notPostable('status', `transaction source ${AP_SOURCE} (Payable Invoices) does not exist`, 'setup_incomplete');
      check.throwIfAny();
    }
    const { period, year } = await resolvePostingPeriod(trx, setup, periodRequest, fiscal);

    const invoice: InvoiceToWrite = {
      input,
      lines,
      recordNumber: numbers.invoiceRecord,
      ledgerRecord: posts ? numbers.ledgerRecord : null,
      dueDate: input.dueDate ?? storableDateAfter('invoiceDate', "the due date (invoiceDate + the vendor's terms days)", input.invoiceDate, vendor.termsDays ?? 30, 'ap-invoices', 'dueDate'),
      enteredDate: ctx.today,
      period,
      year,
    };
    // Queued, not awaited: the invoice, its job costs, its equipment costs and its journal are sent
    // when the journal is awaited, in this order (storage/statement-batch.ts).
    const document = insertInvoice(ctx, invoice);
    if (!posts || input.status === STATUS_REVIEW) return { result: { document: await document, jobCosts: [], equipmentCosts: [], inventory: [], period, year } };

    const description = fitText('ledger-transactions', 'description', input.description || `${String(vendor.shortName || vendor.vendorName || `Vendor ${input.vendorNumber}`)} ${input.invoiceNumber}`);
    const jobCosts = postInvoiceJobCosts(ctx, invoice, numbers.jobCostRecords);
    const equipmentCosts = postInvoiceEquipmentCosts(ctx, invoice, numbers.equipmentCostRecords);
    const ledgerTransaction = await postInvoiceJournal(ctx, invoice, setup, description);
    const result: ApInvoiceWriteResult = { document: await document, jobCosts: await jobCosts, equipmentCosts: await equipmentCosts, inventory: [], period, year, ledgerTransaction };
    return { result };
  },
};
