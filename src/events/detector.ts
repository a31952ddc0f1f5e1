import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { ApiKeyRecord, ApiKeyRepository } from '../storage/api-keys';
import { fromDbTime } from '../storage/db-time';
import { readRecordsById } from '../engines/posting/read-back';
import { EVENT_KINDS, kindOfType, sourceOf, type ChangeType, type EventKind } from './kinds';
import type { EndpointRow, EventStore } from './store';
import { ownerMayReceive, visibleRecord } from './visibility';

/**
 * Change detection (the spec's Events rules 1, 2, 5, 6, 10). For each document kind some active
 * endpoint subscribes to, rows whose `upddte` lies in (cursor, now - lag] are read; each becomes a
 * `<kind>.created` event (its `insdte` is in the window too) or a `<kind>.updated` event, queued in
 * the outbox for every subscribed endpoint, and the cursor moves to the window's end, all in one
 * transaction: a restart neither loses nor repeats a window.
 *
 * `upddte` is kept by triggers on every engine (db/migrations/20261122000004_upddte_triggers.ts),
 * so changes made directly in the database are found as well as the API's. The lag covers
 * transactions that stamp a row before they commit (PostgreSQL's now() is the transaction's
 * start): a row becomes visible to detection only once such a transaction must have ended.
 *
 * One detector runs at a time across processes: a lease row in the database (`whklse`), renewed by
 * each cycle of its holder. When the holder's process is gone (killed, restarted: `holderGone`, from
 * its heartbeat) the next process to try takes the lease over at once instead of waiting for it to
 * run out. A holder taken for gone while it still runs (a stalled event loop) and a late cycle of
 * its own are harmless: the outbox is unique per endpoint and event id, so nothing is queued twice.
 */

export interface DetectorOptions {
  store: EventStore;
  keys: ApiKeyRepository;
  logger: Logger;
  clock: () => Date;
  lagMs: number;
  leaseMs: number;
  holder: string;
  /** Whether the process holding the lease is gone (without it, a lease is taken only once it has run out). */
  holderGone?: (holder: string) => Promise<boolean>;
}

export interface DetectionResult {
  /** False when another process holds the detection lease. */
  ran: boolean;
  kinds: string[];
  changes: number;
  queued: number;
  pausedEndpoints: number;
}

export const DETECTION_LEASE = 'detector';

/** Stable event id: the same change always gets the same id, so a subscriber can drop repeats. */
export function eventId(kind: string, recordId: string, change: ChangeType, stamp: Date): string {
  return 'evt_' + createHash('sha256').update(`${kind}|${recordId.toLowerCase()}|${change}|${stamp.toISOString()}`).digest('hex').slice(0, 32);
}

export class Detector {
  constructor(private readonly o: DetectorOptions) {}

  /** Pauses the endpoints whose owner key may no longer read; returns the endpoints still active. */
  async activeEndpoints(at: Date): Promise<{ endpoints: EndpointRow[]; owners: Map<string, ApiKeyRecord>; paused: number }> {
    const { rows } = await this.o.store.endpoints({ states: ['active'] });
    const owners = new Map<string, ApiKeyRecord>();
    const endpoints: EndpointRow[] = [];
    let paused = 0;
    const checked = new Map<string, ApiKeyRecord | undefined>();
    for (const e of rows) {
      if (!checked.has(e.ownerKeyId)) checked.set(e.ownerKeyId, await this.o.keys.findById(e.ownerKeyId));
      const owner = checked.get(e.ownerKeyId);
      if (!ownerMayReceive(owner)) {
        paused += (await this.o.store.pauseEndpointsOf(e.ownerKeyId, `owner key ${(owner as ApiKeyRecord | undefined)?.state ?? 'deleted'}`, at)).length;
        continue;
      }
      owners.set(owner.id, owner);
      endpoints.push(e);
    }
    return { endpoints, owners, paused };
  }

