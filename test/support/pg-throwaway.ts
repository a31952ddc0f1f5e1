/**
 * A test file's throwaway PostgreSQL database, without the waits that test nothing.
 *
 * It is dropped from a detached process, so that the file does not wait for it. On PostgreSQL 15
 * every DROP DATABASE requests an immediate checkpoint and waits for it: 0.25 to 7.9 s per
 * database on a busy server, paid at the end of every test file of the PostgreSQL suite (and the
 * test process cannot exit while its own drop is pending).
 *
 * The dropper is a plain `node -e` with the pg driver (no TypeScript to load), ends by itself
 * (statement and connection timeouts), and uses `with (force)`, so a connection the file left
 * open does not keep the database.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import knexFactory from 'knex';

const ROOT = path.resolve(__dirname, '..', '..');
const TIMEOUT_MS = 120_000;

const DROPPER = `
const { Client } = require('pg');
const client = new Client({ connectionString: process.env.AIS_DROP_URL, statement_timeout: ${TIMEOUT_MS}, connectionTimeoutMillis: 30000 });
const name = process.env.AIS_DROP_NAME.replace(/"/g, '""');
setTimeout(() => process.exit(1), ${TIMEOUT_MS + 30_000}).unref();
client.connect()
  .then(() => client.query('drop database if exists "' + name + '" with (force)'))
  .catch(() => { process.exitCode = 1; })
  .finally(() => client.end());
`;

/** Starts dropping `name` (through `adminUrl`) in the background and returns at once. */
export function dropDatabaseLater(adminUrl: string, name: string): void {
  const child = spawn(process.execPath, ['-e', DROPPER], {
    cwd: ROOT,
    detached: true,
    stdio: 'ignore',
    env: { PATH: process.env.PATH ?? '', AIS_DROP_URL: adminUrl, AIS_DROP_NAME: name },
  });
  child.unref();
}

/**
 * A throwaway database's commits return without waiting for the WAL flush (synchronous_commit
 * off, for the sessions of that database only): what a commit makes visible, and when, is the
 * same; only a crash of the PostgreSQL server itself, which no test causes, could lose the last
 * commits. The PostgreSQL suite's write-heavy files ran 10 to 20 % faster.
 */
export const NO_FLUSH_WAIT = (database: string) => `alter database "${database}" set synchronous_commit = off`;

/** `url` (a PostgreSQL server's URL) with its database replaced by `name`. */
export function databaseUrl(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

/**
 * A new database on the server of `adminUrl`, named `<prefix>_<pid>_<random>`: empty, or a copy of
 * `template`; its commits do not wait for the flush (NO_FLUSH_WAIT). `drop` starts dropping it in
 * the background (dropDatabaseLater) and returns at once.
 */
export async function createThrowawayDatabase(adminUrl: string, prefix: string, template?: string): Promise<{ name: string; url: string; drop(): void }> {
  const name = `${prefix}_${process.pid}_${randomBytes(4).toString('hex')}`;
  const admin = knexFactory({ client: 'pg', connection: adminUrl, pool: { min: 0, max: 1 } });
  try {
    await admin.raw(template ? `create database "${name}" template "${template}"` : `create database "${name}"`);
    await admin.raw(NO_FLUSH_WAIT(name));
  } finally {
    await admin.destroy();
  }
  return { name, url: databaseUrl(adminUrl, name), drop: () => dropDatabaseLater(adminUrl, name) };
}

/** A throwaway database's name as createThrowawayDatabase makes it: `<prefix>_<pid>_<8 hex digits>`. */
const THROWAWAY_NAME = /^ais_[a-z]+_(\d+)_[0-9a-f]{8}$/;

/**
 * Drops the throwaway databases left by test processes of this machine that are gone (killed, or
 * their background drop failed): without this they piled up on a developer's server, one per
 * file of every interrupted run. Only a name whose process id is not a live process here, and only
 * a database nobody is connected to (no `force`: a run of another machine on the same server keeps
 * its databases). Returns how many were dropped.
 */
export async function dropLeftoverDatabases(adminUrl: string): Promise<number> {
  const admin = knexFactory({ client: 'pg', connection: adminUrl, pool: { min: 0, max: 1 } });
  let dropped = 0;
  try {
    const rows = (await admin.raw('select datname from pg_database where not datistemplate')).rows as Array<{ datname: string }>;
    for (const { datname } of rows) {
      const match = THROWAWAY_NAME.exec(datname);
      if (!match || processAlive(Number(match[1]))) continue;
      try {
        await admin.raw(`drop database if exists "${datname}"`);
        dropped += 1;
      } catch {
        // In use (another machine's run on this server): left alone.
      }
    }
  } finally {
    await admin.destroy();
  }
  return dropped;
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: alive, another user's.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
