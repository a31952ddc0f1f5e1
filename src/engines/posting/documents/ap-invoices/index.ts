import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { ApiProblem, type FieldError } from '../../../../errors/problem';
import { Dec, decToJson } from '../../../../storage/decimal';
import type { Dialect } from '../../../../storage/dialect';
import { toIsoDate } from '../../../../storage/db-time';
import type { NumberAllocator } from '../../../../storage/numbers';
import { SCALE, type PostingContext } from '../../context';
import { InputErrors, exactDecimal, uniqueLineNumbers, zero } from '../../input';
import { insertChunked, readPostedLedgerTransaction, writeJournal, type JournalLine, type PostedLedgerTransaction } from '../../ledger/journal';
import { readJobCostsOf, writeJobCosts, type JobCostToWrite, type PostedJobCost } from '../../ledger/job-costs';
import { readRecord } from '../../read-back';
import { loadPostingSetup, resolvePostingPeriod, type LedgerSetup } from '../../ledger/period';
import { ReferenceCheck, isTrue, loadReferenced } from '../../ledger/references';
import type { PostOutcome, WriteDefinition } from '../../runner';

/**
 * POST /ap-invoices: enters a payable invoice and, when it is Open, posts its cascade in the
 * same transaction (domain notes, "How it posts", source 11):
 *
 *   journal    each line debited to its ledger account (extended total + its sales tax);
 *              credited: the AP control account (invoice total - retainage when the ledger
 *              setup has a retainage payable account, which gets the retainage; else the total)
 *   job costs  one per job line (job, phase, cost code, cost type; amount = what the line debits)
 *   balances   lgrbal of the resolved period (through the journal)
 *
 * Status 2 (Review) stores the invoice and its lines only: no journal (the result has no
 * ledgerTransaction key), no job costs. Both statuses go through the same checks.
 */

export const AP_SOURCE = 11;
const STATUS_OPEN = 1;
const STATUS_REVIEW = 2;
const STATUS_VOID = 5;
/** Account types that carry job costs: 3 WIP asset, 9 Direct expense. */
const JOB_ACCOUNT_TYPES = new Set([3, 9]);

export interface ApLineInput {
  index: number;
  lineNumber: number;
  ledgerAccount?: number;
  description: string;
  jobNumber?: number;
  phaseNumber?: number;
  costCode?: Dec;
  costType?: number;
  equipmentNumber?: number;
  quantity?: Dec;
  unitPrice?: Dec;
  extendedTotal: Dec;
  salesTax: Dec;
}

export interface ApInvoiceInput {
  vendorNumber: number;
  invoiceNumber: string;
  invoiceDate: string;
  dueDate?: string;
  description: string;
  jobNumber?: number;
  phaseNumber?: number;
  orderNumber?: string;
  status: number;
  invoiceTotal: Dec;
  salesTax?: Dec;
  retainage: Dec;
  period?: number;
  year?: number;
  lines: ApLineInput[];
}

export interface PostedApInvoice {
  id: string;
  recordNumber: number;
  vendorNumber: number;
  invoiceNumber: string;
  invoiceDate: string;
  dueDate: string | null;
  description: string;
  jobNumber: number | null;
  phaseNumber: number | null;
  orderNumber: string | null;
  invoiceTotal: number;
  amountPaid: number;
  invoiceBalance: number;
  retainage: number;
  salesTax: number;
  status: number;
  enteredDate: string | null;
  enteredBy: string | null;
  period: number;
  year: number;
  ledgerRecordNumber: number | null;
  lines: Array<{
    id: string;
    lineNumber: number;
    ledgerAccount: number;
    description: string;
    jobNumber: number | null;
    phaseNumber: number | null;
    costCode: number | null;
    costType: number | null;
    equipmentNumber: number | null;
    quantity: number;
    unitPrice: number;
    extendedTotal: number;
    salesTax: number;
  }>;
}

