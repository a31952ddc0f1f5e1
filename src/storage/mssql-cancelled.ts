import type { Knex } from 'knex';

/**
 * SQL Server: a connection whose statement tedious cancelled is not given back to the pool.
 *
 * Why: tedious cancels a statement past its `requestTimeout` with an attention signal, and SQL
 * Server stops the batch where it is: no CATCH block runs. A batch that sets session state and sets
 * it back at its end (the change-log fold's `SET XACT_ABORT ON … OFF`, the lock fence's
 * `SET LOCK_TIMEOUT n … -1`: decision 0420) then leaves the setting on the connection, and the next
 * request that borrows it would run under it: a lock wait cut after a second (a 502 busy under
 * ordinary load), or a whole transaction doomed by an error it meant to handle. Such a connection is
 * marked disposed (knex's own mark: its pool validates on acquire and release and destroys it), so
 * closing it rolls back whatever it held and resets the session; a new connection takes its place.
 */

/** tedious's codes for a statement it cancelled: past `requestTimeout`, or cancelled. */
const CANCELLED_CODES = new Set(['ETIMEOUT', 'ECANCEL']);

export function statementWasCancelled(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && CANCELLED_CODES.has(code);
}

/** Wraps the mssql client's statement call: a cancelled statement disposes of its connection. */
export function disposeCancelledConnections(knex: Knex): void {
  const client = knex.client as unknown as { _query(connection: unknown, obj: unknown): Promise<unknown> };
  const query = client._query.bind(client);
  client._query = async (connection, obj) => {
    try {
      return await query(connection, obj);
    } catch (err) {
      if (statementWasCancelled(err) && connection && typeof connection === 'object') (connection as { __knex__disposed?: unknown }).__knex__disposed = err;
      throw err;
    }
  };
}
