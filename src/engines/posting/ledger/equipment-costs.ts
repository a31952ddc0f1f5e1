import { randomUUID } from 'node:crypto';
import { Dec, decToJson } from '../../../storage/decimal';
import { SCALE, type PostingContext } from '../context';
import { insertChunked } from './journal';

/** Equipment cost records (eqpcst) created by a posting cascade (payroll shop labor, equipment-expense lines). */

export interface EquipmentCostToWrite {
  recordNumber: number;
  equipmentNumber: number;
  transactionDate: string;
  /** 1 Fuel, 2 Repairs, 3 Depreciation, 4 Insurance, 5 Labor, 6 Other. */
  costCategory: number;
  description: string;
  sourceNumber: number;
  documentNumber: string | null;
  sourceRecordNumber: number | null;
  sourceLineNumber: number | null;
  vendorNumber: number | null;
  /** The equipment-expense account the ledger line went to. */
  ledgerAccount: number | null;
  costAmount: Dec;
  costHours?: Dec;
  enteredDate: string | null;
  period: number;
  year: number;
}

/** Published shape (the equipment-costs read model). */
export interface PostedEquipmentCost {
  id: string;
  recordNumber: number;
  equipmentNumber: number;
  transactionDate: string;
  costCategory: number;
  description: string;
  sourceNumber: number;
  documentNumber: string | null;
  sourceRecordNumber: number | null;
  sourceLineNumber: number | null;
  vendorNumber: number | null;
  ledgerAccount: number | null;
  costAmount: number;
  costHours: number;
  status: number;
  enteredDate: string | null;
  enteredBy: string | null;
  period: number;
  year: number;
}

export async function writeEquipmentCosts(ctx: PostingContext, costs: EquipmentCostToWrite[]): Promise<PostedEquipmentCost[]> {
  const { dialect } = ctx;
  const posted: PostedEquipmentCost[] = [];
  const rows = costs.map((c) => {
    const id = randomUUID();
    const hours = c.costHours ?? new Dec(0);
    posted.push({
      id,
      recordNumber: c.recordNumber,
      equipmentNumber: c.equipmentNumber,
      transactionDate: c.transactionDate,
      costCategory: c.costCategory,
      description: c.description,
      sourceNumber: c.sourceNumber,
      documentNumber: c.documentNumber,
      sourceRecordNumber: c.sourceRecordNumber,
      sourceLineNumber: c.sourceLineNumber,
      vendorNumber: c.vendorNumber,
      ledgerAccount: c.ledgerAccount,
      costAmount: decToJson(c.costAmount),
      costHours: decToJson(hours),
      status: 1,
      enteredDate: c.enteredDate,
      enteredBy: ctx.user,
      period: c.period,
      year: c.year,
    });
    return {
      _idnum: id,
      recnum: c.recordNumber,
      eqpnum: c.equipmentNumber,
      trndte: c.transactionDate,
      cstcat: c.costCategory,
      dscrpt: c.description,
      srcnum: c.sourceNumber,
      docnum: c.documentNumber,
      srcrec: c.sourceRecordNumber,
      srclin: c.sourceLineNumber,
      vndnum: c.vendorNumber,
      lgract: c.ledgerAccount,
      cstamt: dialect.encodeDecimal(c.costAmount, SCALE.money),
      csthrs: dialect.encodeDecimal(hours, SCALE.hours),
      status: 1,
      entdte: c.enteredDate,
      usrnme: ctx.user,
      actprd: c.period,
      postyr: c.year,
      insusr: ctx.user,
      updusr: ctx.user,
    };
  });
  await insertChunked(ctx.trx, 'eqpcst', rows);
  return posted;
}
