/**
 * The demo company: Cascade Ridge Builders, a general contractor with a service department,
 * books of fiscal year 2026 open in period 11 (November). Deterministic: the same scale and
 * random seed give the same rows on every engine.
 *
 *   seedDemoCompany(knex, { scale, randomSeed, onProgress })  seeds a migrated, empty database
 *   ensureSeeded(knex, options)                              seeds only when there are no ledger accounts
 *
 * The year is simulated day by day: documents post through one bookkeeping core (books.ts) so
 * that journals balance, balances equal the journal lines, job costs equal the job-coded
 * direct-expense lines, stock equals its movements, and invoices and orders agree with their
 * payments and receipts. test/db/seed-invariants.test.ts checks all of it from SQL.
 *
 * Conventions of the seeded data (where the schema leaves a choice):
 * - Ledger setup: fiscal year 2026 ending in December, current period 11 (November), period
 *   policy 2 (derive from the document date); opening balances are a journal of source 101 in
 *   period 12 of 2025; period 0 of 2026 holds one prior-year audit adjustment.
 * - A job cost leads to its journal through its source document: srcnum 11/13 -> acpinv,
 *   16 -> payrec, 23 -> invalc, 33 -> eqprev (srcrec = the document's recnum, whose lgrrec is
 *   the journal); srcnum 31 (direct job cost entries) has srcrec = the journal's recnum.
 *   Equipment depreciation (eqpcst, srcnum 28) likewise points to its journal.
 * - A PO receipt is a payable invoice (source 13, acpinv.ordnum = the order number) whose lines
 *   carry the order line's number (apivln.linnum = pcorln.linnum), so received-to-date is the
 *   sum of the receipt lines with that number.
 * - Payroll is biweekly (paid every other Friday); one journal per pay date for all its payroll
 *   records and paychecks (their lgrrec), with a line per job, per piece of equipment and per
 *   overhead account.
 * - AP, AR and service invoices post their full total (retainage included) to their control
 *   accounts, so a control account's balance equals the open balances of its invoices.
 * - Bank transactions exist for every cash line; statements January to October are reconciled.
 * - Ids are version-7 shaped uuids from the seeded generator (time-ordered: fast bulk loads).
 */
import { hasNoCompany } from '../../src/storage/database-state';
import type { Knex } from 'knex';
import { CATALOG } from '../../generated/catalog';
import { steps as coreSteps } from '../migrations/20261122000002_ledger_ap_jobcost_core';
import { steps as entitySteps } from '../migrations/20261122000003_entities';
import { CUTOFF_DATE } from './books';
import { Ctx } from './context';
import { cardStatement, createPurchaseOrder, dailyPayables, monthlyOverhead, runChecks, subcontractBilling } from './ap';
import { Receivables } from './ar';
import { patchMasters, writeBankReconciliations, writeInventory, writeLedgerBalances, writePayrollTotals, writeSequences } from './finish';
import { seedMasters, writeJobs } from './masters';
import { allocations, equipmentRevenue, LINE_OF_CREDIT_DATE, lineOfCreditDraw, monthEndOps, openingBalances } from './ops';
import { Payroll, taxDeposits } from './payroll';
import { Projects } from './projects';
import { seedSetup } from './setup';
import { Sim } from './sim';
import { addDays, daysBetween, lastDayOfMonth, weekday, ZERO } from './util';
import { BatchWriter } from './writer';
import { Dec } from '../../src/storage/decimal';

export interface SeedOptions {
  /** Volume multiplier (1: 400 parts and about 4,000 job costs; 250 gives 100,000 parts and a million job costs). */
  scale?: number;
  /** Seed of the pseudo-random generator (default 20261122). */
  randomSeed?: number;
  /** Receives progress lines: table, rows, elapsed seconds. */
  onProgress?: (line: string) => void;
  /**
   * Drop the non-unique secondary indexes of the entity tables while loading and build them
   * again at the end (bulk-load speed; unique constraints stay). Default: from scale 5 up.
   */
  dropIndexes?: boolean;
}

export interface SeedReport {
  scale: number;
  randomSeed: number;
  elapsedMs: number;
  totalRows: number;
  tables: Array<{ table: string; rows: number }>;
  journals: number;
  jobCosts: number;
  /** What the schema lacked or the seed had to fill in. */
  notes: string[];
  /** Time spent in insert statements, and how many ran (diagnostics). */
  dbMs: number;
  statements: number;
}

export const DEFAULT_RANDOM_SEED = 20261122;
/** Rows per batch group (transaction) of the simulated year. */
const GROUP_ROWS = 60_000;

/** Every table of the entity catalog (records and their line tables). */
export function entityTables(): string[] {
  const out: string[] = [];
  for (const e of Object.values(CATALOG)) {
    out.push(e.table);
    for (const c of Object.values(e.children)) out.push(c.table);
  }
  return [...new Set(out)];
}