export interface ApInvoiceWriteResult {
  document: PostedApInvoice;
  ledgerTransaction?: PostedLedgerTransaction;
  jobCosts: PostedJobCost[];
  inventory: never[];
  period: number;
  year: number;
}

interface Numbers {
  invoiceRecord: number;
  ledgerRecord: number | null;
  jobCostRecords: number[];
}

const optInt = (v: unknown): number | undefined => (v === undefined || v === null ? undefined : Number(v));

export function prepareApInvoice(body: unknown): ApInvoiceInput {
  const b = (body ?? {}) as Record<string, any>;
  const errors = new InputErrors();
  const rawLines: any[] = Array.isArray(b.lines) ? b.lines : [];
  const lines: ApLineInput[] = rawLines.map((l, i) => {
    const at = (f: string) => `lines[${i}].${f}`;
    const line: ApLineInput = {
      index: i,
      lineNumber: Number(l.lineNumber),
      description: typeof l.description === 'string' ? l.description : '',
      extendedTotal: exactDecimal(l.extendedTotal, at('extendedTotal'), SCALE.money, errors) ?? zero(),
      salesTax: exactDecimal(l.salesTax, at('salesTax'), SCALE.money, errors) ?? zero(),
    };
    const ledgerAccount = optInt(l.ledgerAccount);
    if (ledgerAccount !== undefined) line.ledgerAccount = ledgerAccount;
    const jobNumber = optInt(l.jobNumber);
    if (jobNumber !== undefined) line.jobNumber = jobNumber;
    const phaseNumber = optInt(l.phaseNumber);
    if (phaseNumber !== undefined) line.phaseNumber = phaseNumber;
    const costType = optInt(l.costType);
    if (costType !== undefined) line.costType = costType;
    const equipmentNumber = optInt(l.equipmentNumber);
    if (equipmentNumber !== undefined) line.equipmentNumber = equipmentNumber;
    const costCode = exactDecimal(l.costCode, at('costCode'), SCALE.costCode, errors);
    if (costCode) line.costCode = costCode;
    const quantity = exactDecimal(l.quantity, at('quantity'), SCALE.quantity, errors);
    if (quantity) line.quantity = quantity;
    const unitPrice = exactDecimal(l.unitPrice, at('unitPrice'), SCALE.price, errors);
    if (unitPrice) line.unitPrice = unitPrice;
    return line;
  });
  uniqueLineNumbers(lines, errors);
  const invoiceTotal = exactDecimal(b.invoiceTotal, 'invoiceTotal', SCALE.money, errors) ?? zero();
  const salesTax = exactDecimal(b.salesTax, 'salesTax', SCALE.money, errors);
  const retainage = exactDecimal(b.retainage, 'retainage', SCALE.money, errors) ?? zero();
  errors.throwIfAny();
  const input: ApInvoiceInput = {
    vendorNumber: Number(b.vendorNumber),
    invoiceNumber: String(b.invoiceNumber),
    invoiceDate: String(b.invoiceDate),
    description: typeof b.description === 'string' ? b.description : '',
    status: b.status === undefined ? STATUS_OPEN : Number(b.status),
    invoiceTotal,
    retainage,
    lines,
  };
  if (typeof b.dueDate === 'string') input.dueDate = b.dueDate;
  const jobNumber = optInt(b.jobNumber);
  if (jobNumber !== undefined) input.jobNumber = jobNumber;
  const phaseNumber = optInt(b.phaseNumber);
  if (phaseNumber !== undefined) input.phaseNumber = phaseNumber;
  if (typeof b.orderNumber === 'string') input.orderNumber = b.orderNumber;
  if (salesTax) input.salesTax = salesTax;
  if (b.period !== undefined) input.period = b.period;
  if (b.year !== undefined) input.year = b.year;
  return input;
}

