import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Engine } from './database';
import { fromDbTime, toDbTime } from './db-time';
import { insertUnlessExists } from './insert-or-ignore';
import { PeriodicJob } from './periodic-job';

/**
 * Who this server process is among the processes on one database, and that it is alive
 * (docs/decisions/0029-several-processes-and-instances-on-one-database.md).
 *
 * `instanceId` is the process's stable name (INSTANCE_ID, a cluster worker's `/w<n>` appended): it
 * survives restarts. `bootId` is new on every start. Table `insthb` holds one row per name: the
 * boot running under it now, and `last_seen`, written every `beatMs`. Idempotency claims record
 * (instanceId, bootId) as their owner; an observer calls an owner gone when its name now runs
 * another boot (restarted) or has not beaten for 3 of ITS intervals (stopped, partitioned).
 *
 * Times are the processes' own clocks (as the idempotency lease already is): instances are
 * expected to run NTP. A skew only makes a takeover early or late; it never makes a posting
 * happen twice (the old owner's completion is conditional, see KnexIdempotencyStore).
 */
export interface InstanceIdentity {
  instanceId: string;
  bootId: string;
}

/** Beats missed before an owner counts as gone. */
export const MISSED_BEATS = 3;

const TABLE = 'insthb';
const CLAIMS = 'idmkey';

export interface InstanceHeartbeatOptions {
  knex: Knex;
  engine: Engine;
  logger: Logger;
  instanceId: string;
  /** Interval of the beats (HEARTBEAT_MS). */
  beatMs: number;
  /** No beat while true (the maintenance lock has dropped the pool). */
  paused?: () => boolean;
  /** Defaults to a new random id (a new boot). */
  bootId?: string;
}

export class InstanceHeartbeat {
  readonly identity: InstanceIdentity;
  private readonly beats: PeriodicJob<void>;
  /** performance.now() of the last beat recorded (through the pool or `beatThrough`). */
  private lastBeatAt = -Infinity;
  /** Between start() and stop(): beats are due. */
  private beating = false;

  constructor(private readonly options: InstanceHeartbeatOptions) {
    this.identity = { instanceId: options.instanceId, bootId: options.bootId ?? randomUUID() };
    this.beats = new PeriodicJob({ everyMs: options.beatMs, logger: options.logger, failure: 'heartbeat not recorded', fallback: undefined, paused: options.paused, run: () => this.record() });
  }

  /**
   * Records this boot under the instance name, frees the claims the previous boot of this name
   * left in flight (it is gone: this name runs this boot now), and beats every `beatMs`.
   * Returns how many claims were freed.
   */
  async start(): Promise<number> {
    await this.record();
    const freed = await this.freePreviousBoots();
    if (freed > 0) this.options.logger.warn({ instanceId: this.identity.instanceId, freed }, 'freed the idempotency claims a previous boot of this instance left in flight');
    this.beating = true;
    this.beats.start();
    return freed;
  }

  stop(): void {
    this.beating = false;
    this.beats.stop();
  }

  /** One beat (skipped while paused, joined while the previous one is still running); failures only logged. */
  beat(): Promise<void> {
    return this.beats.runOnce();
  }

  /**
   * While the maintenance lock holds the pool closed, the beats go through the lock's own
   * connection (its re-reads, every LOCK_POLL_MS): one beat when one is due. A locked process is
   * alive, and the un-lock waits for every live process (docs/decisions/0200-lock-takes-effect-before-it-answers.md).
   */
  async beatThrough(db: Knex): Promise<void> {
    if (!this.beating || performance.now() - this.lastBeatAt < this.options.beatMs) return;
    await this.record(db);
  }

  private async record(knex: Knex = this.options.knex): Promise<void> {
    const { engine, instanceId, beatMs } = this.options;
    const beganAt = performance.now();
    const now = toDbTime(engine, new Date());
    const row = { boot_id: this.identity.bootId, last_seen: now, beat_ms: beatMs };
    const updated = await knex(TABLE).where({ instance_id: instanceId, boot_id: this.identity.bootId }).update(row);
    this.lastBeatAt = beganAt;
    if (Number(updated) === 1) return;
    // First beat of this boot: take the name over from the previous boot (or create it). The lock
    // state is this boot's to report, once it has read the lock.
    const first = { ...row, started_at: now, lock_state: null };
    const taken = await knex(TABLE).where({ instance_id: instanceId }).update(first);
    if (Number(taken) === 1) return;
    if (!(await insertUnlessExists(knex, TABLE, { instance_id: instanceId, ...first }, ['instance_id'], 'instance_id'))) {
      await knex(TABLE).where({ instance_id: instanceId }).update(first);
    }
  }

