/**
 * The reference change counter (`refchg`, 20261124000041_reference_change_counter) now also counts
 * changes to vendors (`actpay`), jobs (`actrec`), cost types (`csttyp`) and equipment (`eqpmnt`):
 * the posting engine caches those rows too (src/storage/reference-cache.ts), so an AP invoice
 * reads one counter row instead of its vendor, jobs, cost types and equipment (fewer round trips,
 * issue 13). No posting writes these tables, so postings do not empty the cache; a change by
 * anyone else (the desktop system, a DBA, another instance) bumps the counter in its own
 * transaction and the next posting reads the rows again.
 */
import { countChangesOf } from './20261124000041_reference_change_counter';
import type { AlterStep, TableStep } from './support/schema';

export const MORE_REFERENCE_TABLES: readonly string[] = ['actpay', 'actrec', 'csttyp', 'eqpmnt'];

export const steps: TableStep[] = [];
export const alterations: AlterStep[] = [];

export const { up, down } = countChangesOf(MORE_REFERENCE_TABLES);
