import type { Knex } from 'knex';
import type { BeginStatement, Engine } from './database';
import { compiledOnce } from './compiled-statements';

/**
 * The fence between the maintenance lock and the writes, on the table `mntlck` (the lock row).
 *
 * Every posting transaction reads the lock row first, under a SHARED table lock held until it
 * commits (`readLockShared`); taking or releasing the lock holds an EXCLUSIVE table lock while it
 * writes the row (`lockTableExclusive`). So a lock is recorded only once every posting transaction
 * that began before it has committed or rolled back, and every posting transaction that begins
 * after it sees the row and rolls back (423): no write can commit after the lock was recorded, on
 * any process, whatever that process knows of the lock.
 *
 *   PostgreSQL   `FOR SHARE` takes ROW SHARE on the table (and no row lock while it is empty: no tuple
 *                is written by an unlocked posting); `LOCK TABLE ... IN EXCLUSIVE MODE` conflicts with
 *                ROW SHARE but not with plain reads (ACCESS SHARE: the lock re-reads are not blocked).
 *                Table locks queue in order, so postings that begin while the lock waits queue behind
 *                it instead of starving it.
 *   SQL Server   `WITH (TABLOCK, HOLDLOCK)`: a shared table lock to the end of the transaction;
 *                `WITH (TABLOCKX, HOLDLOCK)` an exclusive one. Incompatible requests queue in order.
 *   SQLite       one writer at a time: every write transaction (BEGIN IMMEDIATE) and the lock's own
 *                transaction exclude each other already; a plain read is enough.
 */

/**
 * A scalar subquery read in the same statement as the lock row (`sql`, e.g. the reference change
 * counter of storage/reference-cache.ts), its value handed to `take`: one statement a posting
 * instead of two. The statement is still the transaction's first, and takes the same shared lock.
 */
export interface FenceRider {
  sql: string;
  take(value: unknown): void;
}

/**
 * Inside a posting transaction: the lock row (undefined when unlocked), read under the shared lock;
 * a rider read with it. `atBegin`: the fence as the transaction's BEGIN already read it
 * (`fenceAtBegin`), where the engine could; otherwise the statement is sent here.
 */
export async function readLockShared(trx: Knex.Transaction, engine: Engine, rider?: FenceRider, atBegin?: BeginStatement): Promise<Record<string, unknown> | undefined> {
  // Compiled once (storage/compiled-statements.ts): the same text for every posting, the lock row's id bound.
  const rows = (atBegin?.rows ??
    (await (rider ? compiledOnce(lockSharedWith(trx, engine, rider.sql), fenceShape(rider.sql), [1]) : lockShared(trx, engine)))) as Array<Record<string, unknown>>;
  const row = rows[0];
  rider?.take(row?.rider);
  // Outer-joined (a rider): one row, its lock columns null while unlocked.
  return row && row.user_name !== null && row.user_name !== undefined ? { user_name: row.user_name, locked_at: row.locked_at } : undefined;
}

/** The fence's text per engine and rider, compiled once. */
const fenceTexts = new Map<string, { sql: string; bindings: readonly (string | number)[] }>();

/**
 * The fence (with `riderSql`, or without) as a statement for the BEGIN of a posting transaction
 * (storage/database.ts BeginStatement): the very statement readLockShared sends, read by BEGIN on
 * the engines that can (SQLite, PostgreSQL: one round trip a posting less there), its rows then
 * handed to readLockShared. A new object per transaction (it receives the rows).
 */
export function fenceAtBegin(db: Knex, engine: Engine, riderSql?: string): BeginStatement {
  const key = `${engine}\u0000${riderSql ?? ''}`;
  let text = fenceTexts.get(key);
  if (!text) {
    const compiled = (riderSql === undefined ? lockShared(db, engine) : lockSharedWith(db, engine, riderSql)).toSQL();
    fenceTexts.set(key, (text = { sql: compiled.sql, bindings: compiled.bindings as (string | number)[] }));
  }
  return { sql: text.sql, bindings: text.bindings };
}

