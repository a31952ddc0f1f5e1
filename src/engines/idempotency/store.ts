import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { Engine } from '../../storage/database';
import { fromDbTime, toDbTime } from '../../storage/db-time';
import { insertUnlessExists } from '../../storage/insert-or-ignore';
import { compiledOnce } from '../../storage/compiled-statements';
import { ownerGone, readBeat, type InstanceIdentity } from '../../storage/instance-heartbeat';

/**
 * Idempotency records (table `idmkey`, one row per API key + Idempotency-Key).
 *
 * States: `in_flight` (a request owns the key; its lease is `locked_until`), `completed` (the
 * response that was sent is stored and replayed), `unknown` (the write missed its deadline and
 * answered 504; replayed as 504 until the late posting records its real outcome).
 *
 * The row's `id` is the *attempt token*: the owner of the key is whoever holds the current id.
 * A takeover (the owner died: its lease expired) gives the row a new id, so the old owner's
 * final compare-and-set (`WHERE id = token`) no longer matches and its posting rolls back.
 *
 * Claims also record their owner process (`owner_instance`, `owner_boot`). A claim whose owner is
 * gone (its instance runs another boot, or stopped heart-beating: see instance-heartbeat.ts) is
 * taken over at once instead of after the lease. That is safe for the same reason as the lease:
 * taking over changes the token, and the old owner's completion is conditional on the token, in
 * the same transaction as its posting (docs/decisions/0029-several-processes-and-instances-on-one-database.md).
 */

export interface StoredResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export type ClaimResult =
  | { kind: 'claimed'; token: string; takeover: boolean }
  | { kind: 'completed'; response: StoredResponse; expiresAt: number }
  | { kind: 'unknown'; response: StoredResponse | null }
  | { kind: 'in_flight'; retryAfterSeconds: number }
  | { kind: 'reused' };

export interface ClaimRequest {
  /** API key id: keys are scoped to it. */
  scope: string;
  key: string;
  fingerprint: string;
}

export interface IdempotencyStore {
  /** Phase 1: its own short transaction; the unique (api key, idempotency key) decides races. */
  claim(request: ClaimRequest): Promise<ClaimResult>;
  /** Phase 2: inside the posting transaction; false when the token no longer owns the key. */
  complete(trx: Knex.Transaction, token: string, response: StoredResponse): Promise<boolean>;
  /** Records a response outside any posting transaction (the posting transaction itself broke). */
  completeAlone(token: string, response: StoredResponse): Promise<boolean>;
  /** After a 504: the record answers as unknown until the late outcome replaces it. */
  markUnknown(token: string, response: StoredResponse): Promise<void>;
  /** Forget an in-flight claim that will never post (unexpected failure, claim that came back late). */
  release(token: string): Promise<void>;
  /** Deletes expired records; returns how many. */
  purgeExpired(): Promise<number>;
}

export interface KnexIdempotencyStoreOptions {
  knex: Knex;
  engine: Engine;
  ttlHours: number;
  /** In-flight lease; a record in flight past it belongs to a dead owner and may be taken over. */
  leaseMs: number;
  /** Retry-After (seconds) of IDEMPOTENCY_KEY_IN_FLIGHT. */
  inFlightRetryAfterSeconds: number;
  /** The process claiming (recorded on its claims); without it claims have no owner and wait for the lease. */
  owner?: InstanceIdentity;
}

const TABLE = 'idmkey';
/** The completion's statement (`complete`), for storage/compiled-statements.ts: its SET columns in order. */
const COMPLETE_SHAPE = 'idmkey complete: state, status_code, response_headers, response_body, updated_at, locked_until where id, state in 2';

function parseResponse(row: any): StoredResponse | null {
  if (row.status_code === null || row.status_code === undefined || row.response_body === null || row.response_body === undefined) return null;
  let headers: Record<string, string> = {};
  try {
    headers = row.response_headers ? JSON.parse(String(row.response_headers)) : {};
  } catch {
    headers = {};
  }
  return { status: Number(row.status_code), headers, body: String(row.response_body) };
}

export class KnexIdempotencyStore implements IdempotencyStore {
  constructor(private readonly options: KnexIdempotencyStoreOptions) {}

  private now(at: Date = new Date()): Date | string {
    return toDbTime(this.options.engine, at);
  }

  private get knex(): Knex {
    return this.options.knex;
  }

  /** INSERT the in-flight row; false when a row with that (api key, key) exists already. */
  private async tryInsert(request: ClaimRequest, token: string): Promise<boolean> {
    const now = new Date();
    const row = {
      id: token,
      api_key_id: request.scope,
      idem_key: request.key,
      fingerprint: request.fingerprint,
      state: 'in_flight',
      created_at: this.now(now),
      updated_at: this.now(now),
      expires_at: this.now(new Date(now.getTime() + this.options.ttlHours * 3_600_000)),
      locked_until: this.now(new Date(now.getTime() + this.options.leaseMs)),
      ...this.ownerColumns(),
    };
    return insertUnlessExists(this.knex, TABLE, row, ['api_key_id', 'idem_key'], 'id');
  }

