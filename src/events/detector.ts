import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { ApiKeyRecord, ApiKeyRepository } from '../storage/api-keys';
import { fromDbTime } from '../storage/db-time';
import { readRecordsById } from '../engines/query/read-records';
import { unreadableFieldsOf } from '../engines/query/envelope';
import { EVENT_KINDS, kindOfType, type ChangeType, type EventKind } from './kinds';
import { eventDocument, type EventDocument } from './document';
import { CursorMoved, type EndpointRow, type EventStore } from './store';
import type { OpenWrites } from '../storage/open-writes';
import { ownerMayReceive, visibleFieldNames, visibleRecord } from './visibility';
import { CATALOG } from '../../generated/catalog';

/** The storage column of a published field of a kind's entity (the catalog is the one mapping). */
function columnOf(entity: string, field: string): string {
  const f = CATALOG[entity]?.fields[field];
  if (!f) throw new Error(`events: ${entity} has no field ${field}`);
  return f.column;
}

/**
 * Change detection (the spec's Events rules 1, 2, 5, 6, 10). For each document kind some active
 * endpoint (or event feed: src/events/feed) subscribes to, rows whose `upddte` lies in (cursor, now - lag] are read, headers and
 * lines (a line's stamp counts for its document: re-coding a line is a change of the document);
 * each document becomes a `<kind>.created` event (its `insdte` is in the window too) or a
 * `<kind>.updated` event, queued in
 * the outbox for every subscribed endpoint, and the cursor moves to the window's end, all in one
 * transaction: a restart neither loses nor repeats a window.
 *
 * `upddte` is kept by triggers on every engine (db/migrations/20261122000004_upddte_triggers.ts),
 * so changes made directly in the database are found as well as the API's. A row is stamped
 * before its transaction commits, so a window never ends after the start of the oldest
 * transaction still writing (storage/open-writes.ts, asked once per cycle before any window is
 * read): every row stamped in a window has committed (or is gone) when the window is read, however
 * long its transaction ran (a posting past its 504, a long transaction of the accounting system;
 * docs/decisions/0466-detection-waits-for-open-writes.md). The lag is taken off that bound as well
 * as off the clock: it covers the difference between the clocks that stamp rows (the database's,
 * each instance's) and the detector's.
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
  /** The start of the oldest transaction still writing (storage/open-writes.ts): no window ends after it. */
  openWrites: OpenWrites;
  leaseMs: number;
  holder: string;
  /** Whether the process holding the lease is gone (without it, a lease is taken only once it has run out). */
  holderGone?: (holder: string) => Promise<boolean>;
  /** The pull feed (src/events/feed): its subscribed types are detected too, and it receives their events. */
  feed?: DetectedEventSink;
}

/** A detected event as the pull feed stores it: the webhook's document, record unfiltered. */
export interface DetectedEvent {
  id: string;
  kind: EventKind;
  document: EventDocument;
}

/** Where detected events go besides the webhook outbox (the pull feed, src/events/feed). */
export interface DetectedEventSink {
  /** The event types to detect and hand over in this cycle. */
  subscribedTypes(at: Date): Promise<ReadonlySet<string>>;
  /** Runs in the detection transaction, before the cursor moves: a window is handed over exactly once. */
  append(trx: Knex.Transaction, events: DetectedEvent[]): Promise<void>;
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

/** One document changed in a detection window. */
interface DocumentChange {
  /** The document's key (its header's `_idnum`). */
  id: string;
  change: ChangeType;
  stamp: Date;
  user: string | null;
}

/** Stable event id: the same change always gets the same id, so a subscriber can drop repeats. */
export function eventId(kind: string, recordId: string, change: ChangeType, stamp: Date): string {
  return 'evt_' + createHash('sha256').update(`${kind}|${recordId.toLowerCase()}|${change}|${stamp.toISOString()}`).digest('hex').slice(0, 32);
}

/** How far behind the clock (beyond the lag) a transaction still writing may hold every window before a warning says so. */
export const HELD_BACK_WARN_MS = 60_000;
/** At most one such warning a minute. */
const HELD_BACK_WARN_EVERY_MS = 60_000;

export class Detector {
  private heldBackWarnedAtMs = Number.NEGATIVE_INFINITY;

  constructor(private readonly o: DetectorOptions) {}