const fenceShapes = new Map<string, string>();
/** The compiled-statement shape of the fence with a rider (one constant string per rider). */
function fenceShape(riderSql: string): string {
  let shape = fenceShapes.get(riderSql);
  if (!shape) fenceShapes.set(riderSql, (shape = `lock fence with ${riderSql}`));
  return shape;
}

/**
 * The statement of `readLockShared` with a rider: always one row, `rider` and the lock row's
 * columns (null when unlocked), the lock row read by `lockShared`'s very statement (its shared
 * lock included) as a derived table outer-joined to one row. Exported for the compile tests.
 */
export function lockSharedWith(db: Knex | Knex.Transaction, engine: Engine, riderSql: string): Knex.QueryBuilder {
  return db
    .select(db.raw(`${riderSql} as ??`, ['rider']), 'm.user_name', 'm.locked_at')
    .from(db.raw(engine === 'mssql' ? '(select 1 as ??) as ??' : '(select 1 as ??) ??', ['one', 'o']))
    .leftJoin(lockShared(db, engine).as('m'), db.raw('1 = 1'));
}

/** The statement of `readLockShared` (exported for the SQL Server compile test). */
export function lockShared(db: Knex | Knex.Transaction, engine: Engine): Knex.QueryBuilder {
  const query = db('mntlck').select('user_name', 'locked_at').where({ id: 1 });
  switch (engine) {
    case 'postgres':
      return query.forShare();
    case 'mssql':
      // knex's mssql forShare() is WITH (HOLDLOCK) (key-range locks); the table lock is what the lock's TABLOCKX waits for.
      return db.select('user_name', 'locked_at').from(db.raw('?? with (tablock, holdlock)', ['mntlck'])).where({ id: 1 });
    case 'sqlite':
      return query;
  }
}

/** Inside the transaction that takes or releases the lock: waits for every posting transaction holding the shared lock. */
export async function lockTableExclusive(trx: Knex.Transaction, engine: Engine, waitMs: number): Promise<void> {
  // The wait is bounded; a posting stuck past it makes the lock answer 502 busy (PostgreSQL 55P03,
  // SQL Server 1222) instead of hanging.
  if (engine === 'mssql') {
    await lockExclusiveWithin(trx, waitMs);
    return;
  }
  const statement = lockExclusive(trx, engine);
  if (!statement) return;
  if (engine === 'postgres') await trx.raw(`set local lock_timeout = ${Math.max(1, Math.round(waitMs))}`);
  await statement;
}

/**
 * SQL Server: `lockExclusive` under a lock wait of `waitMs` (LOCK_ACK_TIMEOUT_MS bounds it, as
 * PostgreSQL's `set local lock_timeout`). SET LOCK_TIMEOUT is the SESSION's, not the transaction's,
 * and the connection goes back to the pool: one batch sets it, takes the lock and sets it back to
 * -1 (wait for ever, the default) on success and in the CATCH before re-throwing (error 1222 on
 * timeout). Exported for the compile test.
 */
export function lockExclusiveWithin(db: Knex | Knex.Transaction, waitMs: number): Knex.Raw {
  const statement = String(lockExclusive(db, 'mssql'));
  return db.raw(
    `SET LOCK_TIMEOUT ${Math.max(1, Math.round(waitMs))}; BEGIN TRY ${statement}; END TRY ` +
      'BEGIN CATCH SET LOCK_TIMEOUT -1; THROW; END CATCH; SET LOCK_TIMEOUT -1;',
  );
}

/** The statement of `lockTableExclusive`, none on SQLite (exported for the SQL Server compile test). */
export function lockExclusive(db: Knex | Knex.Transaction, engine: Engine): Knex.QueryBuilder | Knex.Raw | undefined {
  switch (engine) {
    case 'postgres':
      return db.raw('lock table mntlck in exclusive mode');
    case 'mssql':
      return db.select(db.raw('count(*) as n')).from(db.raw('?? with (tablockx, holdlock)', ['mntlck']));
    case 'sqlite':
      return undefined;
  }
}
