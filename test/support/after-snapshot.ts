/**
 * Holds the app's reads once, right after their snapshot was taken, to change data in between
 * (test/engines/query/query-as-of.test.ts, test/events/events-feed-as-of.test.ts). It wraps the
 * engine's one query dialect (storage/dialect.ts queryDialectFor), which every read goes through.
 */
import assert from 'node:assert/strict';
import type { Knex } from 'knex';
import type { TestApp } from './app';
import type { QueryDialect, SnapshotReader } from '../../src/storage/dialect';

/**
 * Runs `read` with the query dialect's reads held once, right after the snapshot was taken (the
 * first statement of a snapshot, or the one statement of a page read at once), while `change`
 * commits on another connection. Answers the read's response and when `change` ran.
 */
export async function withChangeAfterSnapshot<R>(t: TestApp, change: () => Promise<Date>, read: () => Promise<R>): Promise<{ response: R; stamp: Date }> {
  const qd = t.services.queryDialect as { -readonly [K in keyof QueryDialect]: QueryDialect[K] };
  const original = { readSnapshot: qd.readSnapshot, readPageAtOnce: qd.readPageAtOnce };
  let stamp: Date | undefined;
  const once = async () => {
    if (stamp) return;
    stamp = new Date(0); // taken: later reads in this call are not held again
    stamp = await change();
    // The clock past the stamp: a clock read after the change is later than it (as on a busy server).
    while (Date.now() <= stamp.getTime() + 1) await new Promise((r) => setTimeout(r, 1));
  };
  qd.readSnapshot = function <T>(knex: Knex, fn: (reader: SnapshotReader) => Promise<T>): Promise<T> {
    return original.readSnapshot.call<QueryDialect, [Knex, (reader: SnapshotReader) => Promise<T>], Promise<T>>(qd, knex, (reader) => {
      const held: SnapshotReader = {
        db: reader.db,
        all: async (q) => { const r = await reader.all(q); await once(); return r; },
        column: async (q) => { const r = await reader.column(q); await once(); return r; },
        changeToken: async () => { const r = await reader.changeToken(); await once(); return r; },
      };
      return fn(held);
    });
  };
  if (original.readPageAtOnce) {
    const atOnce = original.readPageAtOnce;
    qd.readPageAtOnce = async (knex, page) => {
      const r = await atOnce.call(qd, knex, page);
      await once();
      return r;
    };
  }
  try {
    const response = await read();
    assert.ok(stamp, 'the read was held after its snapshot');
    return { response, stamp };
  } finally {
    qd.readSnapshot = original.readSnapshot;
    if (original.readPageAtOnce) qd.readPageAtOnce = original.readPageAtOnce;
    else delete qd.readPageAtOnce;
  }
}
