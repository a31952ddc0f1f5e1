import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { queueLedgerBalances } from '../../../storage/balances';
import { Dec } from '../../../storage/decimal';
import type { NumberAllocator } from '../../../storage/numbers';
import { rowsPerInsert } from '../../../storage/parameter-budget';
import { SCALE, type PostingContext } from '../context';
import { DerivedLimits, decimalLimit } from '../limits';
import { childRow, childTableOf, insertChildrenReturning, insertRecordsReturning, readRecord, recordRow } from '../records';

/**
 * Writes a ledger transaction (lgrtrn + lgtnln) and the ledger balances it moves (lgrbal), for
 * every engine that posts to the ledger (journals, AP invoices, and the writes that follow).
 * The journal is asserted to balance before anything is written: a cascade that builds an
 * unbalanced journal is a bug, never a posting.
 */

export interface JournalLine {
  lineNumber: number;
  ledgerAccount: number;
  description: string;
  debit: Dec;
  credit: Dec;
  jobNumber?: number | null;
  equipmentNumber?: number | null;
  departmentNumber?: number | null;
  /**
   * The request field the line was sent as (`lines[2]`, a journal's own lines): its
   * `.ledgerAccount` is named should the line's balance be pushed past its column (422, decision 0441).
   */
  field?: string;
}

export interface JournalToWrite {
  recordNumber: number;
  transactionNumber: string;
  transactionDate: string;
  enteredDate: string | null;
  description: string;
  sourceNumber: number;
  period: number;
  year: number;
  lines: JournalLine[];
  /**
   * The request field named when an amount or total of the journal exceeds its column (400
   * VALUE_OUT_OF_RANGE, limits.ts); default `lines`. Writes check what they derive before this,
   * naming their own fields: this is the net under every journal, before any of its SQL.
   */
  blame?: string;
}

/** Published shape of a posted ledger transaction (the read model's names). */
export interface PostedLedgerTransaction {
  id: string;
  recordNumber: number;
  transactionNumber: string;
  transactionDate: string;
  enteredDate: string | null;
  enteredBy: string | null;
  description: string;
  sourceNumber: number;
  status: number;
  period: number;
  year: number;
  debitTotal: number;
  creditTotal: number;
  reversalOf: number | null;
  lines: Array<{
    id: string;
    lineNumber: number;
    ledgerAccount: number;
    description: string;
    debitAmount: number;
    creditAmount: number;
    jobNumber: number | null;
    equipmentNumber: number | null;
    departmentNumber: number | null;
  }>;
}

export class JournalAssertionError extends Error {
  constructor(message: string) {
    super(`journal assertion failed: ${message}`);
    this.name = 'JournalAssertionError';
  }
}

export function journalTotals(lines: ReadonlyArray<Pick<JournalLine, 'debit' | 'credit'>>): { debit: Dec; credit: Dec } {
  let debit = new Dec(0);
  let credit = new Dec(0);
  for (const line of lines) {
    debit = debit.plus(line.debit);
    credit = credit.plus(line.credit);
  }
  return { debit, credit };
}

/** The invariant, checked right before writing. */
export function assertBalanced(journal: JournalToWrite): { debit: Dec; credit: Dec } {
  if (journal.lines.length === 0) throw new JournalAssertionError('no lines');
  for (const line of journal.lines) {
    const d = line.debit;
    const c = line.credit;
    if (d.isNegative() || c.isNegative()) throw new JournalAssertionError(`line ${line.lineNumber} has a negative amount`);
    if (d.isZero() === c.isZero()) throw new JournalAssertionError(`line ${line.lineNumber} must carry a debit or a credit`);
    if (d.decimalPlaces() > SCALE.money || c.decimalPlaces() > SCALE.money) throw new JournalAssertionError(`line ${line.lineNumber} has more than 2 decimals`);
  }
  const totals = journalTotals(journal.lines);
  if (!totals.debit.equals(totals.credit)) {
    throw new JournalAssertionError(`debits ${totals.debit.toFixed(2)} != credits ${totals.credit.toFixed(2)}`);
  }
  return totals;
}

/** The numbers of a write whose only pre-allocated number is its journal's record number. */
export interface LedgerRecordNumbers {
  ledgerRecord: number;
}

/**
 * `allocate` of such a write (journals, payroll batches, service work orders): one ledger
 * transaction number; what depends on the stored document is numbered inside the transaction.
 */
export async function allocateLedgerRecord(_input: unknown, numbers: NumberAllocator): Promise<LedgerRecordNumbers> {
  const range = await numbers.allocate('lgrtrn', 1);
  return { ledgerRecord: range.first };
}

