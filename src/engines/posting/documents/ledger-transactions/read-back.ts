import type { Knex } from 'knex';
import { Dec } from '../../../../storage/decimal';
import { readPostedLedgerTransaction, type PostedLedgerTransaction } from '../../ledger/journal';
import { lineDifferences, periodDiffers } from '../../resend';
import type { JournalInput } from './input';

/**
 * POST /ledger-transactions, the read-back: the journal as the query engine reads it (through the
 * catalog), and the comparison of a re-sent journal with the one already posted.
 */

export interface JournalWriteResult {
  document: PostedLedgerTransaction;
  ledgerTransaction: PostedLedgerTransaction;
  jobCosts: never[];
  inventory: never[];
  period: number;
  year: number;
}

/** What differs between a posted journal and the request (empty when identical). */
export function differences(existing: PostedLedgerTransaction, input: JournalInput): string[] {
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

export function result(posted: PostedLedgerTransaction): JournalWriteResult {
  return { document: posted, ledgerTransaction: posted, jobCosts: [], inventory: [], period: posted.period, year: posted.year };
}

/** The journal `id` already posted, as its write result (a replayed duplicate). */
export async function existingJournal(trx: Knex.Transaction, id: string): Promise<PostedLedgerTransaction> {
  return readPostedLedgerTransaction(trx, id);
}
