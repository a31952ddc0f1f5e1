/**
 * The data change counter's log (migration 20261125000001_data_change_counter): on PostgreSQL and
 * SQL Server every transaction that changes book data inserts its transaction id into `datlog`,
 * and the change token of a read is `datchg.n + count(datlog)`. This module keeps the log short:
 * every `foldMs` it moves the log into `datchg.n` in one transaction (delete the rows, add their
 * number), which leaves the token unchanged for every snapshot. Any process may fold; two folding
 * at once each move only the rows they deleted. SQLite counts in `datchg.n` directly: nothing to fold.
 */
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Engine } from './database';
import { PeriodicJob } from './periodic-job';

const COUNTER = 'datchg';
const LOG = 'datlog';

/** The token of a read snapshot: one statement, so both parts come from the same snapshot. */
export const DATA_TOKEN_SQL = `select (select n from ${COUNTER} where id = 0) + (select count(*) from ${LOG}) as n`;

/**
 * SQL Server's fold, one batch. XACT_ABORT ON makes any error roll the whole transaction back; it
 * is a SESSION setting, and the connection goes back to the pool: the batch sets it OFF again
 * (the default) on success, and the CATCH sets it OFF before re-throwing, so the next user of the
 * connection never runs with it. (SET inside a TRY is undone by nothing else: a batch's SET stays.)
 */
export const MSSQL_FOLD =
  `SET XACT_ABORT ON; BEGIN TRY BEGIN TRAN; DECLARE @k bigint; DELETE FROM [${LOG}] WITH (READPAST); SET @k = @@ROWCOUNT; ` +
  `IF @k > 0 UPDATE [${COUNTER}] SET [n] = [n] + @k WHERE [id] = 0; COMMIT TRAN; SET XACT_ABORT OFF; SELECT @k AS k; END TRY ` +
  `BEGIN CATCH IF @@TRANCOUNT > 0 ROLLBACK TRAN; SET XACT_ABORT OFF; THROW; END CATCH`;

/** Moves the committed log rows into the counter; returns how many. */
export async function foldDataChangeLog(knex: Knex, engine: Engine): Promise<number> {
  switch (engine) {
    case 'sqlite':
      return 0;
    case 'postgres': {
      // A data-modifying CTE runs to completion once; rows of transactions still in flight are
      // not visible to it and stay for the next fold.
      const result = (await knex.raw(
        `with moved as (delete from ${LOG} returning 1), n as (select count(*) as k from moved) ` +
          `update ${COUNTER} set n = n + (select k from n) where id = 0 and (select k from n) > 0 returning (select k from n) as k`,
      )) as { rows: Array<{ k: string | number }> };
      return Number(result.rows[0]?.k ?? 0);
    }
    case 'mssql': {
      // READPAST: rows of transactions still in flight are locked; skipped, left for the next fold.
      const rows = (await knex.raw(MSSQL_FOLD)) as Array<{ k: number }>;
      return Number(rows[0]?.k ?? 0);
    }
  }
}

export interface DataChangeLogOptions {
  knex: Knex;
  engine: Engine;
  logger: Logger;
  /** Interval of the folds. */
  foldMs: number;
  /** No fold while true (the maintenance lock has dropped the pool). */
  paused?: () => boolean;
}

export class DataChangeLog {
  private readonly folds: PeriodicJob<number>;

  constructor(private readonly options: DataChangeLogOptions) {
    this.folds = new PeriodicJob({
      everyMs: options.foldMs,
      logger: options.logger,
      failure: 'data change log not folded',
      fallback: 0,
      paused: options.paused,
      run: () => foldDataChangeLog(options.knex, options.engine),
    });
  }

  /** SQLite counts in place: no timer there. */
  start(): void {
    if (this.options.engine !== 'sqlite') this.folds.start();
  }

  stop(): void {
    this.folds.stop();
  }

  /** One fold now (joins one in progress, skipped while paused); failures only logged. */
  fold(): Promise<number> {
    return this.folds.runOnce();
  }
}
