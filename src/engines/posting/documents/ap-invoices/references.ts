import type { Dec } from '../../../../storage/decimal';
import type { PostingContext } from '../../context';
import type { LedgerSetup } from '../../ledger/period';
import { ReferenceCheck, checkCostCodesAndTypes, loadReferenceRows, phasesOfJobs } from '../../ledger/references';
import type { StoredRecord } from '../../records';
import { jobOf, phaseOf, type ApInvoiceInput, type ApLineInput } from './input';

/**
 * POST /ap-invoices, the references: vendor, jobs and phases, ledger accounts (with the
 * defaults and the account rules), cost codes and types, equipment. 404 when missing, 422 when
 * not postable, every finding at once.
 */

/** Account types that carry job costs: 3 WIP asset, 9 Direct expense. */
const JOB_ACCOUNT_TYPES = new Set([3, 9]);
/** Account type 10, Equipment expense (the equipment subsidiary ledger): its lines carry equipment costs. */
const EQUIPMENT_ACCOUNT_TYPE = 10;
/** Job status 6: closed; phase status 3: closed. */
const JOB_CLOSED = 6;
const PHASE_CLOSED = 3;
/** The vendor's fields an invoice uses (all cached: storage/reference-cache.ts). */
const VENDOR_FIELDS = ['inactive', 'defaultLedgerAccount', 'defaultCostCode', 'defaultCostType', 'termsDays', 'shortName', 'vendorName'];

export interface ResolvedLine {
  line: ApLineInput;
  ledgerAccount: number;
  jobNumber: number | null;
  phaseNumber: number | null;
  costCode: Dec | null;
  costType: number | null;
  equipmentNumber: number | null;
  /** The line's account is an equipment-expense account: the line writes an equipment cost (decision 0430). */
  equipmentExpense: boolean;
  /** What the line debits: extended total + its sales tax. */
  amount: Dec;
}

/**
 * How a line on an equipment-expense account that names no equipment is refused (422). An AP
 * invoice names `lines[i].equipmentNumber` (required); a document whose lines cannot carry an
 * equipment number (a PO receipt) names its own field.
 */
export type MissingEquipment = (check: ReferenceCheck, line: ApLineInput, ledgerAccount: number) => void;

const equipmentRequired: MissingEquipment = (check, line, ledgerAccount) =>
  check.notPostable(`lines[${line.index}].equipmentNumber`, `ledger account ${ledgerAccount} is an equipment-expense account: the line needs an equipment number`, 'required');

