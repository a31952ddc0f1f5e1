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
import path from 'node:path';

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
