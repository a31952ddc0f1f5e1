/**
 * Shared state of one seed run: the writer, the books, independent random streams per area,
 * and the master data the document generators draw from.
 */
import type { Dec } from '../../src/storage/decimal';
import { Books, FISCAL_YEAR, periodOf, USERS } from './books';
import { Prng } from './prng';
import type { BatchWriter, Row } from './writer';
import { stamp } from './util';

export interface Vendor {
  num: number;
  name: string;
  kind: number;
  account: number;
  costType: number;
  costCode: string;
  terms: number;
  subcontractor: boolean;
}

export interface Client {
  num: number;
  name: string;
  terms: number;
  service: boolean;
  taxDistrict: number;
}

export interface Job {
  num: number;
  name: string;
  client: number;
  status: number;
  start: string;
  end: string;
  phases: number[];
  /** Cost codes (text, 3 places) used by this job, with their phase. */
  codes: Array<{ code: string; phase: number }>;
  contract: Dec;
  retainagePct: Dec;
  supervisor: number | null;
  taxDistrict: number;
  state: string;
  jobType: number;
  billing: 'progress' | 'tm';
  /** Location number of the job-site store, if any. */
  siteLocation: number | null;
}

export interface Employee {
  num: number;
  first: string;
  last: string;
  trade: string;
  role: 'field' | 'foreman' | 'mechanic' | 'service' | 'office';
  hourly: boolean;
  rate: Dec;
  salary: Dec;
  paygroup: number;
  department: number;
  workersComp: number;
  union: number | null;
  hire: string;
  termination: string | null;
  retirementPct: Dec;
  health: Dec;
  /** Current job assignment of field staff. */
  job: number | null;
  truck: number | null;
}

export interface Equipment {
  num: number;
  name: string;
  type: number;
  rate: Dec;
  costCode: string;
  cost: Dec;
  vehicle: boolean;
  job: number | null;
}

export interface Part {
  num: number;
  code: string;
  name: string;
  unit: string;
  cls: number;
  cost: Dec;
  price: Dec;
  vendor: number;
  costCode: string;
  serialized: boolean;
  /** Last price-book edit (upddte). */
  edited: string;
}

export interface Location {
  num: number;
  name: string;
  type: 1 | 2 | 3;
  account: number;
  job: number | null;
}

export interface ServiceLocation {
  num: number;
  client: number;
  taxDistrict: number;
}

export class Ctx {
  readonly books: Books;
  readonly vendors: Vendor[] = [];
  readonly vendorsByKind = new Map<number, Vendor[]>();
  readonly clients: Client[] = [];
  readonly jobs: Job[] = [];
  readonly jobsByNum = new Map<number, Job>();
  readonly employees: Employee[] = [];
  readonly equipment: Equipment[] = [];
  readonly parts: Part[] = [];
  /** Parts by preferred vendor. */
  readonly partsByVendor = new Map<number, Part[]>();
  readonly locations: Location[] = [];
  readonly serviceLocations: ServiceLocation[] = [];
  readonly serviceLocationsByNum = new Map<number, ServiceLocation>();
  readonly serviceInventory = new Map<number, number[]>();
  readonly serviceContracts: Array<{ num: number; client: number; location: number; amount: Dec; frequency: number; start: string; end: string }> = [];
  readonly notes: string[] = [];
  /** Base (regular) rate of each paygroup. */
  readonly paygroupRates = new Map<number, Dec>();
  /** Planned cost of each job (budgets, percent complete, billing). */
  readonly plannedCost = new Map<number, Dec>();
  /** Employee deductions (payded); year-to-date amounts accumulate during payroll. */
  readonly payrollDeductions: Array<{ emp: number; calc: number; rate: Dec; amount: Dec; description: string; ytd?: Dec }> = [];
  /** Ledger budget per `account|period` (net change, debit positive). */
  readonly budgets = new Map<string, Dec>();
  /** Tax district -> rate (percent). */
  readonly taxRates = new Map<number, Dec>();
  /** Vendors of payroll remittances. */
  special = { taxAgency: 0, stateAgency: 0, union: 0, benefits: 0, cardIssuers: [] as Array<{ num: number; vendor: number; account: number }> };
  private readonly streams = new Map<string, Prng>();

