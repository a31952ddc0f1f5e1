import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { components } from '../../../../generated/api-types';
import { Dec } from '../../../storage/decimal';
import { SCALE, type PostingContext } from '../context';
import { readAllRecords, readRecordsById } from '../read-back';
import { insertChunked } from './journal';

/** Job cost records (jobcst) created by a posting cascade. */

export interface JobCostToWrite {
  recordNumber: number;
  jobNumber: number;
  phaseNumber: number | null;
  costCode: Dec;
  costType: number;
  transactionDate: string;
  description: string;
  sourceNumber: number;
  documentNumber: string | null;
  sourceRecordNumber: number | null;
  sourceLineNumber: number | null;
  vendorNumber: number | null;
  employeeNumber?: number | null;
  equipmentNumber: number | null;
  costAmount: Dec;
  costHours?: Dec;
  enteredDate: string | null;
  period: number;
  year: number;
}

/** A job cost as POST /job-costs/query returns it (every field of the contract's JobCost). */
export type PostedJobCost = Required<components['schemas']['JobCost']>;

/** Inserts the job costs and returns them read back through the catalog (read-back.ts), in input order. */
export async function writeJobCosts(ctx: PostingContext, costs: JobCostToWrite[]): Promise<PostedJobCost[]> {
  const { dialect } = ctx;
  const rows = costs.map((c) => ({
    _idnum: randomUUID(),
    recnum: c.recordNumber,
    jobnum: c.jobNumber,
    phsnum: c.phaseNumber,
    cstcde: dialect.encodeDecimal(c.costCode, SCALE.costCode),
    csttyp: c.costType,
    trndte: c.transactionDate,
    dscrpt: c.description,
    srcnum: c.sourceNumber,
    docnum: c.documentNumber,
    srcrec: c.sourceRecordNumber,
    srclin: c.sourceLineNumber,
    vndnum: c.vendorNumber,
    empnum: c.employeeNumber ?? null,
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
  }));
  await insertChunked(ctx.trx, 'jobcst', rows);
  return (await readRecordsById(ctx.trx, 'job-costs', rows.map((r) => r._idnum))) as unknown as PostedJobCost[];
}

/** Job costs a document created (by source and the document's record number), by line then record number. */
export async function readJobCostsOf(db: Knex | Knex.Transaction, sourceNumber: number, sourceRecordNumber: number): Promise<PostedJobCost[]> {
  const filters = {
    and: [
      { match: { field: 'sourceNumber', operator: '=', value: sourceNumber } },
      { match: { field: 'sourceRecordNumber', operator: '=', value: sourceRecordNumber } },
    ],
  };
  return (await readAllRecords(db, 'job-costs', filters, { orderBy: ['sourceLineNumber ASC', 'recordNumber ASC'] })) as unknown as PostedJobCost[];
}