/** Decimal scales of every catalogued column (the writer encodes with them). */
function catalogScales(): Map<string, Map<string, number>> {
  const out = new Map<string, Map<string, number>>();
  const add = (table: string, fields: Record<string, { column: string; kind: string; scale?: number }>) => {
    const m = out.get(table) ?? new Map<string, number>();
    for (const f of Object.values(fields)) if (f.kind === 'decimal' && f.scale !== undefined) m.set(f.column, f.scale);
    out.set(table, m);
  };
  for (const e of Object.values(CATALOG)) {
    add(e.table, e.fields);
    for (const c of Object.values(e.children)) add(c.table, c.fields);
  }
  return out;
}

/** Rows in the entity tables (the CLI refuses to seed a database that has any). */
export async function countEntityRows(knex: Knex): Promise<number> {
  let total = 0;
  for (const e of Object.values(CATALOG)) {
    if (!(await knex.schema.hasTable(e.table))) continue;
    const row = (await knex(e.table).count({ n: '*' }).first()) as { n: number | string } | undefined;
    total += Number(row?.n ?? 0);
  }
  return total;
}

/**
 * Deletes every row of the entity tables (children before parents: the reverse of the order the
 * migrations create them in) and their number sequences. Used by the CLI's --force.
 */
export async function clearEntityTables(knex: Knex): Promise<void> {
  const ordered = [...coreSteps, ...entitySteps].map((s) => s.table).reverse();
  await knex.transaction(async (trx) => {
    for (const table of ordered) if (await trx.schema.hasTable(table)) await trx(table).del();
    if (await trx.schema.hasTable('numseq')) await trx('numseq').whereIn('name', ordered).del();
  });
}

/**
 * Drops the secondary (non-unique, non-constraint) indexes of `tables` and returns the
 * statements that create them again, exactly as the migrations made them (SQLite keeps the
 * CREATE INDEX text; PostgreSQL gives it from pg_indexes). Other engines: nothing is dropped.
 */
async function dropSecondaryIndexes(knex: Knex, engine: string, tables: readonly string[]): Promise<string[]> {
  const wanted = new Set(tables);
  const recreate: string[] = [];
  if (engine === 'sqlite') {
    const rows = (await knex.raw(`select name, tbl_name, sql from sqlite_master where type = 'index' and sql is not null`)) as Array<{ name: string; tbl_name: string; sql: string }>;
    for (const r of rows) {
      if (!wanted.has(r.tbl_name) || /^\s*create\s+unique/i.test(r.sql)) continue;
      await knex.raw(`drop index "${r.name}"`);
      recreate.push(r.sql);
    }
  } else if (engine === 'postgres') {
    const result = await knex.raw(
      `select i.indexname, i.tablename, i.indexdef from pg_indexes i
        where i.schemaname = current_schema()
          and not exists (select 1 from pg_constraint c where c.conname = i.indexname)
          and i.indexdef not ilike 'create unique%'`,
    );
    for (const r of result.rows as Array<{ indexname: string; tablename: string; indexdef: string }>) {
      if (!wanted.has(r.tablename)) continue;
      await knex.raw(`drop index "${r.indexname}"`);
      recreate.push(r.indexdef);
    }
  }
  return recreate;
}

/** Seeds only when the database has no ledger accounts yet (first start of the embedded database). */
export async function ensureSeeded(knex: Knex, options: SeedOptions = {}): Promise<SeedReport | null> {
  if (!(await hasNoCompany(knex))) return null;
  return seedDemoCompany(knex, options);
}