/** Looks up every referenced record, applies the defaults and the account rules. */
export async function resolveLines(
  ctx: PostingContext,
  input: ApInvoiceInput,
  setup: LedgerSetup,
  options: { missingEquipment?: MissingEquipment } = {},
): Promise<{ lines: ResolvedLine[]; vendor: StoredRecord }> {
  const missingEquipment = options.missingEquipment ?? equipmentRequired;
  const check = new ReferenceCheck();

  const vendors = await loadReferenceRows(ctx, 'vendors', [{ field: 'vendorNumber', value: input.vendorNumber }], VENDOR_FIELDS);
  const vendor = vendors.get(String(input.vendorNumber));
  if (!vendor) {
    check.notFound('vendorNumber', `vendor ${input.vendorNumber}`);
    check.throwIfAny();
  }
  if (vendor!.inactive) check.notPostable('vendorNumber', `vendor ${input.vendorNumber} is inactive`, 'inactive');
  const vendorAccount: number | null = vendor!.defaultLedgerAccount;
  const vendorCostCode: Dec | null = vendor!.defaultCostCode;
  const vendorCostType: number | null = vendor!.defaultCostType;

  // Jobs and phases (header and lines).
  const jobRefs = [
    ...(input.jobNumber !== undefined ? [{ field: 'jobNumber', value: input.jobNumber }] : []),
    ...input.lines.filter((l) => l.jobNumber !== undefined).map((l) => ({ field: `lines[${l.index}].jobNumber`, value: l.jobNumber! })),
  ];
  const jobs = await loadReferenceRows(ctx, 'jobs', jobRefs, ['status']);
  for (const ref of jobRefs) {
    const job = jobs.get(String(ref.value));
    if (!job) check.notFound(ref.field, `job ${ref.value}`);
    else if (job.status === JOB_CLOSED) check.notPostable(ref.field, `job ${ref.value} is closed`, 'closed');
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
    const byJob = await phasesOfJobs(ctx, phaseRefs.map((p) => p.job));
    const phases = new Map([...byJob.values()].flat().map((r) => [`${r.jobNumber}/${r.phaseNumber}`, r]));
    for (const ref of phaseRefs) {
      if (!jobs.has(String(ref.job))) continue;
      const phase = phases.get(`${ref.job}/${ref.phase}`);
      if (!phase) check.notFound(ref.field, `phase ${ref.phase} of job ${ref.job}`);
      else if (phase.status === PHASE_CLOSED) check.notPostable(ref.field, `phase ${ref.phase} of job ${ref.job} is closed`, 'closed');
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
      equipmentNumber: line.equipmentNumber ?? null,
      equipmentExpense: false,
      amount: line.extendedTotal.plus(line.salesTax),
    };
  });
  resolved.forEach((r) => {
    if (r.ledgerAccount === 0) check.notPostable(`lines[${r.line.index}].ledgerAccount`, 'no ledger account given and the vendor has no default', 'required');
  });
  const accountRefs = resolved.filter((r) => r.ledgerAccount !== 0).map((r) => ({ field: `lines[${r.line.index}].ledgerAccount`, value: r.ledgerAccount }));
  const accounts = await loadReferenceRows(ctx, 'ledger-accounts', accountRefs, ['accountType', 'inactive']);
  for (const r of resolved) {
    if (r.ledgerAccount === 0) continue;
    const field = `lines[${r.line.index}].ledgerAccount`;
    const account = accounts.get(String(r.ledgerAccount));
    if (!account) {
      check.notFound(field, `ledger account ${r.ledgerAccount}`);
      continue;
    }
    if (account.inactive) check.notPostable(field, `ledger account ${r.ledgerAccount} is inactive`, 'inactive');
    const jobAccount = JOB_ACCOUNT_TYPES.has(account.accountType);
    if (r.jobNumber !== null && !jobAccount) {
      check.notPostable(field, `job line on ledger account ${r.ledgerAccount}, which is not a direct expense or WIP account`, 'not_job_account');
    } else if (r.jobNumber === null && jobAccount) {
      check.notPostable(`lines[${r.line.index}].jobNumber`, `ledger account ${r.ledgerAccount} is a direct expense or WIP account: the line needs a job`, 'required');
    }
    // What the ledger posts to the equipment subsidiary ledger is an equipment cost of a unit, as
    // what it posts to direct expense / WIP is a job cost (domain notes, "How it posts").
    if (account.accountType === EQUIPMENT_ACCOUNT_TYPE) {
      r.equipmentExpense = true;
      if (r.equipmentNumber === null) missingEquipment(check, r.line, r.ledgerAccount);
    }
    if (r.jobNumber !== null) {
      if (r.costCode === null) check.notPostable(`lines[${r.line.index}].costCode`, 'a job line needs a cost code and the vendor has no default', 'required');
      if (r.costType === null) check.notPostable(`lines[${r.line.index}].costType`, 'a job line needs a cost type and the vendor has no default', 'required');
    }
  }
  await checkCostCodesAndTypes(ctx, check, resolved);
  const equipmentRefs = input.lines.filter((l) => l.equipmentNumber !== undefined).map((l) => ({ field: `lines[${l.index}].equipmentNumber`, value: l.equipmentNumber! }));
  if (equipmentRefs.length > 0) {
    const equipment = await loadReferenceRows(ctx, 'equipment', equipmentRefs, []);
    for (const ref of equipmentRefs) if (!equipment.has(String(ref.value))) check.notFound(ref.field, `equipment ${ref.value}`);
  }
  check.throwIfAny();
  return { lines: resolved, vendor: vendor! };
}
