/**
 * Stock of every part at every location, moved only through `move()`, which writes the
 * inventory history row (invhst) with the quantity after the movement. Costing is weighted
 * average per part: receipts and revaluations change the average (hstavg rows), issues take
 * stock out at the average. Every movement's value is what the caller posts to the location's
 * inventory account, so the ledger's inventory accounts equal the sum of the histories.
 */
import { Dec } from '../../src/storage/decimal';
import { FISCAL_YEAR, periodOf, USERS } from './books';
import type { Ctx } from './context';
import { money, price, qty, r2, r4, stamp, ZERO } from './util';

export const MOVE = { receipt: 1, transferOut: 2, transferIn: 3, consumed: 4, loss: 5, revaluation: 6, count: 7 } as const;

export interface StockCell {
  qty: Dec;
  held: Dec;
  onOrder: Dec;
  min: Dec;
  max: Dec;
  bin: string | null;
}

export interface Movement {
  part: number;
  location: number;
  /** Signed quantity: positive into the location. */
  quantity: Dec;
  /** Signed value posted to the location's inventory account. */
  value: Dec;
  type: number;
  date: string;
  source: number;
  sourceRecord: number | null;
  entered?: string;
  user?: string;
  year?: number;
  period?: number;
}

export class Inventory {
  private readonly cells = new Map<number, Map<number, StockCell>>();
  private readonly partQty = new Map<number, Dec>();
  private readonly partValue = new Map<number, Dec>();
  readonly lastCost = new Map<number, Dec>();
  /** Parts stocked per location (for picking). */
  private readonly atLocation = new Map<number, number[]>();
  /** Period-end snapshots: `period` -> part -> location -> [qty, value]. */
  readonly snapshots = new Map<number, Array<{ part: number; location: number; qty: Dec; value: Dec; avg: Dec }>>();

  constructor(private readonly ctx: Ctx) {}

  cell(part: number, location: number): StockCell {
    let byLoc = this.cells.get(part);
    if (!byLoc) {
      byLoc = new Map();
      this.cells.set(part, byLoc);
    }
    let c = byLoc.get(location);
    if (!c) {
      c = { qty: ZERO, held: ZERO, onOrder: ZERO, min: ZERO, max: ZERO, bin: null };
      byLoc.set(location, c);
      const list = this.atLocation.get(location) ?? [];
      list.push(part);
      this.atLocation.set(location, list);
    }
    return c;
  }

  partsAt(location: number): number[] {
    return this.atLocation.get(location) ?? [];
  }

  available(part: number, location: number): Dec {
    const c = this.cells.get(part)?.get(location);
    return c ? c.qty.minus(c.held) : ZERO;
  }

  average(part: number): Dec {
    const q = this.partQty.get(part) ?? ZERO;
    const v = this.partValue.get(part) ?? ZERO;
    if (q.isZero()) return this.lastCost.get(part) ?? this.ctx.parts[part - 1]!.cost;
    return r4(v.div(q));
  }

  /** Value of taking `quantity` out of a part's stock at the average (the remainder when it is all of it). */
  issueValue(part: number, quantity: Dec): Dec {
    const q = this.partQty.get(part) ?? ZERO;
    const v = this.partValue.get(part) ?? ZERO;
    if (quantity.gte(q)) return v;
    const value = r2(quantity.times(v).div(q));
    return value.gt(v) ? v : value;
  }

  /** Applies a movement, writes invhst, and keeps the average (hstavg when it changes). */
  move(m: Movement): void {
    const c = this.cell(m.part, m.location);
    const before = this.average(m.part);
    c.qty = c.qty.plus(m.quantity);
    if (c.qty.isNegative()) throw new Error(`inventory: part ${m.part} at location ${m.location} would go negative`);
    const totalQty = (this.partQty.get(m.part) ?? ZERO).plus(m.quantity);
    const totalValue = (this.partValue.get(m.part) ?? ZERO).plus(m.value);
    this.partQty.set(m.part, totalQty);
    this.partValue.set(m.part, totalValue);
    const entered = m.entered ?? m.date;
    const user = m.user ?? USERS[2]!;
    const recnum = this.ctx.books.recnum('invhst');
    const unit = m.quantity.isZero() ? ZERO : r4(m.value.div(m.quantity).abs());
    this.ctx.add('invhst', {
      _idnum: this.ctx.uuid(),
      recnum,
      prtnum: m.part,
      locnum: m.location,
      trndte: m.date,
      mvttyp: m.type,
      hstqty: qty(m.quantity),
      untcst: price(unit),
      extcst: money(m.value),
      balqty: qty(c.qty),
      srcnum: m.source,
      srcrec: m.sourceRecord,
      entdte: entered,
      usrnme: user,
      actprd: m.period ?? periodOf(m.date),
      postyr: m.year ?? FISCAL_YEAR,
      insdte: stamp(entered, 7 * 60 + (recnum % 600)),
      upddte: stamp(entered, 7 * 60 + (recnum % 600)),
      insusr: user,
      updusr: user,
    });
    if (m.type === MOVE.receipt || m.type === MOVE.revaluation || m.type === MOVE.count) {
      const after = this.average(m.part);
      if (m.quantity.gt(0) && m.type === MOVE.receipt) this.lastCost.set(m.part, m.quantity.isZero() ? unit : unit);
      if (!after.equals(before) && m.type !== MOVE.count) {
        this.ctx.add('hstavg', {
          _idnum: this.ctx.uuid(),
          recnum: this.ctx.books.recnum('hstavg'),
          prtnum: m.part,
          chgdte: m.date,
          prvavg: price(before),
          newavg: price(after),
          qtyohn: qty(totalQty),
          srcnum: m.source,
          srcrec: m.sourceRecord,
          ...this.ctx.audit(entered, 7 * 60 + (recnum % 600), user),
        });
      }
    }
  }

  /** Records the stock of every cell at the end of a period (inventory balances). */
  snapshot(period: number): void {
    const rows: Array<{ part: number; location: number; qty: Dec; value: Dec; avg: Dec }> = [];
    for (const [part, byLoc] of this.cells) {
      const avg = this.average(part);
      for (const [location, c] of byLoc) {
        if (c.qty.isZero()) continue;
        rows.push({ part, location, qty: c.qty, value: r2(c.qty.times(avg)), avg });
      }
    }
    this.snapshots.set(period, rows);
  }

  /** Every cell, for invqty. */
  *allCells(): Generator<[number, number, StockCell]> {
    for (const [part, byLoc] of this.cells) for (const [location, c] of byLoc) yield [part, location, c];
  }

  /** Total value per location account (for checks of the opening entry). */
  partTotals(part: number): { qty: Dec; value: Dec } {
    return { qty: this.partQty.get(part) ?? ZERO, value: this.partValue.get(part) ?? ZERO };
  }
}
