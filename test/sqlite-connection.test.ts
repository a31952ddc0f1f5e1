/**
 * What every SQLite connection of the service is set up with (src/storage/database.ts afterCreate):
 * WAL, foreign keys, a busy timeout, and a 4 MB page cache instead of better-sqlite3's 16 MB, which
 * a scan of a large table filled and held for the life of the process.
 */
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openDatabase, parseDatabaseUrl } from '../src/storage/database';

test('a SQLite connection: WAL, foreign keys on, busy timeout 5 s, page cache 4 MB', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ais-conn-'));
  const knex = openDatabase(parseDatabaseUrl(`sqlite://${path.join(dir, 'c.sqlite')}`));
  try {
    const pragma = async (name: string) => Object.values(((await knex.raw(`pragma ${name}`)) as Array<Record<string, unknown>>)[0]!)[0];
    assert.equal(await pragma('journal_mode'), 'wal');
    assert.equal(await pragma('foreign_keys'), 1);
    assert.equal(await pragma('busy_timeout'), 5000);
    assert.equal(await pragma('cache_size'), -4096, 'KiB (negative), not better-sqlite3’s -16000');
  } finally {
    await knex.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a snapshot read and knex share one prepared statement per SQL text: each still gets row objects', async () => {
  // The query engine reads rows as arrays (dialect.ts) from the same statement object knex runs
  // (database.ts reuses one per SQL text); array mode must not leak into knex's results.
  const { queryDialectFor } = await import('../src/storage/dialect');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ais-conn-'));
  const knex = openDatabase(parseDatabaseUrl(`sqlite://${path.join(dir, 'c.sqlite')}`));
  try {
    await knex.schema.createTable('t', (t) => {
      t.integer('id').primary();
      t.string('note');
    });
    await knex('t').insert([{ id: 1, note: 'one' }, { id: 2, note: 'two' }]);
    const query = () => knex('t').select('id', 'note').where('id', '>', 0).orderBy('id');
    const viaSnapshot = await queryDialectFor('sqlite').readSnapshot(knex, (reader) => reader.all(query()));
    assert.deepEqual(viaSnapshot, [{ id: 1, note: 'one' }, { id: 2, note: 'two' }]);
    assert.deepEqual(await query(), [{ id: 1, note: 'one' }, { id: 2, note: 'two' }], 'knex, same SQL text after the snapshot read');
    assert.deepEqual(await queryDialectFor('sqlite').readSnapshot(knex, (reader) => reader.all(query())), viaSnapshot);
  } finally {
    await knex.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
