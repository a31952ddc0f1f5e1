import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { Engine } from '../../storage/database';
import { fromDbTime, toDbTime } from '../../storage/db-time';
import { queryDialectFor, type QueryDialect, type SnapshotReader } from '../../storage/dialect';
import { applyCondition } from '../../engines/query/sql';
import type { Condition } from '../../engines/query/types';
import type { DetectedEvent } from '../detector';
import { liveRow, liveRows } from '../live-rows';

/**
 * SQL of the event feed (tables of db/migrations/20261127000028_event_feed.ts): the feed
 * subscriptions (`evtfed`), the event log (`evtlog`) and its counter row (`evtctr`).
 *
 * `evtfed` timestamps are the service's own (toDbTime, as the webhook tables). `evtlog`'s are
 * filtered by the query language (`changedAt`, `timestamp`), so they are written exactly as the
 * query dialect encodes a datetime it compares them with.
 */

export type FeedState = 'active' | 'paused' | 'deleted';

export interface FeedRow {
  id: string;
  description: string | null;
  eventTypes: string[];
  state: FeedState;
  stateReason: string | null;
  ownerKeyId: string;
  lastReadAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

/** Where the log stands: `seq` the last position handed out, `purgedThrough` the last one deleted. */
export interface LogPosition {
  seq: number;
  purgedThrough: number;
}

export interface LogRow {
  seq: number;
  eventId: string;
  document: string;
}

export interface LogPage {
  position: LogPosition;
  /** Events after the start position (up to `position.seq`) that match the filter. */
  totalCount: number;
  rows: LogRow[];
  /** Where the next page starts: the last row returned, or `position.seq` when nothing matching is left. */
  next: number;
}

/** A cursor position outside (purgedThrough, seq]: deleted by retention, or never handed out. */
export class PositionOutOfRange extends Error {
  constructor(
    readonly position: number,
    readonly log: LogPosition,
  ) {
    super(`position ${position} is outside the event log (${log.purgedThrough}, ${log.seq}]`);
  }
}

function feedOf(r: any): FeedRow {
  return {
    id: r.id,
    description: r.description ?? null,
    eventTypes: JSON.parse(r.event_types),
    state: r.state,
    stateReason: r.state_reason ?? null,
    ownerKeyId: r.owner_key_id,
    lastReadAt: fromDbTime(r.last_read_at),
    createdAt: fromDbTime(r.created_at)!,
    updatedAt: fromDbTime(r.updated_at)!,
  };
}

/** Event log rows per INSERT: 9 columns each, far below SQL Server's 2,100 parameters. */
const ROWS_PER_INSERT = 100;
/** Event ids per existence check. */
const IDS_PER_CHECK = 500;
/** Alias of the event log in reads (the filter's columns are qualified with it). */
const LOG = 'e';
/** The counter row's table (the migration's FEED_COUNTER_TABLE; not imported: migrations stay out of a start). */
const FEED_COUNTER_TABLE = 'evtctr';

export class FeedStore {
  readonly qd: QueryDialect;

  constructor(
    readonly knex: Knex,
    readonly engine: Engine,
  ) {
    this.qd = queryDialectFor(engine);
  }

  t(at: Date): Date | string {
    return toDbTime(this.engine, at);
  }

  /** A time in an `evtlog` column, as the query language compares it. */
  logTime(at: Date): unknown {
    return this.qd.encodeValue('datetime', at);
  }

  // ------------------------------------------------------------------ feeds

  async createFeed(f: { description: string | null; eventTypes: string[]; ownerKeyId: string }, at: Date): Promise<FeedRow> {
    const id = randomUUID();
    await this.knex('evtfed').insert({
      id,
      description: f.description,
      event_types: JSON.stringify(f.eventTypes),
      state: 'active',
      state_reason: null,
      owner_key_id: f.ownerKeyId,
      last_read_at: null,
      created_at: this.t(at),
      updated_at: this.t(at),
    });
    return (await this.feed(id))!;
  }

  /** A feed that is not deleted. */
  async feed(id: string): Promise<FeedRow | undefined> {
    const row = await liveRow(this.knex, 'evtfed', id);
    return row ? feedOf(row) : undefined;
  }

  async feeds(options: { states?: FeedState[]; limit?: number; offset?: number } = {}): Promise<{ total: number; rows: FeedRow[] }> {
    const { total, rows } = await liveRows(this.knex, 'evtfed', options);
    return { total, rows: rows.map(feedOf) };
  }

  async updateFeed(id: string, change: Partial<{ description: string | null; eventTypes: string[]; state: FeedState; stateReason: string | null; lastReadAt: Date }>, at: Date): Promise<void> {
    const row: Record<string, unknown> = { updated_at: this.t(at) };
    if (change.description !== undefined) row.description = change.description;
    if (change.eventTypes !== undefined) row.event_types = JSON.stringify(change.eventTypes);
    if (change.state !== undefined) row.state = change.state;
    if (change.stateReason !== undefined) row.state_reason = change.stateReason;
    // Resuming counts as a read: a feed resumed after 30 days unread is not paused again at once.
    if (change.lastReadAt !== undefined) row.last_read_at = this.t(change.lastReadAt);
    await this.knex('evtfed').where({ id }).update(row);
  }

  /** Pauses an active feed; false when it was not active any more (paused or deleted meanwhile). */
  async pauseFeed(id: string, reason: string, at: Date): Promise<boolean> {
    const n = await this.knex('evtfed').where({ id, state: 'active' }).update({ state: 'paused', state_reason: reason, updated_at: this.t(at) });
    return Number(n) === 1;
  }

