import type { Knex } from 'knex';
import { CATALOG } from '../../generated/catalog';
import type { Engine } from './database';

/**
 * What a start (src/boot.ts) and readiness (/readyz) ask of the database before it serves: is it
 * reachable, are this build's migrations applied, does it hold a company yet. The one home of
 * these questions; the migrations and the demo seed themselves are loaded only when they have
 * something to do (start-up time and resident memory: test/architecture/startup-imports.test.ts).
 */

/**
 * Of `names` (this build's migrations, db/migration-names.ts: handed in by boot.ts and services.ts),
 * those the database has not applied, in order; null when it was never migrated (no migration table).
 */
export async function pendingMigrations(knex: Knex, names: readonly string[]): Promise<string[] | null> {
  if (!(await knex.schema.hasTable('knex_migrations'))) return null;
  const applied = new Set((await knex('knex_migrations').select('name')).map((r: { name: string }) => r.name));
  return names.filter((name) => !applied.has(name));
}

/**
 * True when the database holds no company yet (no ledger account): the demo company is seeded
 * only then (db/seed/index.ts), and a start asks this without loading the seed.
 */
export async function hasNoCompany(knex: Knex): Promise<boolean> {
  const accounts = CATALOG['ledger-accounts']?.table ?? 'lgract';
  const row = await knex(accounts).select(knex.raw('1 as one')).first();
  return row === undefined;
}

/**
 * SQL Server: the database's snapshot isolation state (sys.databases; 0 OFF, 1 ON, 2 and 3 in
 * transition). Reads run in SNAPSHOT isolation (query-dialect-mssql.ts readSnapshot, decision
 * 0015), which SQL Server refuses (error 3952) unless ALLOW_SNAPSHOT_ISOLATION is ON.
 */
export const MSSQL_SNAPSHOT_STATE_SQL = 'select [name], [snapshot_isolation_state] as [state] from sys.databases where [database_id] = DB_ID()';
const SNAPSHOT_ON = 1;

/** The readiness questions through the service's pool (src/services.ts; /readyz asks them). */
export class DatabaseState {
  constructor(
    private readonly knex: Knex,
    private readonly migrationNames: readonly string[],
    private readonly engine?: Engine,
  ) {}

  /**
   * A database setting the service needs and the database lacks, as a sentence naming it (readiness
   * answers 503 with it); undefined when none. SQL Server: ALLOW_SNAPSHOT_ISOLATION (docs/sql-server.md).
   */
  async settingsProblem(): Promise<string | undefined> {
    if (this.engine !== 'mssql') return undefined;
    const rows = (await this.knex.raw(MSSQL_SNAPSHOT_STATE_SQL)) as Array<{ name?: unknown; state?: unknown }>;
    const row = rows[0];
    if (row && Number(row.state) === SNAPSHOT_ON) return undefined;
    const name = typeof row?.name === 'string' ? row.name : 'the database';
    return `SQL Server: ALLOW_SNAPSHOT_ISOLATION is not ON for ${name} (reads run in SNAPSHOT isolation): ALTER DATABASE [${name}] SET ALLOW_SNAPSHOT_ISOLATION ON (docs/sql-server.md).`;
  }

  /** One round trip; rejects when the database cannot be reached. */
  async reachable(): Promise<void> {
    await this.knex.raw('select 1 as ok');
  }

  pendingMigrations(): Promise<string[] | null> {
    return pendingMigrations(this.knex, this.migrationNames);
  }
}