  private ownerColumns(): { owner_instance: string | null; owner_boot: string | null } {
    const owner = this.options.owner;
    return { owner_instance: owner?.instanceId ?? null, owner_boot: owner?.bootId ?? null };
  }

  /** The claim's owner process is gone (restarted or silent): no need to wait for its lease. */
  private async ownerIsGone(row: any, now: number): Promise<boolean> {
    if (!row.owner_instance || !row.owner_boot) return false;
    if (this.options.owner && row.owner_boot === this.options.owner.bootId) return false;
    return ownerGone(String(row.owner_boot), await readBeat(this.knex, String(row.owner_instance)), now);
  }

  async claim(request: ClaimRequest): Promise<ClaimResult> {
    for (let attempt = 0; attempt < 5; attempt += 1) {
      const token = randomUUID();
      if (await this.tryInsert(request, token)) return { kind: 'claimed', token, takeover: false };
      const row = await this.knex(TABLE).where({ api_key_id: request.scope, idem_key: request.key }).first();
      if (!row) continue; // purged or released meanwhile: insert again
      const now = Date.now();
      const expiresAt = fromDbTime(row.expires_at)?.getTime() ?? 0;
      if (expiresAt <= now) {
        // An expired record is as good as absent (the purge just has not run yet).
        await this.knex(TABLE).where({ id: row.id }).del();
        continue;
      }
      if (row.fingerprint !== request.fingerprint) return { kind: 'reused' };
      if (row.state === 'completed') {
        const response = parseResponse(row);
        if (response) return { kind: 'completed', response, expiresAt };
      }
      const leaseUntil = fromDbTime(row.locked_until)?.getTime() ?? 0;
      if (leaseUntil > now && !(await this.ownerIsGone(row, now))) {
        if (row.state === 'unknown') return { kind: 'unknown', response: parseResponse(row) };
        return { kind: 'in_flight', retryAfterSeconds: this.options.inFlightRetryAfterSeconds };
      }
      // The owner is dead (lease expired, or its process is gone) while in flight or unknown: its
      // posting transaction never committed (it would have completed the record in the same
      // transaction), and a late commit of it finds another token here and rolls back. Take over.
      const taken = await this.knex(TABLE)
        .where({ id: row.id })
        .whereIn('state', ['in_flight', 'unknown'])
        .update({
          id: token,
          state: 'in_flight',
          status_code: null,
          response_headers: null,
          response_body: null,
          updated_at: this.now(),
          locked_until: this.now(new Date(Date.now() + this.options.leaseMs)),
          ...this.ownerColumns(),
        });
      if (Number(taken) === 1) return { kind: 'claimed', token, takeover: true };
      // Someone else completed or took it over between our read and our update: look again.
    }
    throw new Error('idempotency claim did not settle after 5 attempts');
  }

  private completion(response: StoredResponse) {
    return {
      state: 'completed',
      status_code: response.status,
      response_headers: JSON.stringify(response.headers),
      response_body: response.body,
      updated_at: this.now(),
      locked_until: null,
    };
  }

  async complete(trx: Knex.Transaction, token: string, response: StoredResponse): Promise<boolean> {
    const completion = this.completion(response);
    // In every keyed posting's transaction: compiled once (storage/compiled-statements.ts); SET binds before WHERE.
    const statement = trx(TABLE).where({ id: token }).whereIn('state', ['in_flight', 'unknown']).update(completion);
    const n = await compiledOnce(statement, COMPLETE_SHAPE, [...Object.values(completion), token, 'in_flight', 'unknown']);
    return Number(n) === 1;
  }

  async completeAlone(token: string, response: StoredResponse): Promise<boolean> {
    const n = await this.knex(TABLE).where({ id: token }).whereIn('state', ['in_flight', 'unknown']).update(this.completion(response));
    return Number(n) === 1;
  }

  async markUnknown(token: string, response: StoredResponse): Promise<void> {
    await this.knex(TABLE)
      .where({ id: token, state: 'in_flight' })
      .update({
        state: 'unknown',
        status_code: response.status,
        response_headers: JSON.stringify(response.headers),
        response_body: response.body,
        updated_at: this.now(),
      });
  }

  async release(token: string): Promise<void> {
    await this.knex(TABLE).where({ id: token }).whereIn('state', ['in_flight', 'unknown']).del();
  }

  async purgeExpired(): Promise<number> {
    const n = await this.knex(TABLE).where('expires_at', '<', this.now()).del();
    return Number(n);
  }
}