const jobOf = (input: ApInvoiceInput, line: ApLineInput) => line.jobNumber ?? input.jobNumber;
const phaseOf = (input: ApInvoiceInput, line: ApLineInput) => line.phaseNumber ?? (line.jobNumber === undefined || line.jobNumber === input.jobNumber ? input.phaseNumber : undefined);

/** 422 TOTALS_DISAGREE / BUSINESS_RULE_VIOLATED decided from the body alone. */
export function checkApTotals(input: ApInvoiceInput): void {
  const errors: FieldError[] = [];
  const texts: string[] = [];
  let lineTotal = new Dec(0);
  let lineTax = new Dec(0);
  for (const line of input.lines) {
    lineTotal = lineTotal.plus(line.extendedTotal);
    lineTax = lineTax.plus(line.salesTax);
    if (line.quantity !== undefined && line.unitPrice !== undefined) {
      const extended = line.quantity.times(line.unitPrice).toDecimalPlaces(SCALE.money, Dec.ROUND_HALF_UP);
      if (!extended.equals(line.extendedTotal)) {
        errors.push({ field: `lines[${line.index}].extendedTotal`, code: 'totals_disagree', message: `quantity x unitPrice = ${extended.toFixed(2)}` });
        texts.push(`lines[${line.index}].extendedTotal is ${line.extendedTotal.toFixed(2)} but quantity x unitPrice is ${extended.toFixed(2)}`);
      }
    }
  }
  if (input.salesTax !== undefined && !input.salesTax.equals(lineTax)) {
    errors.push({ field: 'salesTax', code: 'totals_disagree', message: `sum of lines[].salesTax = ${lineTax.toFixed(2)}` });
    texts.push(`salesTax is ${input.salesTax.toFixed(2)} but the lines carry ${lineTax.toFixed(2)}`);
  }
  const expected = lineTotal.plus(lineTax);
  if (!expected.equals(input.invoiceTotal)) {
    errors.push({ field: 'invoiceTotal', code: 'totals_disagree', message: `sum of lines[].extendedTotal + salesTax = ${expected.toFixed(2)}` });
    texts.push(`invoiceTotal is ${input.invoiceTotal.toFixed(2)} but the lines add up to ${expected.toFixed(2)} (extended ${lineTotal.toFixed(2)} + tax ${lineTax.toFixed(2)})`);
  }
  if (errors.length > 0) throw new ApiProblem('TOTALS_DISAGREE', `The totals disagree with the lines: ${texts.join('; ')}.`, { errors });
  if (input.retainage.greaterThan(input.invoiceTotal)) {
    throw new ApiProblem('BUSINESS_RULE_VIOLATED', `retainage ${input.retainage.toFixed(2)} exceeds invoiceTotal ${input.invoiceTotal.toFixed(2)}.`, {
      errors: [{ field: 'retainage', code: 'exceeds_total' }],
    });
  }
}

interface ResolvedLine {
  line: ApLineInput;
  ledgerAccount: number;
  jobNumber: number | null;
  phaseNumber: number | null;
  costCode: Dec | null;
  costType: number | null;
  /** What the line debits: extended total + its sales tax. */
  amount: Dec;
}

/** An AP invoice with its lines in the published shape, read back through the catalog (read-back.ts). */
export async function readApInvoice(db: Knex | Knex.Transaction, _dialect: Dialect, header: Record<string, any>): Promise<PostedApInvoice> {
  return readPostedApInvoice(db, String(header._idnum));
}

async function readPostedApInvoice(db: Knex | Knex.Transaction, id: string): Promise<PostedApInvoice> {
  const record = await readRecord(db, 'ap-invoices', id, { children: ['lines'] });
  if (!record) throw new Error(`AP invoice ${id} not found in its own transaction`);
  return record as unknown as PostedApInvoice;
}

