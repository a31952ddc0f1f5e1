import type { Knex } from 'knex';
import { hashApiKey, toRecord, type ApiKeyRecord } from './api-keys';
import { toDatabaseProblem } from './boundary';
import type { Engine } from './database';

/** The API keys, by hash, and when their read began (performance.now()). */
interface KeyRead {
  keys: Map<string, ApiKeyRecord>;
  readAtMs: number;
}

interface LockKeySnapshotOptions {
  engine: Engine;
  /**
   * The oldest the snapshot may be when a key is looked up (API_KEY_CACHE_MS; 0 = read for every
   * lookup): a key revoked, disabled or created through another process is answered from its new
   * state within this bound, as outside a lock.
   */
  maxAgeMs: number;
  /** Runs `fn` with a connection opened for it, closed afterwards (the lock's own: the pool is gone). */
  ownConnection: <T>(fn: (db: Knex) => Promise<T>) => Promise<T>;
  /** Whether a read a lookup made is still worth keeping (false once the lock is released). */
  locked: () => boolean;
}

/**
 * The API keys while the database is locked (storage/lock-store.ts holds no pooled connection then):
 * authentication answers from this snapshot, kept no older than `maxAgeMs`
 * (docs/decisions/0450-key-snapshot-fresh-while-locked.md). The lock takes it when applied and
 * again on each of its re-reads, through the connection it has open (`take`); a lookup that finds
 * it older reads it again through a connection of its own (`find`).
 */
export class LockKeySnapshot {
  private kept: KeyRead | null = null;
  /** The read a lookup asked for, in flight (one at a time), and when it began. */
  private reading: { startedAtMs: number; done: Promise<KeyRead> } | null = null;

  constructor(private readonly o: LockKeySnapshotOptions) {}

  /** Reads every key through `db` and keeps them (applying a lock, each re-read while locked). */
  async take(db: Knex): Promise<void> {
    this.keep(await readKeys(db));
  }

  /** Forgets the keys (the lock is released: the repository reads `apikey` again). */
  clear(): void {
    this.kept = null;
  }

  /**
   * The key, from the snapshot when it is younger than `maxAgeMs`, else from a snapshot read again.
   * A read that cannot be made answers the driver's problem (502 DATABASE_UNAVAILABLE), never the
   * stale snapshot: a key revoked elsewhere must not come back because the database went away; and
   * not 423 either (the boundary's "a database error while locked is the lock"): it would name the
   * holder to a caller whose key could not be checked.
   */
  async find(key: string): Promise<ApiKeyRecord | undefined> {
    const read = await this.fresh(performance.now()).catch((err: unknown) => Promise.reject(toDatabaseProblem(err, this.o.engine) ?? err));
    return read.keys.get(hashApiKey(key));
  }

  /**
   * The hashes of the active keys, from the last snapshot (no database): used only to let a key
   * through the failed-authentication throttle, which then looks it up (`find`).
   */
  activeKeyHashes(): Set<string> {
    const hashes = new Set<string>();
    for (const [hash, record] of this.kept?.keys ?? []) if (record.state === 'active') hashes.add(hash);
    return hashes;
  }

  /**
   * A snapshot whose read began less than `maxAgeMs` before `askedAtMs` (with 0: after it). One read
   * at a time: a lookup joins the read in flight when that one began recently enough, else waits for
   * it and starts the next, which every lookup waiting meanwhile shares.
   */
  private async fresh(askedAtMs: number): Promise<KeyRead> {
    const recent = (readAtMs: number) => (this.o.maxAgeMs > 0 ? askedAtMs - readAtMs < this.o.maxAgeMs : readAtMs > askedAtMs);
    for (;;) {
      const kept = this.kept;
      if (kept && recent(kept.readAtMs)) return kept;
      const reading = this.reading;
      if (reading) {
        const read = await reading.done.catch(() => undefined);
        if (read && recent(read.readAtMs)) return read;
        if (!read && recent(reading.startedAtMs)) await reading.done;
        continue;
      }
      // Taken before the connection is opened: the snapshot is never older than the bound when reused.
      const startedAtMs = performance.now();
      const entry: { startedAtMs: number; done: Promise<KeyRead> } = { startedAtMs, done: Promise.resolve(null as never) };
      // Cleared before `done` settles: whoever sees it settled finds no read in flight.
      const ended = () => {
        if (this.reading === entry) this.reading = null;
      };
      entry.done = this.o.ownConnection((own) => readKeys(own, startedAtMs)).then(
        (read) => {
          ended();
          if (this.o.locked()) this.keep(read);
          return read;
        },
        (err: unknown) => {
          ended();
          throw err;
        },
      );
      this.reading = entry;
    }
  }

  /** Keeps `read` unless the snapshot held is newer (a lookup's read may end after a re-read's). */
  private keep(read: KeyRead): void {
    if (!this.kept || read.readAtMs > this.kept.readAtMs) this.kept = read;
  }
}

/** Every API key, read through `db`; `readAtMs` defaults to now (before the statement is sent). */
async function readKeys(db: Knex, readAtMs = performance.now()): Promise<KeyRead> {
  const rows = await db('apikey').select('id', 'key_hash', 'name', 'role', 'state', 'reason', 'created_at', 'scopes');
  const keys = new Map<string, ApiKeyRecord>();
  for (const row of rows) keys.set(String(row.key_hash), toRecord(row));
  return { keys, readAtMs };
}
