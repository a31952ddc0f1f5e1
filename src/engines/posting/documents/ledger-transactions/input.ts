import type { components } from '../../../../../generated/api-types';
import { ApiProblem, type FieldError } from '../../../../errors/problem';
import { Dec, decToJson } from '../../../../storage/decimal';
import { SCALE } from '../../context';
import { InputErrors, exactDecimal, uniqueLineNumbers, zero } from '../../input';
import { journalTotals } from '../../ledger/journal';
import { DerivedLimits } from '../../limits';

/**
 * POST /ledger-transactions, the input: the body (typed from the contract: generated/api-types.ts)
 * parsed into exact decimals (400 before dispatch), and the 422s decided from the body alone
 * (inside the engine: stored under an Idempotency-Key).
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
  checkJournalTotalLimits(lines);
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

/**
 * The journal's totals, stored in the header (ledger-transactions debitTotal / creditTotal), from
 * lines each within its own bound: their sum may not be (400 VALUE_OUT_OF_RANGE naming `lines`,
 * before dispatch: limits.ts).
 */
function checkJournalTotalLimits(lines: readonly JournalLineInput[]): void {
  const totals = journalTotals(lines);
  const limits = new DerivedLimits();
  limits.decimal('lines', 'the debit total of the lines', totals.debit, 'ledger-transactions', 'debitTotal');
  limits.decimal('lines', 'the credit total of the lines', totals.credit, 'ledger-transactions', 'creditTotal');
  limits.throwIfAny();
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

