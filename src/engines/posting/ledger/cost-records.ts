import { randomUUID } from 'node:crypto';
import { Dec } from '../../../storage/decimal';
import { SCALE, type PostingContext } from '../context';
import { readRecordsById } from '../read-back';
import type { PublishedRecord } from '../../query/envelope';
import { insertChunked } from './journal';

/**
 * The one writer shape of the cost records a posting cascade creates (job costs, jobcst, and
 * equipment costs, eqpcst): the columns both tables share, the insert, and the read-back through
 * the catalog (read-back.ts) in input order. Each kind adds only its own columns.
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

/** Inserts one row per cost (the shared columns plus `own(cost)`) and returns them read back via `entityName`. */
export async function writeCostRecords<C extends CostRecordToWrite>(
  ctx: PostingContext,
  table: string,
  entityName: string,
  costs: C[],
  own: (cost: C) => Record<string, unknown>,
): Promise<PublishedRecord[]> {
  const { dialect } = ctx;
  const rows = costs.map((c) => ({
    _idnum: randomUUID(),
    recnum: c.recordNumber,
    trndte: c.transactionDate,
    dscrpt: c.description,
    srcnum: c.sourceNumber,
    docnum: c.documentNumber,
    srcrec: c.sourceRecordNumber,
    srclin: c.sourceLineNumber,
    vndnum: c.vendorNumber,
    eqpnum: c.equipmentNumber,
    cstamt: dialect.encodeDecimal(c.costAmount, SCALE.money),
    csthrs: dialect.encodeDecimal(c.costHours ?? new Dec(0), SCALE.hours),
    status: 1,
    entdte: c.enteredDate,
    usrnme: ctx.user,
    actprd: c.period,
    postyr: c.year,
    insusr: ctx.user,
    updusr: ctx.user,
    ...own(c),
  }));
  await insertChunked(ctx.trx, table, rows);
  return readRecordsById(ctx.trx, entityName, rows.map((r) => r._idnum));
}