/** Fields of the request that differ from the invoice already entered (empty when identical). */
function differences(existing: PostedApInvoice, input: ApInvoiceInput): string[] {
  const out: string[] = [];
  const same = (a: number | null, b: Dec | undefined) => b === undefined || (a !== null && new Dec(a).equals(b));
  if (existing.invoiceDate !== input.invoiceDate) out.push('invoiceDate');
  if (!new Dec(existing.invoiceTotal).equals(input.invoiceTotal)) out.push('invoiceTotal');
  if (!same(existing.salesTax, input.salesTax)) out.push('salesTax');
  if (!new Dec(existing.retainage).equals(input.retainage)) out.push('retainage');
  if (existing.status !== input.status) out.push('status');
  if (input.jobNumber !== undefined && existing.jobNumber !== input.jobNumber) out.push('jobNumber');
  if (input.dueDate !== undefined && existing.dueDate !== input.dueDate) out.push('dueDate');
  if (input.period !== undefined && input.year !== undefined && (existing.period !== input.period || existing.year !== input.year)) out.push('period');
  if (existing.lines.length !== input.lines.length) {
    out.push('lines');
    return out;
  }
  const byNumber = new Map(existing.lines.map((l) => [l.lineNumber, l]));
  for (const line of input.lines) {
    const other = byNumber.get(line.lineNumber);
    const differs =
      !other ||
      !new Dec(other.extendedTotal).equals(line.extendedTotal) ||
      !new Dec(other.salesTax).equals(line.salesTax) ||
      (line.ledgerAccount !== undefined && other.ledgerAccount !== line.ledgerAccount) ||
      (line.jobNumber !== undefined && other.jobNumber !== line.jobNumber) ||
      (line.phaseNumber !== undefined && other.phaseNumber !== line.phaseNumber) ||
      (line.costType !== undefined && other.costType !== line.costType) ||
      !same(other.costCode, line.costCode) ||
      !same(other.quantity, line.quantity) ||
      !same(other.unitPrice, line.unitPrice);
    if (differs) out.push(`lines[${line.index}]`);
  }
  return out;
}

async function existingResult(trx: Knex.Transaction, dialect: Dialect, header: Record<string, any>): Promise<ApInvoiceWriteResult> {
  const document = await readApInvoice(trx, dialect, header);
  const result: ApInvoiceWriteResult = {
    document,
    jobCosts: await readJobCostsOf(trx, dialect, AP_SOURCE, document.recordNumber),
    inventory: [],
    period: document.period,
    year: document.year,
  };
  if (document.ledgerRecordNumber !== null) {
    const journal = await trx('lgrtrn').where({ recnum: document.ledgerRecordNumber }).first('_idnum');
    if (journal) result.ledgerTransaction = await readPostedLedgerTransaction(trx, String(journal._idnum));
  }
  return result;
}

