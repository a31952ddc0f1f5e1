import type { Knex } from 'knex';
import { ApiProblem } from '../../../errors/problem';
import type { Boundary } from '../../../storage/boundary';
import type { Dialect } from '../../../storage/dialect';
import { refusedChange, unstorableChangedCells, type UnstorableCell } from '../../../storage/computed-changes';
import { keyText, storedValueUnreadable, type RecordSubject } from '../../query/envelope';
import { fieldOf, shapeOf, type RecordShape } from './shapes';

/**
 * A posting whose computed change was refused by the database (storage/computed-changes.ts: the
 * change yields NULL into a NOT NULL column), named after the rollback: a ledger balance it adds
 * to (docs/decisions/0390), a purchase order's received total, a line's received to date, a
 * location's quantity on order (0391). Two reasons, told apart by reading the cells again:
 *
 * - the stored value holds no decimal as the engine stores one (text or a fraction on SQLite, NaN
 *   or an infinity on PostgreSQL, written by another program) or one beyond its column: 502
 *   STORED_VALUE_UNREADABLE naming the first such cell as a read of it would (0370);
 * - the value the change computes from a readable stored value would lie beyond its column (a
 *   balance pushed past decimal(14, 2)): 422 BUSINESS_RULE_VIOLATED naming the cell and the request
 *   field behind the change (0441). The request is sound; the books' state cannot take it.
 *
 * Either instead of the DATABASE_REFUSED the NOT NULL refusal alone would answer (a retry cannot
 * help). `trx` is the posting's transaction, rolled back by now: its cells are read again outside
 * it, on this failure path only. undefined for any other failure, or when no cell is so any more
 * (the refusal then keeps its own answer).
 */
export async function refusedChangeProblem(err: unknown, boundary: Boundary, dialect: Dialect, trx: Knex.Transaction | undefined): Promise<ApiProblem | undefined> {
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
  return first.why === 'beyond' ? exceededProblem(shape, first, err) : unreadableProblem(shape, first, err);
}

/** The published name of the cell's field (`lines.receivedToDate` for a child collection's) and its subject. */
function subjectOf(shape: RecordShape, cell: UnstorableCell): { subject: RecordSubject; name: string; fieldName: string } {
  const fieldName = shape.nameOfColumn.get(cell.column)!;
  const collection = shape.name.includes('.') ? shape.name.slice(shape.entityName.length + 1) : undefined;
  const subject: RecordSubject = {
    entity: shape.entityName,
    ...(collection !== undefined ? { collection } : {}),
    keyColumn: shape.keyColumn,
    ...(shape.parentColumn !== undefined ? { parentColumn: shape.parentColumn } : {}),
  };
  return { subject, name: collection !== undefined ? `${collection}.${fieldName}` : fieldName, fieldName };
}

/** A balance cell is known to people by its account and period (its key is the service's). */
function balanceOf(shape: RecordShape, cell: UnstorableCell): { ledgerAccount: number; year: number; period: number } {
  const of = (name: string) => Number(cell.row[fieldOf(shape, name).column]);
  return { ledgerAccount: of('ledgerAccount'), year: of('year'), period: of('period') };
}

function unreadableProblem(shape: RecordShape, cell: UnstorableCell, err: unknown): ApiProblem {
  const { subject, fieldName } = subjectOf(shape, cell);
  const unreadable = storedValueUnreadable(subject, fieldOf(shape, fieldName), cell.raw, cell.row);
  const balance = cell.set === 'ledger-balances' ? balanceOf(shape, cell) : undefined;
  const what = balance
    ? `The posting adds to this balance (ledger account ${balance.ledgerAccount}, year ${balance.year}, period ${balance.period})`
    : `The posting changes this value by what it posts`;
  return new ApiProblem('STORED_VALUE_UNREADABLE', `${unreadable.detail} ${what}: nothing was posted.`, { extensions: unreadable.extensions, cause: err });
}

/**
 * 422 BUSINESS_RULE_VIOLATED: the change would push the stored value past its column. A ledger
 * balance is named by `ledgerBalance { ledgerAccount, year, period, field }`, any other record by
 * `exceededValue { entity, field, recordId[, parentId] }` (the shape of `unreadableValue`);
 * errors[] names the request field behind the change when the posting knows one (code `range`).
 */
function exceededProblem(shape: RecordShape, cell: UnstorableCell, err: unknown): ApiProblem {
  const { subject, name } = subjectOf(shape, cell);
  const { stored, after, bound } = cell.beyond!;
  const errors = cell.field !== undefined ? [{ field: cell.field, code: 'range', message: `would push ${subject.entity} ${name} past ${bound.toFixed()}` }] : [];
  const amounts = `it holds ${stored.toFixed()}; the posting would make it ${after.toFixed()}, and the accounting database stores at most ${bound.toFixed()} there`;
  if (cell.set === 'ledger-balances') {
    const balance = balanceOf(shape, cell);
    return new ApiProblem(
      'BUSINESS_RULE_VIOLATED',
      `The ${name} of ledger account ${balance.ledgerAccount} in year ${balance.year}, period ${balance.period} cannot take this posting: ${amounts}. Nothing was posted.`,
      { errors, extensions: { ledgerBalance: { ...balance, field: name } }, cause: err },
    );
  }
  const recordId = keyText(cell.row[subject.keyColumn]);
  const parentId = subject.parentColumn !== undefined ? keyText(cell.row[subject.parentColumn]) : undefined;
  const record = `${subject.entity} ${subject.collection !== undefined ? `${subject.collection} line` : 'record'} ${recordId ?? '(key not read)'}${parentId !== undefined ? ` of ${parentId}` : ''}`;
  return new ApiProblem('BUSINESS_RULE_VIOLATED', `The ${name} of ${record} cannot take this posting: ${amounts}. Nothing was posted.`, {
    errors,
    extensions: { exceededValue: { entity: subject.entity, field: name, ...(recordId !== undefined ? { recordId } : {}), ...(parentId !== undefined ? { parentId } : {}) } },
    cause: err,
  });
}