  /** Records a read of these feeds (not `updated_at`: a read changes no setting). */
  async markRead(ids: string[], at: Date): Promise<void> {
    if (ids.length === 0) return;
    await this.knex('evtfed').whereIn('id', ids).where({ state: 'active' }).update({ last_read_at: this.t(at) });
  }

  // ------------------------------------------------------------------ the log

  async position(db: Knex | Knex.Transaction = this.knex): Promise<LogPosition> {
    const row = await db(FEED_COUNTER_TABLE).where({ id: 0 }).first('seq', 'purged_through');
    return { seq: Number(row?.seq ?? 0), purgedThrough: Number(row?.purged_through ?? 0) };
  }

  /**
   * Appends detected events to the log inside the detection transaction. The counter row is
   * written first: it stays locked until this transaction commits, so a second appender (a lease
   * taken over mid-cycle) waits, and positions become visible in the order they were handed out
   * (decision 0282). An event already in the log (same id) is not added again. Positions are
   * contiguous: every position in (purged_through, seq] is a row of the log.
   */
  async append(trx: Knex.Transaction, events: readonly DetectedEvent[]): Promise<number> {
    if (events.length === 0) return 0;
    await trx(FEED_COUNTER_TABLE).where({ id: 0 }).increment('seq', 0);
    const known = new Set<string>();
    const ids = events.map((e) => e.id);
    for (let i = 0; i < ids.length; i += IDS_PER_CHECK) {
      for (const r of await trx('evtlog').whereIn('event_id', ids.slice(i, i + IDS_PER_CHECK)).select('event_id')) known.add(r.event_id);
    }
    const fresh = events.filter((e) => !known.has(e.id) && (known.add(e.id), true));
    if (fresh.length === 0) return 0;
    await trx(FEED_COUNTER_TABLE).where({ id: 0 }).increment('seq', fresh.length);
    let seq = (await this.position(trx)).seq - fresh.length;
    const rows = fresh.map((e) => {
      const d = e.document;
      seq += 1;
      return {
        seq,
        event_id: e.id,
        event_type: d.type,
        entity: d.data.entity,
        source: d.data.source,
        changed_by: d.data.changedBy.slice(0, 100),
        changed_at: this.logTime(new Date(d.data.changedAt)),
        detected_at: this.logTime(new Date(d.timestamp)),
        document: JSON.stringify(d),
      };
    });
    for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) await trx('evtlog').insert(rows.slice(i, i + ROWS_PER_INSERT));
    return rows.length;
  }

  private filtered(db: Knex, from: number, upTo: number, where: Condition | null): Knex.QueryBuilder {
    const qb = db({ [LOG]: 'evtlog' }).where(`${LOG}.seq`, '>', from).andWhere(`${LOG}.seq`, '<=', upTo);
    if (where) applyCondition(qb, where, { qd: this.qd, alias: LOG, budget: 900 });
    return qb;
  }

  /**
   * One page of the log after `after` (default: the oldest kept), in one snapshot: the counter,
   * the count and the rows agree. Throws PositionOutOfRange for a position retention deleted
   * past or one never handed out.
   */
  async page(reader: SnapshotReader, after: number | undefined, where: Condition | null, pageSize: number): Promise<LogPage> {
    const db = reader.db;
    const [ctr] = await reader.all(db(FEED_COUNTER_TABLE).where({ id: 0 }).select('seq', 'purged_through'));
    const position: LogPosition = { seq: Number(ctr?.seq ?? 0), purgedThrough: Number(ctr?.purged_through ?? 0) };
    const from = after ?? position.purgedThrough;
    if (from < position.purgedThrough || from > position.seq) throw new PositionOutOfRange(from, position);
    // One row more than the page: when it is not there, the page holds every matching event and
    // needs no count (the usual case of a consumer that keeps up); a count runs only while a
    // filtered consumer catches up.
    const rows: LogRow[] = (await reader.all(this.filtered(db, from, position.seq, where).select(`${LOG}.seq`, `${LOG}.event_id`, `${LOG}.document`).orderBy(`${LOG}.seq`).limit(pageSize + 1))).map((r) => ({
      seq: Number(r.seq),
      eventId: String(r.event_id),
      document: String(r.document),
    }));
    const more = rows.length > pageSize;
    if (more) rows.length = pageSize;
    // Without a filter every position after `from` is an event (positions are contiguous): no count.
    const totalCount = !more ? rows.length : !where ? position.seq - from : Number((await reader.all(this.filtered(db, from, position.seq, where).count({ n: '*' })))[0]?.n ?? 0);
    // Everything matching fitted: the next page starts at the high-water mark, past the rows that
    // did not match (a filtered consumer does not scan them again).
    const next = more ? rows[rows.length - 1]!.seq : position.seq;
    return { position, totalCount, rows, next };
  }

  /**
   * Retention: deletes the events detected before `before`, always a prefix of the log (the
   * positions up to the newest such event), and records how far in the counter row, in one
   * transaction: a cursor before that position is expired, never silently short of events.
   */
  async purge(before: Date): Promise<number> {
    return this.knex.transaction(async (trx) => {
      const [m] = await trx('evtlog').where('detected_at', '<', this.logTime(before) as Knex.Value).max({ seq: 'seq' });
      const through = m?.seq === null || m?.seq === undefined ? 0 : Number(m.seq);
      if (through === 0) return 0;
      await trx(FEED_COUNTER_TABLE).where({ id: 0 }).where('purged_through', '<', through).update({ purged_through: through });
      return Number(await trx('evtlog').where('seq', '<=', through).delete());
    });
  }
}
