import type { Knex } from 'knex';
import type { components } from '../../../../generated/api-types';
import type { Pending } from '../../../storage/statement-batch';
import type { PostingContext } from '../context';
import { readAllRecords } from '../records';
import { writeCostRecords, type CostRecordToWrite } from './cost-records';

/** Equipment cost records (eqpcst) created by a posting cascade (payroll shop labor, equipment-expense lines). */

export interface EquipmentCostToWrite extends CostRecordToWrite {
  equipmentNumber: number;
  /** 1 Fuel, 2 Repairs, 3 Depreciation, 4 Insurance, 5 Labor, 6 Other. */
  costCategory: number;
  /** The equipment-expense account the ledger line went to. */
  ledgerAccount: number | null;
}

/** An equipment cost as POST /equipment-costs/query returns it (every field of the contract's EquipmentCost). */
export type PostedEquipmentCost = Required<components['schemas']['EquipmentCost']>;

/** Queues the equipment costs' insert and returns them read back through the catalog, in input order. */
export function writeEquipmentCosts(ctx: PostingContext, costs: EquipmentCostToWrite[]): Pending<PostedEquipmentCost[]> {
  return writeCostRecords(ctx, 'equipment-costs', costs, (c) => ({ costCategory: c.costCategory, ledgerAccount: c.ledgerAccount })).map(
    (posted) => posted as unknown as PostedEquipmentCost[],
  );
}

/** Equipment costs a document created (by source and the document's record number), by line then record number. */
export async function readEquipmentCostsOf(db: Knex | Knex.Transaction, sourceNumber: number, sourceRecordNumber: number): Promise<PostedEquipmentCost[]> {
  const filters = {
    and: [
      { match: { field: 'sourceNumber', operator: '=', value: sourceNumber } },
      { match: { field: 'sourceRecordNumber', operator: '=', value: sourceRecordNumber } },
    ],
  };
  return (await readAllRecords(db, 'equipment-costs', filters, { orderBy: ['sourceLineNumber ASC', 'recordNumber ASC'] })) as unknown as PostedEquipmentCost[];
}
