import type { Knex } from 'knex';
import { ApiProblem } from '../../../errors/problem';
import type { Boundary } from '../../../storage/boundary';
import type { Dialect } from '../../../storage/dialect';
import { refusedForStoredBalance, unstorableBalanceCells, type UnstorableBalance } from '../../../storage/balances';
import { storedValueUnreadable } from '../../query/envelope';
import { fieldOf, shapeOf } from '../records/shapes';

/**
 * A posting whose ledger balance upsert was refused because a total it adds to holds a value that
 * is no decimal as the engine stores one (storage/balances.ts addedUnlessNotStored: text or a
 * fraction on SQLite, NaN or an infinity on PostgreSQL, written by another program): 502
 * STORED_VALUE_UNREADABLE naming the first such cell as a read of ledger-balances would
 * (docs/decisions/0370, 0390), instead of the DATABASE_REFUSED the NOT NULL refusal alone would
 * answer (a retry cannot help). `trx` is the posting's transaction, rolled back by now: its cells
 * are read again outside it, on this failure path only. undefined for any other failure, or when
 * no cell holds such a value any more (the refusal then keeps its own answer).
 */
export async function unreadableBalanceProblem(err: unknown, boundary: Boundary, dialect: Dialect, trx: Knex.Transaction | undefined): Promise<ApiProblem | undefined> {
  if (!trx || !refusedForStoredBalance(err, boundary.engine)) return undefined;
  let cells: UnstorableBalance[];
  try {
    cells = await boundary.read((db) => unstorableBalanceCells(db, dialect, trx), { what: 'reading the ledger balances a posting could not add to' });
  } catch {
    return undefined;
  }
  const first = cells[0];
  if (!first) return undefined;
  const shape = shapeOf('ledger-balances');
  const field = fieldOf(shape, shape.nameOfColumn.get(first.column)!);
  const unreadable = storedValueUnreadable({ entity: shape.entityName, keyColumn: shape.keyColumn }, field, first.raw, { [shape.keyColumn]: first.id });
  return new ApiProblem(
    'STORED_VALUE_UNREADABLE',
    `${unreadable.detail} The posting adds to this balance (ledger account ${first.account}, year ${first.year}, period ${first.period}): nothing was posted.`,
    { extensions: unreadable.extensions, cause: err },
  );
}
