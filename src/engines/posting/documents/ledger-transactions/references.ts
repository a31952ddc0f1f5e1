import type { PostingContext } from '../../context';
import { ReferenceCheck, loadReferenceRows } from '../../ledger/references';
import type { JournalInput } from './input';

/** POST /ledger-transactions, the references: the source and every line's ledger account (404 when missing, 422 when inactive). */
export async function checkReferences(ctx: PostingContext, input: JournalInput): Promise<void> {
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
}