export async function seedDemoCompany(knex: Knex, options: SeedOptions = {}): Promise<SeedReport> {
  const started = Date.now();
  const scale = options.scale ?? 1;
  if (!(scale > 0) || !Number.isFinite(scale)) throw new Error(`seed: scale must be a positive number (got ${scale})`);
  const randomSeed = options.randomSeed ?? DEFAULT_RANDOM_SEED;
  const w = new BatchWriter(knex, { scales: catalogScales(), ...(options.onProgress ? { onProgress: options.onProgress } : {}), startedAt: started });
  await w.describe([...entityTables(), 'numseq']);
  // SQLite: a large page cache while seeding (dozens of indexes on random uuids would otherwise
  // thrash the default 2 MB) and no fsync per checkpoint; restored at the end.
  const sqlite = w.engine === 'sqlite';
  if (sqlite) {
    await knex.raw('pragma cache_size = -262144');
    await knex.raw('pragma synchronous = OFF');
  }
  const dropped = (options.dropIndexes ?? scale >= 5) ? await dropSecondaryIndexes(knex, w.engine, entityTables()) : [];
  try {
    return await run();
  } finally {
    for (const sql of dropped) await knex.raw(sql);
    if (sqlite) {
      await knex.raw('pragma cache_size = -2000');
      await knex.raw('pragma synchronous = NORMAL');
    }
  }

  async function run(): Promise<SeedReport> {
  const ctx = new Ctx(w, scale, randomSeed);
  const sim = new Sim(ctx);
  const projects = new Projects(ctx);
  const payroll = new Payroll(sim);

  await w.group(() => seedSetup(ctx));
  await w.group(async () => {
    await seedMasters(ctx);
    writeJobs(ctx);
    projects.plan(sim);
    projects.openProposals();
  });
  w.report();
  await w.group(() => openingBalances(sim));

  const receivables = new Receivables(sim, projects.changes);
  const cardBalances = new Map<number, Dec>();
  payroll.assign('2025-12-22');
  // Batch groups: whole simulated weeks (Monday to Sunday) in one transaction, until about
  // GROUP_ROWS rows were written (at scale 1 the year is a few groups, at large scales a week each).
  let weekStart = '2025-12-29';
  while (weekStart <= CUTOFF_DATE) {
    await w.group(async () => {
      while (weekStart <= CUTOFF_DATE && w.pendingRows() < GROUP_ROWS) {
        for (let d = 0; d < 7; d++) {
          const date = addDays(weekStart, d);
          if (date < '2026-01-01' || date > CUTOFF_DATE) continue;
          simulateDay(date);
        }
        weekStart = addDays(weekStart, 7);
        await w.checkpoint();
      }
    });
    w.report();
  }

  function simulateDay(date: string): void {
    const wd = weekday(date);
    const business = wd >= 1 && wd <= 5;
    const day = Number(date.slice(8, 10));
    const month = Number(date.slice(5, 7));
    sim.today = date;
    if (wd === 1) payroll.assign(date);
    if (day === 1) receivables.contractBillings(date);
    if (business && (day <= 3 && isFirstBusinessDay(date))) monthlyOverhead(sim, date);
    if (business) {
      dailyPayables(sim, date);
      const r = ctx.rnd('po-days');
      const orders = ctx.daily(r, 0.22);
      for (let k = 0; k < orders; k++) createPurchaseOrder(sim, date);
      allocations(sim, date);
      receivables.serviceCalls(date);
    }
    if (day === 15) taxDeposits(sim, date);
    if (date === LINE_OF_CREDIT_DATE) lineOfCreditDraw(sim, date);
    if (day === 25) subcontractBilling(sim, date, projects.subcontracts);
    for (const issuer of ctx.special.cardIssuers) {
      if (day === (issuer.num === 1 ? 25 : 28)) cardBalances.set(issuer.num, cardStatement(sim, date, issuer, cardBalances.get(issuer.num) ?? ZERO));
    }
    sim.runDay(date);
    if (wd === 4) runChecks(sim, date);
    if (wd === 5) {
      // Payday every other Friday (2026-01-09, 01-23, ...) for the two weeks ending the Sunday before last.
      if ((daysBetween('2026-01-09', date) / 7) % 2 === 0) payroll.run(addDays(date, -18));
      // The cutoff Friday computes next Friday's payroll (status Computed), left for the API to post.
      else if (date === CUTOFF_DATE) payroll.run(addDays(date, -11), 'compute');
      equipmentRevenue(sim, addDays(date, -4));
    }
    if (date === lastDayOfMonth(2026, month)) {
      receivables.monthEnd(date);
      monthEndOps(sim, date);
      if (month === 10) sim.inv.snapshot(month);
    }
  }

  await w.group(() => {
    projects.writeSubcontracts();
    projects.writeCompletionReports(sim);
    writeLedgerBalances(ctx);
    writeInventory(sim);
    writePayrollTotals(ctx, payroll);
  });
  await w.group(async () => {
    const reconciled = writeBankReconciliations(sim);
    await w.flushAll();
    await patchMasters(sim, reconciled);
  });
  await w.group(() => writeSequences(ctx));
  w.report();

  const notes: string[] = [...ctx.notes];
  for (const [table, cols] of Object.entries(w.notes.droppedColumns)) notes.push(`schema lacks ${table}.${cols.join(', ')} (the seed's values were dropped)`);
  for (const [table, cols] of Object.entries(w.notes.filledColumns)) notes.push(`${table}.${cols.join(', ')}: NOT NULL without default and not provided by the seed (neutral value written)`);
  if (w.notes.missingTables.length) notes.push(`tables missing from the schema: ${w.notes.missingTables.join(', ')}`);
  if (w.notes.unknownScales.length) notes.push(`decimal columns without a known scale (written with 2): ${w.notes.unknownScales.join(', ')}`);
  if (w.notes.scaleMismatches.length) notes.push(`decimal scale differs from the seed's: ${w.notes.scaleMismatches.join('; ')}`);
  const empty = entityTables().filter((t) => w.hasTable(t) && !(w.counts.get(t) ?? 0));
  if (empty.length) notes.push(`entity tables left empty: ${empty.join(', ')}`);
  const tables = [...w.counts.entries()].map(([table, rows]) => ({ table, rows })).sort((a, b) => a.table.localeCompare(b.table));
  return {
    scale,
    randomSeed,
    elapsedMs: Date.now() - started,
    totalRows: tables.reduce((s, t) => s + t.rows, 0),
    tables,
    journals: ctx.books.stats.journals,
    jobCosts: ctx.books.stats.jobCosts,
    notes,
    dbMs: Number(w.dbNanos / 1_000_000n),
    statements: w.statements,
  };
  }
}

function isFirstBusinessDay(date: string): boolean {
  const first = `${date.slice(0, 8)}01`;
  for (let d = first; ; d = addDays(d, 1)) {
    const wd = weekday(d);
    if (wd >= 1 && wd <= 5) return d === date;
  }
}
