import type { Knex } from 'knex';
import type { components } from '../../../../generated/api-types';
import { Dec } from '../../../storage/decimal';
import type { Pending } from '../../../storage/statement-batch';
import type { PostingContext } from '../context';
import { readAllRecords } from '../records';
import { writeCostRecords, type CostRecordToWrite } from './cost-records';

/** Job cost records (jobcst) created by a posting cascade. */

export interface JobCostToWrite extends CostRecordToWrite {
  jobNumber: number;
  phaseNumber: number | null;
  costCode: Dec;
  costType: number;
  employeeNumber?: number | null;
}

/** A job cost as POST /job-costs/query returns it (every field of the contract's JobCost). */
export type PostedJobCost = Required<components['schemas']['JobCost']>;

/**
 * Queues the job costs' insert (sent with the posting's other writes when awaited) and returns
 * them read back through the catalog, in input order.
 */
export function writeJobCosts(ctx: PostingContext, costs: JobCostToWrite[]): Pending<PostedJobCost[]> {
  return writeCostRecords(ctx, 'job-costs', costs, (c) => ({
    jobNumber: c.jobNumber,
    phaseNumber: c.phaseNumber,
    costCode: c.costCode,
    costType: c.costType,
    employeeNumber: c.employeeNumber ?? null,
  })).map((posted) => posted as unknown as PostedJobCost[]);
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
