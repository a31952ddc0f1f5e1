import { resendConflict } from '../../resend';
import { allocateLedgerRecord, type LedgerRecordNumbers } from '../../ledger/journal';
import { loadPostingSetup, resolvePostingPeriod } from '../../ledger/period';
import { recordLockName, records, type RecordsContext } from '../../records';
import type { PostOutcome, WriteDefinition } from '../../runner';
import { postJournal } from './cascade';
import { checkJournalLines, prepareJournal, type JournalInput } from './input';
import { differences, existingJournal, result, type JournalWriteResult } from './read-back';
import { checkReferences } from './references';

/**
 * POST /ledger-transactions: posts a journal (spec, Journal input).
 *
 * Order of the checks, all inside the engine (their 4xx are stored under an Idempotency-Key)
 * except the first:
 *   400  (before dispatch) more than 2 decimals, repeated line numbers; VALUE_OUT_OF_RANGE
 *        totals of the lines beyond what the header stores (limits.ts)
 *   422  JOURNAL_LINE_INVALID  a line with both a debit and a credit, or neither
 *   422  JOURNAL_UNBALANCED    debits != credits
 *   200 / 409                  transactionNumber already posted: identical -> the existing posting
 *                              (Idempotency-Status replayed, nothing written); different -> 409
 *   404  REFERENCE_NOT_FOUND   source or ledger account missing; 422 when inactive
 *   422  PERIOD_INVALID / PERIOD_CLOSED
 *
 *   input.ts       the body (400 before dispatch); the line rules and the balance (422)
 *   references.ts  source and ledger accounts
 *   cascade.ts     the journal
 *   read-back.ts   the posted journal as the query engine reads it; a re-sent journal compared
 */

/** Ledger transaction status 2: void (a void transaction's number may be posted again). */
const STATUS_VOID = 2;

/** The name `post` locks first (taken by the transaction's BEGIN where it can: runner.ts firstLock). */
const lockOf = (input: JournalInput): string => recordLockName('ledger-transactions', [input.transactionNumber], 'transactionNumber');

/** The journals posted under the input's number (a void one excepted): read right after the lock (runner.ts firstRead). */
const postedUnderNumber = (ctx: RecordsContext, input: JournalInput) =>
  records(ctx, 'ledger-transactions').where({ transactionNumber: input.transactionNumber }).whereNot({ status: STATUS_VOID }).orderBy('recordNumber');

export const ledgerTransactionsWrite: WriteDefinition<JournalInput, LedgerRecordNumbers, JournalWriteResult> = {
  route: '/ledger-transactions',
  what: 'posting a journal',
  prepare: prepareJournal,
  firstLock: lockOf,
  firstRead: (ctx, input) => postedUnderNumber(ctx, input).firstStatement(['id']),

  allocate: allocateLedgerRecord,

  async post(ctx, input, numbers): Promise<PostOutcome<JournalWriteResult>> {
    checkJournalLines(input);
    const { trx } = ctx;

    // A transaction number is posted once: serialise postings of the same number, then look.
    await ctx.lockName(lockOf(input));
    const already = await postedUnderNumber(ctx, input).first(['id']);
    if (already) {
      const existing = await existingJournal(trx, already.id);
      const diff = differences(existing, input);
      if (diff.length === 0) return { result: result(existing), duplicate: true };
      throw resendConflict(
        {
          code: 'TRANSACTION_NUMBER_CONFLICT',
          numberField: 'transactionNumber',
          numberCode: 'already_posted',
          detail: `Transaction number ${input.transactionNumber} was already posted (ledger transaction ${existing.recordNumber}, period ${existing.period} of ${existing.year})`,
          existingRecordNumber: existing.recordNumber,
        },
        diff,
      );
    }

    await checkReferences(ctx, input);
    const periodRequest = { date: input.transactionDate, dateField: 'transactionDate', period: input.period ?? null, year: input.year ?? null };
    const { setup, fiscal } = await loadPostingSetup(trx, periodRequest, ctx.references);
    const { period, year } = await resolvePostingPeriod(trx, setup, periodRequest, fiscal);
    const posted = await postJournal(ctx, input, { recordNumber: numbers.ledgerRecord, period, year });
    return { result: result(posted) };
  },
};
