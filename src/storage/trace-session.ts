import type { Knex } from 'knex';
import type { Engine } from './database';

const TRACE_ID = /^[0-9a-f]{32}$/;

/**
 * The statement that labels a posting transaction's database session with the request's trace id,
 * so a database administrator sees which request ran a statement:
 *   PostgreSQL: application_name `ais trace=<trace id>` for this transaction only (set_config
 *               local: pg_stat_activity and log_line_prefix %a show it; pooled connections revert),
 *               sent with BEGIN by the connection itself (database.ts labelledBegin), so no statement here;
 *   SQL Server: CONTEXT_INFO = the 16 bytes of the trace id (sys.dm_exec_sessions.context_info),
 *               cleared (0x) for a posting without one;
 *   SQLite:     none (embedded: there is no other session to tell apart).
 */
export function traceSessionStatement(knex: Knex, engine: Engine, traceId: string | undefined): Knex.Raw | undefined {
  const traced = traceId !== undefined && TRACE_ID.test(traceId);
  // SQL Server: CONTEXT_INFO is the SESSION's, and the pooled connection keeps the previous
  // request's: a posting without a (valid) trace id clears it (0x: empty), so a database
  // administrator never sees another request's id on it. The id is checked hex above: a binary
  // literal, not a bound value (SET CONTEXT_INFO takes no parameter).
  if (engine === 'mssql') return knex.raw(traced ? `SET CONTEXT_INFO 0x${traceId}` : 'SET CONTEXT_INFO 0x');
  // PostgreSQL: the connection's BEGIN carries it in the same round trip (database.ts, labelledBegin),
  // for that transaction only (set_config local): nothing to clear.
  return undefined;
}