  /** Takes or renews the detection lease; takes it over from a holder that is gone. */
  private async takeLease(at: Date): Promise<boolean> {
    const { store, holder, holderGone } = this.o;
    const until = new Date(at.getTime() + this.o.leaseMs);
    if (await store.acquireLease(DETECTION_LEASE, holder, at, until)) return true;
    if (!holderGone) return false;
    const previous = await store.leaseHolder(DETECTION_LEASE);
    if (previous === undefined || previous === holder || !(await holderGone(previous))) return false;
    const taken = await store.takeOverLease(DETECTION_LEASE, previous, holder, until);
    if (taken) this.o.logger.warn({ previousHolder: previous, holder }, 'took change-event detection over from a process that is gone');
    return taken;
  }

  /** One detection cycle now (the timer calls this; tests call it directly). */
  async runOnce(): Promise<DetectionResult> {
    const { store, clock } = this.o;
    const at = clock();
    const result: DetectionResult = { ran: false, kinds: [], changes: 0, queued: 0, pausedEndpoints: 0 };
    if (!(await this.takeLease(at))) return result;
    result.ran = true;
    const { endpoints, owners, paused } = await this.activeEndpoints(at);
    result.pausedEndpoints = paused;
    const byKind = new Map<EventKind, EndpointRow[]>();
    for (const e of endpoints) {
      for (const type of e.eventTypes) {
        const kind = kindOfType(type);
        if (!kind) continue;
        const list = byKind.get(kind) ?? [];
        if (!list.includes(e)) list.push(e);
        byKind.set(kind, list);
      }
    }
    const upper = new Date(at.getTime() - this.o.lagMs);
    const cursors = await store.cursors();
    for (const [kind, subscribers] of byKind) {
      result.kinds.push(kind);
      const cursor = cursors.get(kind);
      if (!cursor) {
        // First subscription to this kind: detection starts now (no history is sent).
        await store.ensureCursor(kind, upper);
        continue;
      }
      if (upper <= cursor) continue;
      const { changes, queued } = await this.detectKind(kind, cursor, upper, subscribers, owners, at);
      result.changes += changes;
      result.queued += queued;
    }
    return result;
  }

  private async detectKind(kind: EventKind, cursor: Date, upper: Date, subscribers: EndpointRow[], owners: Map<string, ApiKeyRecord>, at: Date): Promise<{ changes: number; queued: number }> {
    const { store } = this.o;
    const { table, entity } = EVENT_KINDS[kind];
    return store.knex.transaction(async (trx) => {
      const rows = await trx(table)
        .where('upddte', '>', store.t(cursor))
        .andWhere('upddte', '<=', store.t(upper))
        .orderBy('upddte')
        .orderBy('_idnum')
        .select('_idnum', 'insdte', 'upddte', 'insusr', 'updusr');
      let queued = 0;
      if (rows.length > 0) {
        const records = new Map<string, Record<string, unknown>>();
        const ids = rows.map((r: any) => String(r._idnum));
        for (const rec of await readRecordsById(trx, entity, ids)) records.set(String(rec.id).toLowerCase(), rec);
        for (const r of rows as any[]) {
          const record = records.get(String(r._idnum).toLowerCase());
          if (!record) continue; // deleted meanwhile: no event for deletions
          const inserted = fromDbTime(r.insdte)!;
          const updated = fromDbTime(r.upddte)!;
          const change: ChangeType = inserted > cursor ? 'created' : 'updated';
          const stamp = change === 'created' ? inserted : updated;
          const user: string | null = (change === 'created' ? r.insusr : r.updusr) ?? r.insusr ?? null;
          const type = `${kind}.${change}`;
          const id = eventId(kind, String(r._idnum), change, stamp);
          for (const e of subscribers) {
            if (!e.eventTypes.includes(type)) continue;
            const visible = visibleRecord(owners.get(e.ownerKeyId), kind, record);
            if (!visible) continue;
            const payload = JSON.stringify({
              type,
              timestamp: at.toISOString(),
              data: { entity: kind, source: sourceOf(user), changedAt: stamp.toISOString(), changedBy: user ?? 'unknown', record: visible },
            });
            if (await store.enqueue(trx, { endpointId: e.id, eventId: id, eventType: type, payload }, at)) queued++;
          }
        }
      }
      await store.setCursor(trx, kind, upper, at);
      return { changes: rows.length, queued };
    });
  }
}