/** Every amount and total of the journal within its column (400 VALUE_OUT_OF_RANGE naming `journal.blame`). */
function checkJournalLimits(journal: JournalToWrite, totals: { debit: Dec; credit: Dec }): void {
  const blame = journal.blame ?? 'lines';
  const limits = new DerivedLimits();
  for (const line of journal.lines) {
    limits.decimal(blame, `the debit of journal line ${line.lineNumber} (account ${line.ledgerAccount})`, line.debit, 'ledger-transactions.lines', 'debitAmount');
    limits.decimal(blame, `the credit of journal line ${line.lineNumber} (account ${line.ledgerAccount})`, line.credit, 'ledger-transactions.lines', 'creditAmount');
  }
  limits.decimal(blame, 'the debit total of the journal', totals.debit, 'ledger-transactions', 'debitTotal');
  limits.decimal(blame, 'the credit total of the journal', totals.credit, 'ledger-transactions', 'creditTotal');
  limits.throwIfAny();
}

export async function writeJournal(ctx: PostingContext, journal: JournalToWrite): Promise<PostedLedgerTransaction> {
  const totals = assertBalanced(journal);
  checkJournalLimits(journal, totals);
  const id = randomUUID();
  // Written and read back in the same statements (records/insert.ts insertRecordsReturning: the
  // stored row, decoded through the catalog exactly as readPostedLedgerTransaction would read it).
  // Header, lines and balances are queued, then sent (after whatever the cascade queued before)
  // when the header is awaited below; on PostgreSQL the balance upsert rides in the lines' insert
  // (statement-batch.ts).
  const header = insertRecordsReturning(ctx.writes, 'ledger-transactions', [
    recordRow(ctx, 'ledger-transactions', {
      id,
      recordNumber: journal.recordNumber,
      transactionNumber: journal.transactionNumber,
      transactionDate: journal.transactionDate,
      description: journal.description,
      sourceNumber: journal.sourceNumber,
      status: 1,
      debitTotal: totals.debit,
      creditTotal: totals.credit,
      enteredDate: journal.enteredDate,
      enteredBy: ctx.user,
      period: journal.period,
      year: journal.year,
    }),
  ]);
  const lineTable = childTableOf('ledger-transactions', 'lines');
  const lineRows = journal.lines.map((line) =>
    childRow(
      ctx,
      'ledger-transactions',
      'lines',
      {
        id: randomUUID(),
        lineNumber: line.lineNumber,
        ledgerAccount: line.ledgerAccount,
        description: line.description,
        debitAmount: line.debit,
        creditAmount: line.credit,
        jobNumber: line.jobNumber ?? null,
        equipmentNumber: line.equipmentNumber ?? null,
        departmentNumber: line.departmentNumber ?? null,
      },
      { [lineTable.parentColumn]: id },
    ),
  );
  const lines = insertChildrenReturning(ctx.writes, 'ledger-transactions', 'lines', lineRows);
  await applyToBalances(ctx, journal);
  const [stored] = await header;

  // The balance upsert touches lgrbal only: the journal's rows are still as returned.
  return { ...stored!, lines: await lines } as unknown as PostedLedgerTransaction;
}

/** A posted ledger transaction with its lines, read back through the catalog (engines/query/read-records.ts). */
export async function readPostedLedgerTransaction(trx: PostingContext['trx'] | Knex, id: string): Promise<PostedLedgerTransaction> {
  const record = await readRecord(trx, 'ledger-transactions', id, { children: ['lines'] });
  if (!record) throw new JournalAssertionError(`ledger transaction ${id} not found right after writing it`);
  return record as unknown as PostedLedgerTransaction;
}

/** Queues the journal's additions to lgrbal (one upsert, correct under concurrency: see storage/balances.ts). */
async function applyToBalances(ctx: PostingContext, journal: JournalToWrite): Promise<void> {
  await queueLedgerBalances(
    ctx.writes,
    journal.lines.map((line) => ({ account: line.ledgerAccount, year: journal.year, period: journal.period, debit: line.debit, credit: line.credit, ...(line.field !== undefined ? { field: `${line.field}.ledgerAccount` } : {}) })),
    // A total the journal would push past its column is refused in the upsert (decision 0441).
    { dialect: ctx.dialect, numbers: ctx.numbers, user: ctx.user, now: ctx.now, bounds: { debit: decimalLimit('ledger-balances', 'debitTotal'), credit: decimalLimit('ledger-balances', 'creditTotal') } },
  );
}