/** Looks up every referenced record, applies the defaults and the account rules. */
async function resolveLines(ctx: PostingContext, input: ApInvoiceInput, setup: LedgerSetup): Promise<{ lines: ResolvedLine[]; vendor: Record<string, any> }> {
  const { trx, dialect } = ctx;
  const check = new ReferenceCheck();

  const vendors = await loadReferenced(trx, 'actpay', 'recnum', [{ field: 'vendorNumber', value: input.vendorNumber }], ['inactv', 'dftact', 'dftcde', 'dfttyp', 'duedys', 'shtnme', 'vndnme']);
  const vendor = vendors.get(String(input.vendorNumber));
  if (!vendor) {
    check.notFound('vendorNumber', `vendor ${input.vendorNumber}`);
    check.throwIfAny();
  }
  if (isTrue(vendor!.inactv)) check.notPostable('vendorNumber', `vendor ${input.vendorNumber} is inactive`, 'inactive');
  const vendorAccount = vendor!.dftact === null || vendor!.dftact === undefined ? null : Number(vendor!.dftact);
  const vendorCostCode = dialect.decodeDecimal(vendor!.dftcde, SCALE.costCode);
  const vendorCostType = vendor!.dfttyp === null || vendor!.dfttyp === undefined ? null : Number(vendor!.dfttyp);

  // Jobs and phases (header and lines).
  const jobRefs = [
    ...(input.jobNumber !== undefined ? [{ field: 'jobNumber', value: input.jobNumber }] : []),
    ...input.lines.filter((l) => l.jobNumber !== undefined).map((l) => ({ field: `lines[${l.index}].jobNumber`, value: l.jobNumber! })),
  ];
  const jobs = await loadReferenced(trx, 'actrec', 'recnum', jobRefs, ['status']);
  for (const ref of jobRefs) {
    const job = jobs.get(String(ref.value));
    if (!job) check.notFound(ref.field, `job ${ref.value}`);
    else if (Number(job.status) === 6) check.notPostable(ref.field, `job ${ref.value} is closed`, 'closed');
  }
  const phaseRefs: Array<{ field: string; job: number; phase: number }> = [];
  if (input.jobNumber !== undefined && input.phaseNumber !== undefined) phaseRefs.push({ field: 'phaseNumber', job: input.jobNumber, phase: input.phaseNumber });
  if (input.jobNumber === undefined && input.phaseNumber !== undefined) check.notPostable('phaseNumber', 'a phase needs a jobNumber', 'requires_job');
  for (const line of input.lines) {
    const job = jobOf(input, line);
    const phase = phaseOf(input, line);
    if (line.phaseNumber !== undefined && job === undefined) check.notPostable(`lines[${line.index}].phaseNumber`, 'a phase needs a jobNumber', 'requires_job');
    if (job !== undefined && phase !== undefined && line.phaseNumber !== undefined) phaseRefs.push({ field: `lines[${line.index}].phaseNumber`, job, phase });
  }
  if (phaseRefs.length > 0) {
    const rows = await trx('jobphs').whereIn('jobnum', [...new Set(phaseRefs.map((p) => p.job))]).select('jobnum', 'phsnum', 'status');
    const phases = new Map(rows.map((r: any) => [`${Number(r.jobnum)}/${Number(r.phsnum)}`, r]));
    for (const ref of phaseRefs) {
      if (!jobs.has(String(ref.job))) continue;
      const phase = phases.get(`${ref.job}/${ref.phase}`);
      if (!phase) check.notFound(ref.field, `phase ${ref.phase} of job ${ref.job}`);
      else if (Number(phase.status) === 3) check.notPostable(ref.field, `phase ${ref.phase} of job ${ref.job} is closed`, 'closed');
    }
  }

  // Ledger accounts (with the defaults), cost codes and types, equipment.
  const resolved: ResolvedLine[] = input.lines.map((line) => {
    const job = jobOf(input, line) ?? null;
    const account = line.ledgerAccount ?? vendorAccount ?? (job !== null ? setup.directExpenseAccount : null);
    return {
      line,
      ledgerAccount: account ?? 0,
      jobNumber: job,
      phaseNumber: job === null ? null : (phaseOf(input, line) ?? null),
      costCode: job === null ? (line.costCode ?? null) : (line.costCode ?? vendorCostCode ?? null),
      costType: job === null ? (line.costType ?? null) : (line.costType ?? vendorCostType ?? null),
      amount: line.extendedTotal.plus(line.salesTax),
    };
  });
  resolved.forEach((r) => {
    if (r.ledgerAccount === 0) check.notPostable(`lines[${r.line.index}].ledgerAccount`, 'no ledger account given and the vendor has no default', 'required');
  });
  const accountRefs = resolved.filter((r) => r.ledgerAccount !== 0).map((r) => ({ field: `lines[${r.line.index}].ledgerAccount`, value: r.ledgerAccount }));
  const accounts = await loadReferenced(trx, 'lgract', 'recnum', accountRefs, ['acttyp', 'inactv']);
  for (const r of resolved) {
    if (r.ledgerAccount === 0) continue;
    const field = `lines[${r.line.index}].ledgerAccount`;
    const account = accounts.get(String(r.ledgerAccount));
    if (!account) {
      check.notFound(field, `ledger account ${r.ledgerAccount}`);
      continue;
    }
    if (isTrue(account.inactv)) check.notPostable(field, `ledger account ${r.ledgerAccount} is inactive`, 'inactive');
    const jobAccount = JOB_ACCOUNT_TYPES.has(Number(account.acttyp));
    if (r.jobNumber !== null && !jobAccount) {
      check.notPostable(field, `job line on ledger account ${r.ledgerAccount}, which is not a direct expense or WIP account`, 'not_job_account');
    } else if (r.jobNumber === null && jobAccount) {
      check.notPostable(`lines[${r.line.index}].jobNumber`, `ledger account ${r.ledgerAccount} is a direct expense or WIP account: the line needs a job`, 'required');
    }
    if (r.jobNumber !== null) {
      if (r.costCode === null) check.notPostable(`lines[${r.line.index}].costCode`, 'a job line needs a cost code and the vendor has no default', 'required');
      if (r.costType === null) check.notPostable(`lines[${r.line.index}].costType`, 'a job line needs a cost type and the vendor has no default', 'required');
    }
  }
  const codeRefs = resolved.filter((r) => r.costCode !== null).map((r) => ({ field: `lines[${r.line.index}].costCode`, value: r.costCode!.toFixed(SCALE.costCode) }));
  if (codeRefs.length > 0) {
    const encoded = [...new Set(codeRefs.map((c) => dialect.encodeDecimal(new Dec(c.value), SCALE.costCode)))];
    const rows = await trx('cstcde').whereIn('cstcde', encoded).select('cstcde', 'inactv');
    const codes = new Map(rows.map((r: any) => [dialect.decodeDecimal(r.cstcde, SCALE.costCode)!.toFixed(SCALE.costCode), r]));
    for (const ref of codeRefs) {
      const code = codes.get(ref.value);
      if (!code) check.notFound(ref.field, `cost code ${new Dec(ref.value).toFixed()}`);
      else if (isTrue(code.inactv)) check.notPostable(ref.field, `cost code ${new Dec(ref.value).toFixed()} is inactive`, 'inactive');
    }
  }
  const typeRefs = resolved.filter((r) => r.costType !== null).map((r) => ({ field: `lines[${r.line.index}].costType`, value: r.costType! }));
  const types = await loadReferenced(trx, 'csttyp', 'recnum', typeRefs, ['inactv']);
  for (const ref of typeRefs) {
    const type = types.get(String(ref.value));
    if (!type) check.notFound(ref.field, `cost type ${ref.value}`);
    else if (isTrue(type.inactv)) check.notPostable(ref.field, `cost type ${ref.value} is inactive`, 'inactive');
  }
  const equipmentRefs = input.lines.filter((l) => l.equipmentNumber !== undefined).map((l) => ({ field: `lines[${l.index}].equipmentNumber`, value: l.equipmentNumber! }));
  if (equipmentRefs.length > 0) {
    const equipment = await loadReferenced(trx, 'eqpmnt', 'recnum', equipmentRefs, []);
    for (const ref of equipmentRefs) if (!equipment.has(String(ref.value))) check.notFound(ref.field, `equipment ${ref.value}`);
  }
  check.throwIfAny();
  return { lines: resolved, vendor: vendor! };
}

