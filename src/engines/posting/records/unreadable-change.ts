import type { Knex } from 'knex';
import { ApiProblem } from '../../../errors/problem';
import type { Boundary } from '../../../storage/boundary';
import type { Dialect } from '../../../storage/dialect';
import { refusedChange, unstorableChangedCells, type UnstorableCell } from '../../../storage/computed-changes';
import { storedValueUnreadable, type RecordSubject } from '../../query/envelope';
import { fieldOf, shapeOf } from './shapes';

/**
 * A posting whose computed change was refused because the stored value it changes holds no
 * decimal as the engine stores one (storage/computed-changes.ts: text or a fraction on SQLite, NaN
 * or an infinity on PostgreSQL, written by another program): a ledger balance it adds to
 * (docs/decisions/0390), a purchase order's received total, a line's received to date, a
 * location's quantity on order (0391). 502 STORED_VALUE_UNREADABLE naming the first such cell as
 * a read of it would (0370), instead of the DATABASE_REFUSED the NOT NULL refusal alone would
 * answer (a retry cannot help). `trx` is the posting's transaction, rolled back by now: its cells
 * are read again outside it, on this failure path only. undefined for any other failure, or when
 * no cell holds such a value any more (the refusal then keeps its own answer).
 */
export async function unreadableChangeProblem(err: unknown, boundary: Boundary, dialect: Dialect, trx: Knex.Transaction | undefined): Promise<ApiProblem | undefined> {
  const refused = trx ? refusedChange(err, boundary.engine, trx) : undefined;
  if (!refused) return undefined;
  let cells: UnstorableCell[];
  try {
    cells = await boundary.read((db) => unstorableChangedCells(refused, db, dialect), { what: 'reading the stored values a posting could not change' });
  } catch {
    return undefined;
  }
  const first = cells[0];
  if (!first) return undefined;
  const shape = shapeOf(first.set);
  const field = fieldOf(shape, shape.nameOfColumn.get(first.column)!);
  const collection = shape.name.includes('.') ? shape.name.slice(shape.entityName.length + 1) : undefined;
  const subject: RecordSubject = {
    entity: shape.entityName,
    ...(collection !== undefined ? { collection } : {}),
    keyColumn: shape.keyColumn,
    ...(shape.parentColumn !== undefined ? { parentColumn: shape.parentColumn } : {}),
  };
  const unreadable = storedValueUnreadable(subject, field, first.raw, first.row);
  // A balance cell is known to people by its account and period (its key is the service's).
  const of = (name: string) => String(first.row[fieldOf(shape, name).column]);
  const what =
    first.set === 'ledger-balances'
      ? `The posting adds to this balance (ledger account ${of('ledgerAccount')}, year ${of('year')}, period ${of('period')})`
      : `The posting changes this value by what it posts`;
  return new ApiProblem('STORED_VALUE_UNREADABLE', `${unreadable.detail} ${what}: nothing was posted.`, { extensions: unreadable.extensions, cause: err });
}