  /**
   * A transaction left open while writing holds every kind's window back until it ends (decision
   * 0466): by design, but silent otherwise, so operators would only see events stop. Warns (at
   * most once a minute) once the windows end more than HELD_BACK_WARN_MS behind the clock less
   * the lag, naming the oldest writing session where the engine can.
   */
  private warnIfHeldBack(at: Date, upper: Date | null): void {
    if (upper === null) return; // not known at this look (a first look): the next says more
    const heldBackMs = at.getTime() - this.o.lagMs - upper.getTime();
    if (heldBackMs < HELD_BACK_WARN_MS || at.getTime() - this.heldBackWarnedAtMs < HELD_BACK_WARN_EVERY_MS) return;
    this.heldBackWarnedAtMs = at.getTime();
    const oldest = this.o.openWrites.oldestWriter?.();
    this.o.logger.warn(
      { heldBackSeconds: Math.round(heldBackMs / 1000), ...(oldest ? { writerPid: oldest.pid, writerAgeSeconds: Math.round(oldest.ageMs / 1000) } : {}) },
      'change-event detection is held back by a transaction still writing: no change after its start is sent (webhooks or feed) until it ends',
    );
  }

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
    // Kinds only a feed subscribes to are detected too (no endpoint to queue for).
    const feedTypes = (await this.o.feed?.subscribedTypes(at)) ?? new Set<string>();
    for (const type of feedTypes) {
      const kind = kindOfType(type);
      if (kind && !byKind.has(kind)) byKind.set(kind, []);
    }
    // Fixed before any window is read: what is stamped at or before it has committed by then.
    const upper = await this.upperBound(at);
    this.warnIfHeldBack(at, upper);
    const cursors = await store.cursors();
    for (const [kind, subscribers] of byKind) {
      result.kinds.push(kind);
      const cursor = cursors.get(kind);
      if (!cursor) {
        // First subscription to this kind (its subscription sets the cursor; this is the fallback): no history is sent.
        await store.ensureCursor(kind, upper ?? new Date(at.getTime() - this.o.lagMs));
        continue;
      }
      if (upper === null || upper <= cursor) continue;
      try {
        const { changes, queued } = await this.detectKind(kind, cursor, upper, subscribers, owners, at, feedTypes);
        result.changes += changes;
        result.queued += queued;
      } catch (err) {
        // A first subscriber of the kind moved its cursor meanwhile: the window was rolled back, the next cycle reads from there.
        if (!(err instanceof CursorMoved)) throw err;
        this.o.logger.info({ kind }, 'change-event detection: the cursor moved during the cycle (a new subscription); the window is read again next cycle');
      }
    }
    return result;
  }

  /**
   * Where a window read now may end: `at` less the lag, and no later than the start of the oldest
   * transaction still writing less the lag. null when that start cannot be known at this look
   * (storage/open-writes.ts: another role's transaction on PostgreSQL, this process's first look).
   */
  async upperBound(at: Date = this.o.clock()): Promise<Date | null> {
    const open = await this.o.openWrites.safeUpperBound(this.o.clock);
    if (open === null) return null;
    return new Date(Math.min(at.getTime(), open.getTime()) - this.o.lagMs);
  }

  private async detectKind(kind: EventKind, cursor: Date, upper: Date, subscribers: EndpointRow[], owners: Map<string, ApiKeyRecord>, at: Date, feedTypes: ReadonlySet<string>): Promise<{ changes: number; queued: number }> {
    const { store } = this.o;
    const { entity } = EVENT_KINDS[kind];
    return store.knex.transaction(async (trx) => {
      const changes = await this.changesIn(trx, kind, cursor, upper);
      let queued = 0;
      if (changes.length > 0) {
        const records = new Map<string, Record<string, unknown>>();
        // A stored value that cannot be read (another program wrote text into a number column) does
        // not stop the events of the kind: its field is left out of the record and named in the event.
        for (const rec of await readRecordsById(trx, entity, changes.map((c) => c.id), { unreadable: 'omit' })) records.set(String(rec.id).toLowerCase(), rec);
        const logged: DetectedEvent[] = [];
        for (const c of changes) {
          const record = records.get(c.id.toLowerCase());
          if (!record) continue; // deleted meanwhile: no event for deletions
          const type = `${kind}.${c.change}`;
          const id = eventId(kind, c.id, c.change, c.stamp);
          const unreadable = unreadableFieldsOf(record);
          if (unreadable.length > 0) {
            this.o.logger.warn({ entity, recordId: c.id.toLowerCase(), fields: unreadable, eventType: type, code: 'STORED_VALUE_UNREADABLE' }, 'stored values that cannot be read: left out of the event record, named in data.unreadableFields');
          }
          // Payroll never reaches this point (changesIn leaves it out), so the feed never lists it either.
          if (feedTypes.has(type)) logged.push({ id, kind, document: eventDocument(kind, c.change, at, c.user, c.stamp, record, unreadable) });
          for (const e of subscribers) {
            if (!e.eventTypes.includes(type)) continue;
            const owner = owners.get(e.ownerKeyId);
            const visible = visibleRecord(owner, kind, record);
            if (!visible) continue;
            const payload = JSON.stringify(eventDocument(kind, c.change, at, c.user, c.stamp, visible, visibleFieldNames(owner!, kind, unreadable)));
            if (await store.enqueue(trx, { endpointId: e.id, eventId: id, eventType: type, payload }, at)) queued++;
          }
        }
        if (logged.length > 0) await this.o.feed!.append(trx, logged);
      }
      // Only from the cursor this window was read from: a subscription that moved it meanwhile wins (CursorMoved rolls back).
      await store.setCursor(trx, kind, cursor, upper, at);
      return { changes: changes.length, queued };
    });
  }

