import { randomUUID } from 'node:crypto';
import { Dec } from '../../../storage/decimal';
import type { PostingContext } from '../context';
import type { PublishedRecord } from '../../query/envelope';
import type { Pending } from '../../../storage/statement-batch';
import { insertRecordsReturning, recordRow, type PublishedValue } from '../records';

/**
 * The one writer shape of the cost records a posting cascade creates (job costs, jobcst, and
 * equipment costs, eqpcst): the fields both tables share, the insert, and the read-back through
 * the catalog in input order. Each kind adds only its own columns.
 */

/** Fields every cost record of a posting carries. */
export interface CostRecordToWrite {
  recordNumber: number;
  transactionDate: string;
  description: string;
  sourceNumber: number;
  documentNumber: string | null;
  sourceRecordNumber: number | null;
  sourceLineNumber: number | null;
  vendorNumber: number | null;
  equipmentNumber: number | null;
  costAmount: Dec;
  costHours?: Dec;
  enteredDate: string | null;
  period: number;
  year: number;
}

/**
 * Inserts one row per cost (the shared fields plus `own(cost)`, all in published names, into the
 * entity's table through the catalog: records/rows.ts) and returns them as stored (the insert's
 * RETURNING, decoded as a read of `entityName` would: records/insert.ts insertRecordsReturning).
 */
export function writeCostRecords<C extends CostRecordToWrite>(
  ctx: PostingContext,
  entityName: string,
  costs: C[],
  own: (cost: C) => Record<string, PublishedValue>,
): Pending<PublishedRecord[]> {
  const ids = costs.map(() => randomUUID());
  const rows = costs.map((c, i) =>
    recordRow(ctx, entityName, {
      id: ids[i]!,
      recordNumber: c.recordNumber,
      transactionDate: c.transactionDate,
      description: c.description,
      sourceNumber: c.sourceNumber,
      documentNumber: c.documentNumber,
      sourceRecordNumber: c.sourceRecordNumber,
      sourceLineNumber: c.sourceLineNumber,
      vendorNumber: c.vendorNumber,
      equipmentNumber: c.equipmentNumber,
      costAmount: c.costAmount,
      costHours: c.costHours ?? new Dec(0),
      status: 1,
      enteredDate: c.enteredDate,
      enteredBy: ctx.user,
      period: c.period,
      year: c.year,
      ...own(c),
    }),
  );
  // Inserted and read back in the same statement(s), queued in the posting's batch: records/insert.ts insertRecordsReturning.
  return insertRecordsReturning(ctx.writes, entityName, rows);
}
