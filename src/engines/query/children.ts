/**
 * Step 3b: child collections for the whole page, ONE statement per collection (keys chunked
 * only beyond 1000, which a page never exceeds), no bound on the number of child rows. Every
 * record gets an array (empty when it has no children), in the child order column's order.
 */
import type { ChildDef } from '../../catalog/types';
import type { QueryDialect, SnapshotReader } from '../../storage/dialect';
import { childSubject, recordDecoder, type PublishedRecord } from './envelope';
import { childQueries } from './sql';

/** Normalised form of a key for matching children to parents (uuid case differs by driver). */
export function keyOf(raw: unknown): string {
  return String(raw).toLowerCase();
}

export async function attachChildren(
  reader: SnapshotReader,
  qd: QueryDialect,
  entity: string,
  children: readonly ChildDef[],
  parentKeys: unknown[],
  records: PublishedRecord[],
): Promise<void> {
  if (children.length === 0) return;
  for (const child of children) {
    const byParent = new Map<string, PublishedRecord[]>();
    for (const key of parentKeys) byParent.set(keyOf(key), []);
    if (parentKeys.length > 0) {
      const decode = recordDecoder(qd, Object.values(child.fields), childSubject(entity, child));
      for (const query of childQueries(reader.db, child, parentKeys)) {
        const rows = await reader.all(query);
        for (const row of rows) byParent.get(keyOf(row[child.parentColumn]))?.push(decode(row));
      }
    }
    records.forEach((record, i) => {
      record[child.name] = byParent.get(keyOf(parentKeys[i])) ?? [];
    });
  }
}
