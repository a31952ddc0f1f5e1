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
