/**
 * What a write needs of the installed build of the accounting database (the rule:
 * docs/decisions/0230-writes-on-an-older-build.md). Each part is checked where it is known:
 *
 *   1. the fields its result promises (the required list of each write-result record its 200
 *      answer holds: PostedApInvoice, PostedJobCost, ...): here, before any SQL;
 *   2. a column it stores a value in: write-rows.ts, before the insert is sent (a column it has
 *      nothing for is left out of the insert);
 *   3. the keys, links and columns its read-back filters or orders on: read-back.ts, by the query
 *      plan (422 before that statement);
 *   4. every other column its cascade reads or updates: the database reports it, the boundary
 *      answers 422 COLUMN_UNAVAILABLE.
 * In every case the posting's transaction rolls back (or never began): nothing is written.
 */
import { CATALOG } from '../../../generated/catalog';
import { OPERATIONS } from '../../../generated/operations';
import { installedView, type InstalledColumns } from '../../catalog/installed';

/** Write route -> the entities whose records its result holds (generated from openapi.yaml). */
const RESULT_ENTITIES = new Map(OPERATIONS.filter((op) => op.method === 'POST' && op.resultEntities).map((op) => [op.path, op.resultEntities!]));

/** The promised result fields (`entity.field`) of the write at `route` that the installed build lacks; undefined when none. */
export function resultFieldsUnavailable(route: string, installed: InstalledColumns | undefined): string[] | undefined {
  if (!installed || installed.generation === 0) return undefined;
  const names: string[] = [];
  for (const entityName of RESULT_ENTITIES.get(route) ?? []) {
    const entity = Object.hasOwn(CATALOG, entityName) ? CATALOG[entityName]! : undefined;
    if (!entity?.resultRequired) continue;
    const view = installedView(entity, installed);
    if (view === entity) continue;
    for (const field of entity.resultRequired) if (view.unavailable?.includes(field)) names.push(`${entityName}.${field}`);
  }
  return names.length > 0 ? names : undefined;
}