  /**
   * The documents of `kind` changed in (cursor, upper], one change each, oldest first: a header
   * whose `upddte` lies in the window (`created` when its `insdte` does too), and a document whose
   * lines (every child collection of the catalog entity) were inserted or changed in the window
   * while its header was not new (a line re-coded in the accounting system moves only the line's
   * stamp). A document changed in both places is one `updated` change, stamped with the later of
   * the two. Rows the kind never sends (payroll journals) are left out, lines included.
   */
  private async changesIn(trx: Knex.Transaction, kind: EventKind, cursor: Date, upper: Date): Promise<DocumentChange[]> {
    const byId = new Map<string, DocumentChange>();
    const offer = (c: DocumentChange) => {
      const key = c.id.toLowerCase();
      const seen = byId.get(key);
      if (!seen || (seen.change === 'updated' && c.change === 'updated' && c.stamp > seen.stamp)) byId.set(key, c);
    };
    const { headers, lines } = detectionQueries(trx, kind, this.o.store.t(cursor), this.o.store.t(upper));
    for (const r of (await headers) as any[]) {
      const inserted = fromDbTime(r.insdte)!;
      const created = inserted > cursor;
      offer({
        id: String(r.id),
        change: created ? 'created' : 'updated',
        stamp: created ? inserted : fromDbTime(r.upddte)!,
        user: (created ? r.insusr : r.updusr) ?? r.insusr ?? null,
      });
    }
    for (const q of lines) {
      for (const r of (await q) as any[]) offer({ id: String(r.id), change: 'updated', stamp: fromDbTime(r.upddte)!, user: r.updusr ?? r.insusr ?? null });
    }
    return [...byId.values()].sort((a, b) => a.stamp.getTime() - b.stamp.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }
}

/**
 * The statements of one detection window of `kind` (bounds as the database stores them): the
 * headers stamped in the window, and per child collection of the kind's catalog entity the lines
 * stamped in the window whose header is not new (a new document's lines belong to its created
 * event). Rows the kind never sends (payroll journals) are left out of both.
 */
export function detectionQueries(db: Knex, kind: EventKind, from: Date | string, to: Date | string): { headers: Knex.QueryBuilder; lines: Knex.QueryBuilder[] } {
  const { entity, never } = EVENT_KINDS[kind];
  const def = CATALOG[entity]!;
  const neverColumn = never ? columnOf(entity, never.field) : undefined;
  const headers = db(def.table).where('upddte', '>', from).andWhere('upddte', '<=', to);
  if (never) headers.whereNotIn(neverColumn!, never.values);
  headers.select({ id: def.keyColumn, insdte: 'insdte', upddte: 'upddte', insusr: 'insusr', updusr: 'updusr' });
  const lines = Object.values(def.children).map((child) => {
    const q = db({ l: child.table })
      .join({ h: def.table }, `h.${def.keyColumn}`, `l.${child.parentColumn}`)
      .where('l.upddte', '>', from)
      .andWhere('l.upddte', '<=', to)
      .andWhere('h.insdte', '<=', from);
    if (never) q.whereNotIn(`h.${neverColumn!}`, never.values);
    return q.select({ id: `h.${def.keyColumn}`, upddte: 'l.upddte', insusr: 'l.insusr', updusr: 'l.updusr' });
  });
  return { headers, lines };
}
