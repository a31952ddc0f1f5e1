/**
 * The reference change counter (`refchg`) also counts changes to cost codes (`cstcde`) and job
 * phases (`jobphs`): the posting engine caches them too, by code and by job
 * (src/storage/reference-cache.ts `grouped`). No posting writes these tables; a change by anyone
 * else bumps the counter in its own transaction and the next posting reads them again.
 */
import { countChangesOf } from './20261124000041_reference_change_counter';
import type { AlterStep, TableStep } from './support/schema';

export const GROUPED_REFERENCE_TABLES: readonly string[] = ['cstcde', 'jobphs'];

export const steps: TableStep[] = [];
export const alterations: AlterStep[] = [];

export const { up, down } = countChangesOf(GROUPED_REFERENCE_TABLES);
