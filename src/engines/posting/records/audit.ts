import type { PostingContext } from '../context';

/**
 * The audit columns of the accounting database, set on every row this service writes, here and
 * nowhere else: who inserted a row (`insusr`), who changed it last (`updusr`) and when (`upddte`;
 * the upddte triggers keep it too: db/migrations/20261122000004_upddte_triggers.ts). They are not
 * in the catalog (no entity publishes them), so a build without them is reported by the database
 * (needs.ts, rule 4). The ledger balance upsert (storage/balances.ts) stamps its own rows.
 */

/** Stamps of an inserted row. */
export function insertStamps(user: string): { insusr: string; updusr: string } {
  return { insusr: user, updusr: user };
}

/** Stamps of an updated row. */
export function updateStamps(ctx: Pick<PostingContext, 'now' | 'user'>): { upddte: Date | string; updusr: string } {
  return { upddte: ctx.now, updusr: ctx.user };
}
