/**
 * SQLite WAL checkpoints off the request path (src/storage/wal-checkpointer.ts): a cluster
 * worker's connection checkpoints only past the backstop, and the primary's checkpointer copies
 * the committed pages into the database file, without waiting for or blocking readers and
 * writers. Asserted through the files themselves: a copy of the database file ALONE (no -wal)
 * holds a committed row only once a checkpoint has copied it there. SQLite only.
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import pino from 'pino';
import type { Knex } from 'knex';
import { openDatabase, parseDatabaseUrl } from '../../src/storage/database';
import { WAL_BACKSTOP_PAGES, WalCheckpointer } from '../../src/storage/wal-checkpointer';

const quiet = pino({ level: 'silent' });
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function tempFile(): { file: string; dir: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ais-wal-'));
  return { dir, file: path.join(dir, 'books.sqlite') };
}

/** Rows of `t` in a copy of the database file without its -wal: what has been checkpointed. */
function rowsInDatabaseFile(file: string): number {
  const copy = `${file}.copy-${process.hrtime.bigint()}`;
  fs.copyFileSync(file, copy);
  const db = new Database(copy, { readonly: true });
  try {
    const exists = db.prepare("select count(*) as n from sqlite_master where name = 't'").get() as { n: number };
    return exists.n === 0 ? 0 : (db.prepare('select count(*) as n from t').get() as { n: number }).n;
  } finally {
    db.close();
    fs.rmSync(copy, { force: true });
  }
}

/** The test table, and the maintenance lock's table (the checkpointer reads it first). */
async function createTables(knex: Knex): Promise<void> {
  await knex.schema.createTable('t', (t) => {
    t.integer('id').primary();
    t.string('note');
  });
  await knex.schema.createTable('mntlck', (t) => {
    t.integer('id').primary();
    t.string('user_name');
  });
}

async function writeRows(knex: Knex, from: number, count: number): Promise<void> {
  for (let i = from; i < from + count; i += 1) await knex.transaction((trx) => trx('t').insert({ id: i, note: `row ${i}` }));
}