  constructor(
    readonly w: BatchWriter,
    readonly scale: number,
    readonly randomSeed: number,
  ) {
    this.books = new Books(w, new Prng(randomSeed).fork('ids'));
  }

  /** Independent random stream of an area. */
  rnd(label: string): Prng {
    let r = this.streams.get(label);
    if (!r) {
      r = new Prng(this.randomSeed).fork(label);
      this.streams.set(label, r);
    }
    return r;
  }

  /**
   * How many documents of a kind today: `perDay` at scale 1, times the scale, varied by +-60%
   * and rounded at random (so that small scales still get some).
   */
  daily(r: Prng, perDay: number): number {
    const x = perDay * this.scale * (0.4 + r.next() * 1.2);
    const whole = Math.floor(x);
    return whole + (r.next() < x - whole ? 1 : 0);
  }

  /** Count scaled from the scale-1 figure (at least `min`). */
  n(base: number, min = 1): number {
    return Math.max(min, Math.round(base * this.scale));
  }

  uuid(): string {
    return this.books.uuid();
  }

  private readonly roleCache = new Map<string, Employee[]>();

  /** Employees of a role (the list is fixed once masters are made). */
  employeesByRole(role: Employee['role']): Employee[] {
    let list = this.roleCache.get(role);
    if (!list) {
      list = this.employees.filter((e) => e.role === role);
      this.roleCache.set(role, list);
    }
    return list;
  }

  has(table: string): boolean {
    return this.w.hasTable(table);
  }

  /** Adds a row when the table exists (optional tables of the schema). */
  add(table: string, row: Row): void {
    if (this.w.hasTable(table)) this.w.add(table, row);
  }

  /** Audit stamps of master data entered on `date`. */
  audit(date: string, minute = 9 * 60, user = USERS[1]!): Row {
    const ts = stamp(date, minute);
    return { insdte: ts, upddte: ts, insusr: user, updusr: user };
  }

  /** Transaction columns of a document dated `date`, entered `entered` (default same day). */
  txn(date: string, entered?: string, user?: string, minute?: number, updated?: string): Row {
    const ent = entered ?? date;
    const u = user ?? USERS[0]!;
    const min = minute ?? 8 * 60 + 30;
    return {
      entdte: ent,
      usrnme: u,
      actprd: periodOf(date),
      postyr: FISCAL_YEAR,
      insdte: stamp(ent, min),
      upddte: stamp(updated ?? ent, updated ? 16 * 60 + (min % 60) : min),
      insusr: u,
      updusr: u,
    };
  }

  job(num: number): Job {
    const j = this.jobsByNum.get(num);
    if (!j) throw new Error(`no job ${num}`);
    return j;
  }

  private activeCache: { date: string; jobs: Job[] } = { date: '', jobs: [] };

  private siteCache: { date: string; jobs: Job[] } = { date: '', jobs: [] };

  /** Running jobs with a job-site store. */
  activeSiteJobs(date: string): Job[] {
    if (this.siteCache.date !== date) this.siteCache = { date, jobs: this.activeJobs(date).filter((j) => j.siteLocation) };
    return this.siteCache.jobs;
  }

  /** Jobs under way on `date` (current, or complete but not yet finished then). Cached per day. */
  activeJobs(date: string): Job[] {
    if (this.activeCache.date !== date) {
      this.activeCache = { date, jobs: this.jobs.filter((j) => (j.status === 4 || j.status === 5) && j.start <= date && date <= j.end) };
    }
    return this.activeCache.jobs;
  }
}