  /**
   * Deletes the in-flight and unknown claims of earlier boots of this instance name. Their
   * postings never committed (a posting commits together with its claim's completion) and never
   * will: a late commit of such an owner finds its claim gone and rolls back.
   */
  private async freePreviousBoots(): Promise<number> {
    const n = await this.options.knex(CLAIMS)
      .where({ owner_instance: this.identity.instanceId })
      .whereNot({ owner_boot: this.identity.bootId })
      .whereIn('state', ['in_flight', 'unknown'])
      .del();
    return Number(n);
  }
}

/** The heartbeat row of an owner, as an observer needs it. */
export interface OwnerBeat {
  bootId: string;
  lastSeenMs: number;
  beatMs: number;
}

export async function readBeat(db: Knex, instanceId: string): Promise<OwnerBeat | undefined> {
  const row = await db(TABLE).where({ instance_id: instanceId }).first();
  if (!row) return undefined;
  return { bootId: String(row.boot_id), lastSeenMs: fromDbTime(row.last_seen)?.getTime() ?? 0, beatMs: Number(row.beat_ms) || 1000 };
}

/**
 * Whether the owner of a claim is gone: its instance name runs another boot now, or stopped
 * beating for MISSED_BEATS of its intervals. Unknown owners (no owner recorded, no heartbeat
 * row) are NOT called gone: their claims wait for the lease, as before.
 */
export function ownerGone(ownerBoot: string | null | undefined, beat: OwnerBeat | undefined, nowMs: number): boolean {
  if (!ownerBoot || !beat) return false;
  if (beat.bootId !== ownerBoot) return true;
  return nowMs - beat.lastSeenMs > MISSED_BEATS * beat.beatMs;
}

const BOOT_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Whether the process that runs boot `bootId` is gone, for leases a process holds under its boot id
 * (the change-event detector): no instance name runs that boot any more (the name now runs a newer
 * boot: restarted), or it has not beaten for MISSED_BEATS of its intervals. A holder that is not a
 * boot id (written by an older version) is NOT called gone: its lease runs out as before.
 */
export async function bootGone(db: Knex, bootId: string, nowMs: number): Promise<boolean> {
  if (!BOOT_ID.test(bootId)) return false;
  const row = await db(TABLE).where({ boot_id: bootId.toLowerCase() }).first();
  if (!row) return true;
  return nowMs - (fromDbTime(row.last_seen)?.getTime() ?? 0) > MISSED_BEATS * (Number(row.beat_ms) || 1000);
}

/** `insthb.lock_state` of a process that has applied the un-lock (else the lock_id of the lock it applied). */
export const UNLOCKED_STATE = 'unlocked';

/**
 * Records the maintenance lock state this process has applied (its acknowledgement), with a beat:
 * the process is alive. Through the pool, or the lock's own connection while the pool is closed.
 */
export async function recordLockState(db: Knex, engine: Engine, identity: InstanceIdentity, state: string): Promise<void> {
  await db(TABLE).where({ instance_id: identity.instanceId, boot_id: identity.bootId }).update({ lock_state: state, last_seen: toDbTime(engine, new Date()) });
}

/**
 * The live processes (a beat within MISSED_BEATS of their interval) that do not show `state`: those
 * a lock or un-lock still waits for. A process without a beat that recent is not waited for.
 */
export async function processesNotIn(db: Knex, state: string, nowMs: number): Promise<string[]> {
  const rows = await db(TABLE).select('instance_id', 'last_seen', 'beat_ms', 'lock_state');
  return rows
    .filter((row) => row.lock_state !== state && nowMs - (fromDbTime(row.last_seen)?.getTime() ?? 0) <= MISSED_BEATS * (Number(row.beat_ms) || 1000))
    .map((row) => String(row.instance_id));
}
