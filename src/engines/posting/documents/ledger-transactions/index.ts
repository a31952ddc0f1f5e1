import type { Knex } from 'knex';
import type { components } from '../../../../../generated/api-types';
import { ApiProblem, type FieldError } from '../../../../errors/problem';
import { Dec, decToJson } from '../../../../storage/decimal';
import { SCALE, type PostingContext } from '../../context';
import { InputErrors, exactDecimal, uniqueLineNumbers, zero } from '../../input';
import { allocateLedgerRecord, journalTotals, readPostedLedgerTransaction, writeJournal, type PostedLedgerTransaction, type LedgerRecordNumbers } from '../../ledger/journal';
import { lineDifferences, periodDiffers } from '../../resend';
import { loadPostingSetup, resolvePostingPeriod } from '../../ledger/period';
import { ReferenceCheck, loadReferenceRows } from '../../ledger/references';
import type { PostOutcome, WriteDefinition } from '../../runner';

/**
 * POST /ledger-transactions: posts a journal (spec, Journal input).
 *
 * Order of the checks, all inside the engine (their 4xx are stored under an Idempotency-Key)
 * except the first:
 *   400  (before dispatch) more than 2 decimals, repeated line numbers
 *   422  JOURNAL_LINE_INVALID  a line with both a debit and a credit, or neither
 *   422  JOURNAL_UNBALANCED    debits != credits
 *   200 / 409                  transactionNumber already posted: identical -> the existing posting
 *                              (Idempotency-Status replayed, nothing written); different -> 409
 *   404  REFERENCE_NOT_FOUND   source or ledger account missing; 422 when inactive
 *   422  PERIOD_INVALID / PERIOD_CLOSED
 */

/** The request body, typed from the contract (generated/api-types.ts). */
export type JournalBody = components['schemas']['JournalInput'];
export type JournalLineBody = components['schemas']['JournalLineInput'];

export interface JournalLineInput {
  index: number;
  lineNumber: number;
  ledgerAccount: number;
  description: string;
  debit: Dec;
  credit: Dec;
}

export interface JournalInput {
  transactionNumber: string;
  transactionDate: string;
  enteredDate: string | null;
  description: string;
  sourceNumber: number;
  period?: number;
  year?: number;
  lines: JournalLineInput[];
}

export interface JournalWriteResult {
  document: PostedLedgerTransaction;
  ledgerTransaction: PostedLedgerTransaction;
  jobCosts: never[];
  inventory: never[];
  period: number;
  year: number;
}

type Numbers = LedgerRecordNumbers;

export function prepareJournal(body: unknown): JournalInput {
  // The contract validator has checked the body against JournalInput before dispatch.
  const b = (body ?? {}) as JournalBody;
  const errors = new InputErrors();
  const rawLines: JournalLineBody[] = Array.isArray(b.lines) ? b.lines : [];
  const lines: JournalLineInput[] = rawLines.map((line, i) => ({
    index: i,
    lineNumber: Number(line.lineNumber),
    ledgerAccount: Number(line.ledgerAccount),
    description: typeof line.description === 'string' ? line.description : '',
    debit: exactDecimal(line.debitAmount, `lines[${i}].debitAmount`, SCALE.money, errors) ?? zero(),
    credit: exactDecimal(line.creditAmount, `lines[${i}].creditAmount`, SCALE.money, errors) ?? zero(),
  }));
  uniqueLineNumbers(lines, errors);
  errors.throwIfAny();
  return {
    transactionNumber: String(b.transactionNumber),
    transactionDate: String(b.transactionDate),
    enteredDate: typeof b.enteredDate === 'string' ? b.enteredDate : null,
    description: typeof b.description === 'string' ? b.description : '',
    sourceNumber: Number(b.sourceNumber),
    ...(b.period !== undefined ? { period: b.period } : {}),
    ...(b.year !== undefined ? { year: b.year } : {}),
    lines,
  };
}

/** 422s decided from the body alone, inside the engine. */
export function checkJournalLines(input: JournalInput): void {
  const invalid: FieldError[] = [];
  for (const line of input.lines) {
    const hasDebit = !line.debit.isZero();
    const hasCredit = !line.credit.isZero();
    if (hasDebit && hasCredit) {
      invalid.push({ field: `lines[${line.index}].creditAmount`, code: 'debit_and_credit', message: 'a line carries a debit or a credit, not both' });
    } else if (!hasDebit && !hasCredit) {
      invalid.push({ field: `lines[${line.index}].debitAmount`, code: 'no_amount', message: 'a line carries a debit or a credit; this one has neither' });
      invalid.push({ field: `lines[${line.index}].creditAmount`, code: 'no_amount', message: 'a line carries a debit or a credit; this one has neither' });
    }
  }
  if (invalid.length > 0) {
    const which = [...new Set(invalid.map((e) => e.field.replace(/\]\..*$/, ']')))].join(', ');
    throw new ApiProblem('JOURNAL_LINE_INVALID', `Each line carries either a debit or a credit: ${which} do not.`, { errors: invalid });
  }
  const totals = journalTotals(input.lines);
  if (!totals.debit.equals(totals.credit)) {
    throw new ApiProblem(
      'JOURNAL_UNBALANCED',
      `The journal does not balance: debits ${totals.debit.toFixed(2)}, credits ${totals.credit.toFixed(2)} (difference ${totals.debit.minus(totals.credit).toFixed(2)}).`,
      {
        errors: [{ field: 'lines', code: 'unbalanced' }],
        extensions: { debitTotal: decToJson(totals.debit), creditTotal: decToJson(totals.credit) },
      },
    );
  }
}

