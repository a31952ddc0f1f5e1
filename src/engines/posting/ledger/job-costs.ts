import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { Dec, decToJson } from '../../../storage/decimal';
import type { Dialect } from '../../../storage/dialect';
import { toIsoDate } from '../../../storage/db-time';
import { SCALE, type PostingContext } from '../context';
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

/** Published shape (the job-costs read model). */
export interface PostedJobCost {
  id: string;
  recordNumber: number;
  jobNumber: number;
  phaseNumber: number | null;
  costCode: number;
  costType: number;
  transactionDate: string;
  description: string;
  sourceNumber: number;
  documentNumber: string | null;
  sourceRecordNumber: number | null;
  sourceLineNumber: number | null;
  vendorNumber: number | null;
  employeeNumber: number | null;
  equipmentNumber: number | null;
  costAmount: number;
  costHours: number;
  status: number;
  enteredDate: string | null;
  enteredBy: string | null;
  period: number;
  year: number;
}

export async function writeJobCosts(ctx: PostingContext, costs: JobCostToWrite[]): Promise<PostedJobCost[]> {
  const { dialect } = ctx;
  const posted: PostedJobCost[] = [];
  const rows = costs.map((c) => {
    const id = randomUUID();
    const hours = c.costHours ?? new Dec(0);
    posted.push({
      id,
      recordNumber: c.recordNumber,
      jobNumber: c.jobNumber,
      phaseNumber: c.phaseNumber,
      costCode: decToJson(c.costCode),
      costType: c.costType,
      transactionDate: c.transactionDate,
      description: c.description,
      sourceNumber: c.sourceNumber,
      documentNumber: c.documentNumber,
      sourceRecordNumber: c.sourceRecordNumber,
      sourceLineNumber: c.sourceLineNumber,
      vendorNumber: c.vendorNumber,
      employeeNumber: c.employeeNumber ?? null,
      equipmentNumber: c.equipmentNumber,
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
  await insertChunked(ctx.trx, 'jobcst', rows);
  return posted;
}

const int = (raw: unknown) => (raw === null || raw === undefined ? null : Number(raw));

export function jobCostFromRow(row: Record<string, any>, dialect: Dialect): PostedJobCost {
  const dec = (raw: unknown, scale: number) => decToJson(dialect.decodeDecimal(raw, scale) ?? new Dec(0));
  return {
    id: String(row._idnum),
    recordNumber: Number(row.recnum),
    jobNumber: Number(row.jobnum),
    phaseNumber: int(row.phsnum),
    costCode: dec(row.cstcde, SCALE.costCode),
    costType: Number(row.csttyp),
    transactionDate: toIsoDate(row.trndte) ?? '',
    description: String(row.dscrpt ?? ''),
    sourceNumber: Number(row.srcnum),
    documentNumber: row.docnum ?? null,
    sourceRecordNumber: int(row.srcrec),
    sourceLineNumber: int(row.srclin),
    vendorNumber: int(row.vndnum),
    employeeNumber: int(row.empnum),
    equipmentNumber: int(row.eqpnum),
    costAmount: dec(row.cstamt, SCALE.money),
    costHours: dec(row.csthrs, SCALE.hours),
    status: Number(row.status),
    enteredDate: toIsoDate(row.entdte),
    enteredBy: row.usrnme ?? null,
    period: Number(row.actprd),
    year: Number(row.postyr),
  };
}

/** Job costs a document created (by source and the document's record number). */
export async function readJobCostsOf(db: Knex | Knex.Transaction, dialect: Dialect, sourceNumber: number, sourceRecordNumber: number): Promise<PostedJobCost[]> {
  const rows = await db('jobcst').where({ srcnum: sourceNumber, srcrec: sourceRecordNumber }).orderBy('srclin').orderBy('recnum');
  return rows.map((row: any) => jobCostFromRow(row, dialect));
}