/** A cluster worker's connection on a new file with the tables, and a checkpointer on it; all removed after `fn`. */
async function withWorkerDatabase(fn: (db: { file: string; knex: Knex; checkpointer: WalCheckpointer }) => Promise<void>, everyMs?: number): Promise<void> {
  const { dir, file } = tempFile();
  const knex = openDatabase(parseDatabaseUrl(`sqlite://${file}`, undefined, { checkpointsElsewhere: true }));
  await createTables(knex);
  const checkpointer = new WalCheckpointer({ file, logger: quiet, ...(everyMs ? { everyMs } : {}) });
  try {
    await fn({ file, knex, checkpointer });
  } finally {
    checkpointer.stop();
    await knex.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function pragma(knex: Knex, name: string): Promise<unknown> {
  return Object.values(((await knex.raw(`pragma ${name}`)) as Array<Record<string, unknown>>)[0]!)[0];
}

test('a cluster worker’s connection checkpoints only past the backstop; a single process keeps SQLite’s 1,000 pages', async () => {
  const { dir, file } = tempFile();
  const worker = openDatabase(parseDatabaseUrl(`sqlite://${file}`, undefined, { checkpointsElsewhere: true }));
  const single = openDatabase(parseDatabaseUrl(`sqlite://${path.join(dir, 'other.sqlite')}`));
  try {
    assert.equal(await pragma(worker, 'wal_autocheckpoint'), WAL_BACKSTOP_PAGES);
    assert.equal(await pragma(single, 'wal_autocheckpoint'), 1000);
  } finally {
    await worker.destroy();
    await single.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('the checkpointer copies committed pages into the database file; until then they are only in the WAL', () =>
  withWorkerDatabase(async ({ file, knex, checkpointer }) => {
    // More than SQLite's default 1,000 pages, which would have checkpointed in one of these commits.
    await writeRows(knex, 1, 1200);
    assert.equal(rowsInDatabaseFile(file), 0, 'the worker’s commits did not checkpoint (below the backstop)');
    const result = checkpointer.checkpoint();
    assert.equal(result.busy, false);
    assert.ok(result.walFrames > 1000, `past SQLite's default threshold: ${result.walFrames} frames`);
    assert.equal(result.checkpointedFrames, result.walFrames, 'every frame copied');
    assert.equal(rowsInDatabaseFile(file), 1200);
    // The next writer starts the WAL over (nothing in it is needed any more): it does not grow for ever.
    await writeRows(knex, 1201, 1);
    const after = checkpointer.checkpoint();
    assert.ok(after.walFrames < result.walFrames, `the WAL restarted: ${after.walFrames} frames after ${result.walFrames}`);
    assert.equal(rowsInDatabaseFile(file), 1201);
  }));

test('PASSIVE: a reader holding an old snapshot neither waits for the checkpointer nor stops the writer; the rest is copied once it ends', () =>
  withWorkerDatabase(async ({ file, knex, checkpointer }) => {
    const reader = new Database(file);
    try {
      await writeRows(knex, 1, 10);
      reader.exec('BEGIN');
      assert.equal((reader.prepare('select count(*) as n from t').get() as { n: number }).n, 10, 'the reader’s snapshot');
      await writeRows(knex, 11, 50);
      const started = Date.now();
      const partial = checkpointer.checkpoint();
      assert.ok(Date.now() - started < 1000, 'the checkpoint did not wait for the reader');
      assert.ok(partial.checkpointedFrames < partial.walFrames, 'what the reader may still need stays in the WAL');
      await writeRows(knex, 61, 5);
      assert.equal((reader.prepare('select count(*) as n from t').get() as { n: number }).n, 10, 'the reader still sees its snapshot');
      reader.exec('COMMIT');
      const full = checkpointer.checkpoint();
      assert.equal(full.checkpointedFrames, full.walFrames);
      assert.equal(rowsInDatabaseFile(file), 65);
    } finally {
      if (reader.inTransaction) reader.exec('ROLLBACK');
      reader.close();
    }
  }));

test('started, it checkpoints on its own every few hundred milliseconds; stopped, it checkpoints no more', () =>
  withWorkerDatabase(async ({ file, knex, checkpointer }) => {
    checkpointer.start();
    await writeRows(knex, 1, 30);
    let rows = 0;
    for (let i = 0; i < 100 && rows < 30; i += 1) {
      await sleep(20);
      rows = rowsInDatabaseFile(file);
    }
    assert.equal(rows, 30);
    checkpointer.stop();
    await writeRows(knex, 31, 5);
    await sleep(150);
    assert.equal(rowsInDatabaseFile(file), 30, 'no checkpoint after stop');
  }, 20));

test('while the maintenance lock is recorded it leaves the file alone (the service holds no connection while locked)', () =>
  withWorkerDatabase(async ({ file, knex, checkpointer }) => {
    await writeRows(knex, 1, 20);
    await knex('mntlck').insert({ id: 1, user_name: 'maintenance' });
    assert.deepEqual(checkpointer.checkpoint(), { locked: true, busy: false, walFrames: 0, checkpointedFrames: 0 });
    assert.equal(rowsInDatabaseFile(file), 0, 'nothing copied while locked');
    await knex('mntlck').where({ id: 1 }).delete();
    assert.equal(checkpointer.checkpoint().locked, false);
    assert.equal(rowsInDatabaseFile(file), 20);
  }));

test('a checkpoint that keeps failing (the file away during a restore) is logged once, not five times a second, and its recovery once', async () => {
  const { dir, file } = tempFile();
  const lines: Array<Record<string, any>> = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
  const knex = openDatabase(parseDatabaseUrl(`sqlite://${file}`, undefined, { checkpointsElsewhere: true }));
  await createTables(knex);
  await knex.destroy();
  const checkpointer = new WalCheckpointer({ file, logger, everyMs: 10 });
  try {
    fs.renameSync(file, `${file}.away`);
    checkpointer.start();
    await sleep(150);
    const failed = lines.filter((l) => l.msg?.startsWith('WAL checkpoint failed') && !l.msg.endsWith('works again'));
    assert.equal(failed.length, 1, `logged once: ${failed.length}`);
    fs.renameSync(`${file}.away`, file);
    for (let i = 0; i < 50 && !lines.some((l) => l.msg?.endsWith('works again')); i += 1) await sleep(10);
    const back = lines.find((l) => l.msg?.startsWith('WAL checkpoint failed') && l.msg.endsWith('works again'));
    assert.ok(back && back.failures > 1, `recovery logged with the failures since: ${JSON.stringify(back)}`);
  } finally {
    checkpointer.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