/** Reads a posted ledger transaction in the published shape (through the catalog: read-back.ts). */
export async function readLedgerTransaction(trx: Knex | Knex.Transaction, _dialect: PostingContext['dialect'], header: Record<string, any>): Promise<PostedLedgerTransaction> {
  return readPostedLedgerTransaction(trx, String(header._idnum));
}

/** What differs between a posted journal and the request (empty when identical). */
function differences(existing: PostedLedgerTransaction, input: JournalInput): string[] {
  const out: string[] = [];
  if (existing.sourceNumber !== input.sourceNumber) out.push('sourceNumber');
  if (existing.transactionDate !== input.transactionDate) out.push('transactionDate');
  if (periodDiffers(existing, input)) out.push('period');
  // In line-number order (the stored lines' order), as the conflict has always named them.
  const mine = [...input.lines].sort((a, b) => a.lineNumber - b.lineNumber);
  out.push(
    ...lineDifferences(
      existing.lines,
      mine,
      (other, line) =>
        other.ledgerAccount !== line.ledgerAccount || !new Dec(other.debitAmount).equals(line.debit) || !new Dec(other.creditAmount).equals(line.credit),
    ),
  );
  return out;
}

function result(posted: PostedLedgerTransaction): JournalWriteResult {
  return { document: posted, ledgerTransaction: posted, jobCosts: [], inventory: [], period: posted.period, year: posted.year };
}

export const ledgerTransactionsWrite: WriteDefinition<JournalInput, Numbers, JournalWriteResult> = {
  route: '/ledger-transactions',
  what: 'posting a journal',
  prepare: prepareJournal,

  allocate: allocateLedgerRecord,

  async post(ctx, input, numbers): Promise<PostOutcome<JournalWriteResult>> {
    checkJournalLines(input);
    const { trx } = ctx;

    // A transaction number is posted once: serialise postings of the same number, then look.
    await ctx.lockName(`lgrtrn.trnnum:${input.transactionNumber}`);
    const already = await trx('lgrtrn').where({ trnnum: input.transactionNumber }).whereNot({ status: 2 }).orderBy('recnum').first();
    if (already) {
      const existing = await readLedgerTransaction(trx, ctx.dialect, already);
      const diff = differences(existing, input);
      if (diff.length === 0) return { result: result(existing), duplicate: true };
      throw new ApiProblem(
        'TRANSACTION_NUMBER_CONFLICT',
        `Transaction number ${input.transactionNumber} was already posted (ledger transaction ${existing.recordNumber}, period ${existing.period} of ${existing.year}) with different content: ${diff.join(', ')}.`,
        {
          errors: [{ field: 'transactionNumber', code: 'already_posted' }, ...diff.map((field) => ({ field, code: 'differs' }))],
          extensions: { existingRecordNumber: existing.recordNumber },
        },
      );
    }

    const check = new ReferenceCheck();
    const sources = await loadReferenceRows(ctx, 'transaction-sources', [{ field: 'sourceNumber', value: input.sourceNumber }], ['inactive']);
    const source = sources.get(String(input.sourceNumber));
    if (!source) check.notFound('sourceNumber', `transaction source ${input.sourceNumber}`);
    else if (source.inactive) check.notPostable('sourceNumber', `transaction source ${input.sourceNumber} is inactive`, 'inactive');
    const accountRefs = input.lines.map((l) => ({ field: `lines[${l.index}].ledgerAccount`, value: l.ledgerAccount }));
    const accounts = await loadReferenceRows(ctx, 'ledger-accounts', accountRefs, ['inactive']);
    for (const ref of accountRefs) {
      const account = accounts.get(String(ref.value));
      if (!account) check.notFound(ref.field, `ledger account ${ref.value}`);
      else if (account.inactive) check.notPostable(ref.field, `ledger account ${ref.value} is inactive`, 'inactive');
    }
    check.throwIfAny();

    const periodRequest = { date: input.transactionDate, dateField: 'transactionDate', period: input.period ?? null, year: input.year ?? null };
    const { setup, fiscal } = await loadPostingSetup(trx, periodRequest, ctx.references);
    const { period, year } = await resolvePostingPeriod(trx, setup, periodRequest, fiscal);

    const posted = await writeJournal(ctx, {
      recordNumber: numbers.ledgerRecord,
      transactionNumber: input.transactionNumber,
      transactionDate: input.transactionDate,
      enteredDate: input.enteredDate ?? ctx.today,
      description: input.description,
      sourceNumber: input.sourceNumber,
      period,
      year,
      lines: input.lines.map((l) => ({
        lineNumber: l.lineNumber,
        ledgerAccount: l.ledgerAccount,
        description: l.description,
        debit: l.debit,
        credit: l.credit,
      })),
    });
    return { result: result(posted) };
  },
};
