import { ApiProblem } from '../../../../errors/problem';
import { decToJson } from '../../../../storage/decimal';
import { allocateLedgerRecord, type LedgerRecordNumbers } from '../../ledger/journal';
import { loadPostingSetup, resolvePostingPeriod } from '../../ledger/period';
import type { PostOutcome, WriteDefinition } from '../../runner';
import { claim, postBatch } from './cascade';
import { accountsOf, computeRecord, type RecordPosting } from './compute';
import { preparePayrollPost, type PayrollPostInput } from './input';
import { readPayrollRecords, type PayrollPostResult, type PostedPayrollBatch } from './read-back';
import { Refusals, cashAccountOf, checkPostingReferences, checkStatuses, ledgerAccountsOf, readLines, selectRecords } from './references';
import { loadSetup } from './setup';

/**
 * POST /payroll-records/post: posts a batch of Computed payroll records (domain notes, "How it
 * posts", sources 16/17), chosen by their period end date or by their record numbers, in ONE
 * transaction:
 *
 *   journal (source 16)  debits: gross wages of job lines to direct expense/WIP (with the job),
 *                        of equipment lines to the shop (equipment-expense, with the equipment),
 *                        of the rest to the employee's department wage account (overhead; a
 *                        department account that keeps job or equipment costs refuses such lines);
 *                        employer burden (employer taxes, workers' comp, benefits) to its expense
 *                        accounts. credits: withholdings and burden to their liability accounts,
 *                        net pay to cash (the bank account's ledger account, default the ledger
 *                        setup's cash account).
 *   job costs            one per job line: labor cost type (2), hours and amount (= its ledger debit)
 *   equipment costs      one per equipment line: category 5 Labor (= its ledger debit)
 *
 * A negative timecard line is a correction: a key the lines make negative posts as a credit on
 * the same account and job or equipment, and its cost is negative; a record with a negative gross
 * or net pay (no check pays it) is 422 (decision 0425).
 *   records              status 2 Computed -> 3 Posted, with the journal's record number and period
 *
 * Where the amounts come from: gross is the record's timecard lines; withholdings are the
 * company's payroll calculations (types 1-3 taxes as a percent of gross; type 4 deductions through
 * the employee's payroll deductions) and must add up to the deductions the record was computed
 * with (else 422: compute it again); employer burden is calculation type 6 (percent of gross; a
 * rate of 0 means workers' comp at the rate of each timecard line's workers' comp code) and the
 * employee's benefits (a fixed amount per pay period).
 *
 *   input.ts       the body (400 before dispatch)
 *   references.ts  the batch's records and lines, their statuses, cash, jobs, equipment, accounts
 *   setup.ts       the payroll setup the batch posts by (payroll reads more of it than any write)
 *   compute.ts     what each record posts (pure)
 *   cascade.ts     the claim; the journal, job and equipment costs
 *   read-back.ts   the result's records as the query engine reads them
 *
 * PII: payroll is a PII surface. Nothing here logs; problem details name records by number and
 * status only (never employee names, pay rates or amounts), because problems reach the logs.
 */


export const payrollPostWrite: WriteDefinition<PayrollPostInput, LedgerRecordNumbers, PayrollPostResult> = {
  route: '/payroll-records/post',
  what: 'posting a payroll batch',
  prepare: preparePayrollPost,

  allocate: allocateLedgerRecord,

  async post(ctx, input, numbers): Promise<PostOutcome<PayrollPostResult>> {
    const { trx } = ctx;
    const batch = await selectRecords(ctx, input);
    checkStatuses(batch);
    const checkDate = batch[0]!.checkDate;

    // The period derives from the records' check date; a refusal names the request field that
    // chose the records, since checkDate is no field of the request.
    const selector = input.periodEndDate !== undefined ? 'periodEndDate' : 'recordNumbers';
    const periodRequest = { date: checkDate, dateField: selector, dateLabel: "the records' checkDate", period: input.period ?? null, year: input.year ?? null };
    const { setup: ledgerSetup, fiscal } = await loadPostingSetup(trx, periodRequest, ctx.references);
    const { period, year } = await resolvePostingPeriod(trx, ledgerSetup, periodRequest, fiscal);

    // Claim the batch first: a concurrent posting of the same records waits on these rows and
    // then finds them Posted (409), so a batch never posts twice.
    const claimed = await claim(ctx, batch, numbers.ledgerRecord, period, year);
    if (claimed !== batch.length) {
      const again = await selectRecords(ctx, input);
      checkStatuses(again);
      throw new ApiProblem('DOCUMENT_ALREADY_POSTED', 'The payroll batch was posted by a concurrent request. Nothing was posted.');
    }

    const setup = await loadSetup(ctx, batch, checkDate);
    const lines = await readLines(ctx, batch);
    const refusals = new Refusals();
    const ledger = ledgerAccountsOf(ledgerSetup);
    const postings = batch.map((r) => computeRecord(r, lines.get(r.id) ?? [], setup, ledger, refusals));
    const cashAccount = await cashAccountOf(ctx, input, setup);
    const checked = postings.map((p) => (p ? { record: p.record, lines: p.lines, accounts: accountsOf(p) } : null));
    await checkPostingReferences(ctx, [...lines.values()].flat(), checked, setup, refusals);
    refusals.throwIfAny();

    const posted = await postBatch(ctx, batch, postings as RecordPosting[], { checkDate, cashAccount, ledgerRecord: numbers.ledgerRecord, period, year });
    const document: PostedPayrollBatch = {
      periodEndDate: input.periodEndDate ?? null,
      checkDate,
      recordCount: batch.length,
      grossPay: decToJson(posted.grossTotal),
      deductions: decToJson(posted.deductionTotal),
      netPay: decToJson(posted.netTotal),
      employerBurden: decToJson(posted.burdenTotal),
      records: await readPayrollRecords(trx, batch.map((r) => r.id)),
      equipmentCosts: posted.equipmentCosts,
    };
    return { result: { document, ledgerTransaction: posted.ledgerTransaction, jobCosts: posted.jobCosts, inventory: [], period, year } };
  },
};
