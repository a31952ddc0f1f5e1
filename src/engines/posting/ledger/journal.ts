import { randomUUID } from 'node:crypto';
import { Dec, decToJson } from '../../../storage/decimal';
import { SCALE, type PostingContext } from '../context';

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

/** Inserts rows in chunks that stay under every engine's parameter limit (SQL Server: 2,100). */
export async function insertChunked(trx: PostingContext['trx'], table: string, rows: Array<Record<string, unknown>>): Promise<void> {
  if (rows.length === 0) return;
  const columns = Object.keys(rows[0]!).length;
  const size = Math.max(1, Math.floor(2000 / Math.max(columns, 1)));
  for (let i = 0; i < rows.length; i += size) await trx(table).insert(rows.slice(i, i + size));
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

export async function writeJournal(ctx: PostingContext, journal: JournalToWrite): Promise<PostedLedgerTransaction> {
  const totals = assertBalanced(journal);
  const { trx, dialect } = ctx;
  const money = (v: Dec) => dialect.encodeDecimal(v, SCALE.money);
  const id = randomUUID();
  await trx('lgrtrn').insert({
    _idnum: id,
    recnum: journal.recordNumber,
    trnnum: journal.transactionNumber,
    trndte: journal.transactionDate,
    dscrpt: journal.description,
    srcnum: journal.sourceNumber,
    status: 1,
    dbttot: money(totals.debit),
    crdtot: money(totals.credit),
    entdte: journal.enteredDate,
    usrnme: ctx.user,
    actprd: journal.period,
    postyr: journal.year,
    insusr: ctx.user,
    updusr: ctx.user,
  });
  const lineIds = journal.lines.map(() => randomUUID());
  const lineRows = journal.lines.map((line, i) => ({
    _idnum: lineIds[i],
    _idref: id,
    linnum: line.lineNumber,
    lgract: line.ledgerAccount,
    dscrpt: line.description,
    dbtamt: money(line.debit),
    crdamt: money(line.credit),
    jobnum: line.jobNumber ?? null,
    eqpnum: line.equipmentNumber ?? null,
    dptmnt: line.departmentNumber ?? null,
    insusr: ctx.user,
    updusr: ctx.user,
  }));
  await insertChunked(trx, 'lgtnln', lineRows);
  await applyToBalances(ctx, journal);

  return {
    id,
    recordNumber: journal.recordNumber,
    transactionNumber: journal.transactionNumber,
    transactionDate: journal.transactionDate,
    enteredDate: journal.enteredDate,
    enteredBy: ctx.user,
    description: journal.description,
    sourceNumber: journal.sourceNumber,
    status: 1,
    period: journal.period,
    year: journal.year,
    debitTotal: decToJson(totals.debit),
    creditTotal: decToJson(totals.credit),
    reversalOf: null,
    lines: journal.lines.map((line, i) => ({
      id: lineIds[i]!,
      lineNumber: line.lineNumber,
      ledgerAccount: line.ledgerAccount,
      description: line.description,
      debitAmount: decToJson(line.debit),
      creditAmount: decToJson(line.credit),
      jobNumber: line.jobNumber ?? null,
      equipmentNumber: line.equipmentNumber ?? null,
      departmentNumber: line.departmentNumber ?? null,
    })),
  };
}

/**
 * Adds the journal to lgrbal (debit and credit totals per account, year and period) with one
 * UPDATE for every account of the journal; rows that do not exist yet are created (record
 * numbers from the `lgrbal` counter, inside the transaction) and updated then.
 * Lock order, the same in every posting so that two postings never deadlock: the `lgrbal`
 * counter (only when rows are missing) before the balance rows.
 */
async function applyToBalances(ctx: PostingContext, journal: JournalToWrite): Promise<void> {
  const { trx, dialect } = ctx;
  const byAccount = new Map<number, { debit: Dec; credit: Dec }>();
  for (const line of journal.lines) {
    const sum = byAccount.get(line.ledgerAccount) ?? { debit: new Dec(0), credit: new Dec(0) };
    sum.debit = sum.debit.plus(line.debit);
    sum.credit = sum.credit.plus(line.credit);
    byAccount.set(line.ledgerAccount, sum);
  }
  const accounts = [...byAccount.keys()].sort((a, b) => a - b);
  const updated = await addToBalanceRows(ctx, journal, accounts, byAccount);
  if (updated === accounts.length) return;

  const existing = await trx('lgrbal').where({ postyr: journal.year, actprd: journal.period }).whereIn('lgract', accounts).select('lgract');
  const have = new Set(existing.map((r: any) => Number(r.lgract)));
  const missing = accounts.filter((a) => !have.has(a));
  const range = await ctx.numbers.allocateIn(trx, 'lgrbal', missing.length);
  const zero = dialect.encodeDecimal(new Dec(0), SCALE.money);
  const rows = missing.map((account, i) => ({
    _idnum: randomUUID(),
    recnum: range.first + i,
    lgract: account,
    postyr: journal.year,
    actprd: journal.period,
    dbttot: zero,
    crdtot: zero,
    insusr: ctx.user,
    updusr: ctx.user,
  }));
  if (ctx.engine === 'mssql') await trx('lgrbal').insert(rows);
  else await trx('lgrbal').insert(rows).onConflict(['lgract', 'postyr', 'actprd']).ignore();
  const again = await addToBalanceRows(ctx, journal, missing, byAccount);
  if (again !== missing.length) throw new JournalAssertionError(`ledger balance rows of ${journal.year}/${journal.period} missing for accounts ${missing.join(', ')}`);
}

/**
 * Adds the sums to the balance rows of the given accounts; returns how many rows were updated.
 * SQLite (one writer): one UPDATE with a CASE per column. PostgreSQL: the same UPDATE over the
 * rows locked first in account order (LockRows above the Sort), so that two postings touching
 * the same accounts take their row locks in the same order and never deadlock. SQL Server: one
 * UPDATE per account, in account order.
 */
async function addToBalanceRows(ctx: PostingContext, journal: JournalToWrite, accounts: number[], sums: Map<number, { debit: Dec; credit: Dec }>): Promise<number> {
  const { trx, dialect } = ctx;
  const enc = (v: Dec) => dialect.encodeDecimal(v, SCALE.money);
  if (ctx.engine === 'mssql') {
    let n = 0;
    for (const a of accounts) {
      const sum = sums.get(a)!;
      n += Number(
        await trx('lgrbal')
          .where({ lgract: a, postyr: journal.year, actprd: journal.period })
          .update({ dbttot: trx.raw('dbttot + ?', [enc(sum.debit)]), crdtot: trx.raw('crdtot + ?', [enc(sum.credit)]), upddte: ctx.now, updusr: ctx.user }),
      );
    }
    return n;
  }
  // Typed parameters: PostgreSQL would otherwise take the CASE type from ELSE 0 (integer).
  const param = ctx.engine === 'sqlite' ? '?' : 'CAST(? AS DECIMAL(14,2))';
  const caseOf = (pick: (s: { debit: Dec; credit: Dec }) => Dec) => {
    const bindings: Array<number | string> = [];
    const whens = accounts.map((a) => {
      bindings.push(a, enc(pick(sums.get(a)!)));
      return `WHEN ? THEN ${param}`;
    });
    return { sql: `CASE lgract ${whens.join(' ')} ELSE 0 END`, bindings };
  };
  const debit = caseOf((s) => s.debit);
  const credit = caseOf((s) => s.credit);
  const inList = accounts.map(() => '?').join(', ');
  if (ctx.engine === 'postgres') {
    const result = await trx.raw(
      `WITH locked AS (SELECT _idnum FROM lgrbal WHERE postyr = ? AND actprd = ? AND lgract IN (${inList}) ORDER BY lgract FOR UPDATE)
       UPDATE lgrbal SET dbttot = dbttot + ${debit.sql}, crdtot = crdtot + ${credit.sql}, upddte = ?, updusr = ?
       WHERE _idnum IN (SELECT _idnum FROM locked)`,
      [journal.year, journal.period, ...accounts, ...debit.bindings, ...credit.bindings, ctx.now, ctx.user],
    );
    return Number(result.rowCount ?? 0);
  }
  const n = await trx('lgrbal')
    .where({ postyr: journal.year, actprd: journal.period })
    .whereIn('lgract', accounts)
    .update({
      dbttot: trx.raw(`dbttot + ${debit.sql}`, debit.bindings),
      crdtot: trx.raw(`crdtot + ${credit.sql}`, credit.bindings),
      upddte: ctx.now,
      updusr: ctx.user,
    });
  return Number(n);
}
