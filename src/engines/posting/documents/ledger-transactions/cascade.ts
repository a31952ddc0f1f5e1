import type { PostingContext } from '../../context';
import { writeJournal, type PostedLedgerTransaction } from '../../ledger/journal';
import type { JournalInput } from './input';

/** POST /ledger-transactions, the cascade: the journal as sent (the ledger balances through it). */
export async function postJournal(ctx: PostingContext, input: JournalInput, at: { recordNumber: number; period: number; year: number }): Promise<PostedLedgerTransaction> {
  return writeJournal(ctx, {
    recordNumber: at.recordNumber,
    transactionNumber: input.transactionNumber,
    transactionDate: input.transactionDate,
    enteredDate: input.enteredDate ?? ctx.today,
    description: input.description,
    sourceNumber: input.sourceNumber,
    period: at.period,
    year: at.year,
    lines: input.lines.map((l) => ({
      lineNumber: l.lineNumber,
      ledgerAccount: l.ledgerAccount,
      description: l.description,
      debit: l.debit,
      credit: l.credit,
      field: `lines[${l.index}]`,
    })),
  });
}