function addDays(date: string, days: number): string {
  const d = new Date(`${date}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + days);
  return d.toISOString().slice(0, 10);
}

export const apInvoicesWrite: WriteDefinition<ApInvoiceInput, Numbers, ApInvoiceWriteResult> = {
  route: '/ap-invoices',
  what: 'entering an AP invoice',
  prepare: prepareApInvoice,

  async allocate(input, numbers: NumberAllocator): Promise<Numbers> {
    const posts = input.status === STATUS_OPEN;
    const jobLines = posts ? input.lines.filter((l) => jobOf(input, l) !== undefined).length : 0;
    const got = await numbers.allocateMany({ acpinv: 1, lgrtrn: posts ? 1 : 0, jobcst: jobLines });
    return {
      invoiceRecord: got.acpinv!.first,
      ledgerRecord: posts ? got.lgrtrn!.first : null,
      jobCostRecords: Array.from({ length: got.jobcst!.count }, (_, i) => got.jobcst!.first + i),
    };
  },

  async post(ctx, input, numbers): Promise<PostOutcome<ApInvoiceWriteResult>> {
    checkApTotals(input);
    const { trx, dialect } = ctx;
    const money = (v: Dec) => dialect.encodeDecimal(v, SCALE.money);

    // One vendor invoice number is entered once: serialise, then look.
    await ctx.lockName(`acpinv:${input.vendorNumber}:${input.invoiceNumber}`);
    const already = await trx('acpinv').where({ vndnum: input.vendorNumber, invnum: input.invoiceNumber }).whereNot({ status: STATUS_VOID }).orderBy('recnum').first();
    if (already) {
      const existing = await existingResult(trx, dialect, already);
      const diff = differences(existing.document, input);
      if (diff.length === 0) return { result: existing, duplicate: true };
      throw new ApiProblem(
        'DOCUMENT_NUMBER_CONFLICT',
        `Invoice ${input.invoiceNumber} of vendor ${input.vendorNumber} was already entered (AP invoice ${existing.document.recordNumber}) with different content: ${diff.join(', ')}.`,
        {
          errors: [{ field: 'invoiceNumber', code: 'already_entered' }, ...diff.map((field) => ({ field, code: 'differs' }))],
          extensions: { existingRecordNumber: existing.document.recordNumber },
        },
      );
    }

    const periodRequest = { date: input.invoiceDate, dateField: 'invoiceDate', period: input.period ?? null, year: input.year ?? null };
    const { setup, fiscal } = await loadPostingSetup(trx, periodRequest);
    const { lines, vendor } = await resolveLines(ctx, input, setup);
    const posts = input.status === STATUS_OPEN && input.invoiceTotal.greaterThan(0);
    if (posts) {
      const check = new ReferenceCheck();
      if (setup.apControlAccount === null) check.notPostable('vendorNumber', 'the ledger setup has no AP control account', 'setup_incomplete');
      const source = await trx('source').where({ recnum: AP_SOURCE }).first('recnum');
      if (!source) check.notPostable('status', `transaction source ${AP_SOURCE} (Payable Invoices) does not exist`, 'setup_incomplete');
      check.throwIfAny();
    }
    const { period, year } = await resolvePostingPeriod(trx, setup, periodRequest, fiscal);

    const invoiceId = randomUUID();
    const enteredDate = ctx.today;
    const dueDate = input.dueDate ?? addDays(input.invoiceDate, Number(vendor.duedys ?? 30));
    const salesTax = lines.reduce((sum, r) => sum.plus(r.line.salesTax), new Dec(0));
    const ledgerRecord = posts ? numbers.ledgerRecord : null;
    await trx('acpinv').insert({
      _idnum: invoiceId,
      recnum: numbers.invoiceRecord,
      vndnum: input.vendorNumber,
      invnum: input.invoiceNumber,
      invdte: input.invoiceDate,
      duedte: dueDate,
      dscrpt: input.description,
      jobnum: input.jobNumber ?? null,
      phsnum: input.phaseNumber ?? null,
      ordnum: input.orderNumber ?? null,
      invttl: money(input.invoiceTotal),
      amtpad: money(new Dec(0)),
      invbal: money(input.invoiceTotal),
      retain: money(input.retainage),
      taxamt: money(salesTax),
      status: input.status,
      entdte: enteredDate,
      usrnme: ctx.user,
      actprd: period,
      postyr: year,
      lgrrec: ledgerRecord,
      insusr: ctx.user,
      updusr: ctx.user,
    });
    const lineIds = lines.map(() => randomUUID());
    await insertChunked(
      trx,
      'apivln',
      lines.map((r, i) => ({
        _idnum: lineIds[i],
        _idref: invoiceId,
        linnum: r.line.lineNumber,
        lgract: r.ledgerAccount,
        dscrpt: r.line.description,
        jobnum: r.jobNumber,
        phsnum: r.phaseNumber,
        cstcde: r.costCode === null ? null : dialect.encodeDecimal(r.costCode, SCALE.costCode),
        csttyp: r.costType,
        eqpnum: r.line.equipmentNumber ?? null,
        linqty: dialect.encodeDecimal(r.line.quantity ?? new Dec(0), SCALE.quantity),
        linprc: dialect.encodeDecimal(r.line.unitPrice ?? new Dec(0), SCALE.price),
        extttl: money(r.line.extendedTotal),
        taxamt: money(r.line.salesTax),
        insusr: ctx.user,
        updusr: ctx.user,
      })),
    );

    const document = await readPostedApInvoice(trx, invoiceId);
    const result: ApInvoiceWriteResult = { document, jobCosts: [], inventory: [], period, year };
    if (!posts || input.status === STATUS_REVIEW) return { result };

    // The journal: lines debited, AP control (and retainage payable) credited.
    const journalLines: JournalLine[] = [];
    let n = 0;
    for (const r of lines) {
      if (r.amount.isZero()) continue;
      journalLines.push({
        lineNumber: (n += 1),
        ledgerAccount: r.ledgerAccount,
        description: (r.line.description || input.description).slice(0, 50),
        debit: r.amount,
        credit: new Dec(0),
        jobNumber: r.jobNumber,
        equipmentNumber: r.line.equipmentNumber ?? null,
      });
    }
    const splitRetainage = input.retainage.greaterThan(0) && setup.retainagePayableAccount !== null;
    const apCredit = splitRetainage ? input.invoiceTotal.minus(input.retainage) : input.invoiceTotal;
    if (apCredit.greaterThan(0)) {
      journalLines.push({ lineNumber: (n += 1), ledgerAccount: setup.apControlAccount!, description: 'Accounts payable', debit: new Dec(0), credit: apCredit });
    }
    if (splitRetainage) {
      journalLines.push({ lineNumber: (n += 1), ledgerAccount: setup.retainagePayableAccount!, description: 'Retainage payable', debit: new Dec(0), credit: input.retainage });
    }
    result.ledgerTransaction = await writeJournal(ctx, {
      recordNumber: numbers.ledgerRecord!,
      transactionNumber: input.invoiceNumber,
      transactionDate: input.invoiceDate,
      enteredDate,
      description: (input.description || `${String(vendor.shtnme || vendor.vndnme || `Vendor ${input.vendorNumber}`)} ${input.invoiceNumber}`).slice(0, 50),
      sourceNumber: AP_SOURCE,
      period,
      year,
      lines: journalLines,
    });

    // A job cost per job line: the same amount the ledger posts to its direct expense / WIP account.
    const jobLines = lines.filter((r) => r.jobNumber !== null);
    const costs: JobCostToWrite[] = jobLines.map((r, i) => ({
      recordNumber: numbers.jobCostRecords[i]!,
      jobNumber: r.jobNumber!,
      phaseNumber: r.phaseNumber,
      costCode: r.costCode!,
      costType: r.costType!,
      transactionDate: input.invoiceDate,
      description: (r.line.description || input.description).slice(0, 50),
      sourceNumber: AP_SOURCE,
      documentNumber: input.invoiceNumber,
      sourceRecordNumber: numbers.invoiceRecord,
      sourceLineNumber: r.line.lineNumber,
      vendorNumber: input.vendorNumber,
      equipmentNumber: r.line.equipmentNumber ?? null,
      costAmount: r.amount,
      enteredDate,
      period,
      year,
    }));
    result.jobCosts = await writeJobCosts(ctx, costs);
    return { result };
  },
};
