import type { Knex } from 'knex';
import type { components } from '../../../../../generated/api-types';
import type { PostedLedgerTransaction } from '../../ledger/journal';
import type { PostedJobCost } from '../../ledger/job-costs';
import type { PostedEquipmentCost } from '../../ledger/equipment-costs';
import { readRecordsById, type FullRecord } from '../../records';

/**
 * POST /payroll-records/post, the result: the batch's records as the payroll-records query returns
 * them, its totals, its journal, job costs and equipment costs (each read back through the catalog).
 */

/** A posted payroll record as POST /payroll-records/query returns it (the contract's PayrollRecord, without lines). */
export type PostedPayrollRecord = FullRecord<Omit<components['schemas']['PayrollRecord'], 'lines'>>;

export interface PostedPayrollBatch {
  periodEndDate: string | null;
  checkDate: string;
  recordCount: number;
  grossPay: number;
  deductions: number;
  netPay: number;
  employerBurden: number;
  records: PostedPayrollRecord[];
  equipmentCosts: PostedEquipmentCost[];
}

export interface PayrollPostResult {
  document: PostedPayrollBatch;
  ledgerTransaction: PostedLedgerTransaction;
  jobCosts: PostedJobCost[];
  inventory: never[];
  period: number;
  year: number;
}

/** The records as the payroll-records query returns them (engines/query/read-records.ts), in batch order. */
export async function readPayrollRecords(trx: Knex.Transaction, ids: readonly string[]): Promise<PostedPayrollRecord[]> {
  return (await readRecordsById(trx, 'payroll-records', ids)) as unknown as PostedPayrollRecord[];
}
