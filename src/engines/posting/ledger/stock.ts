import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { ApiProblem, type FieldError } from '../../../errors/problem';
import type { components } from '../../../../generated/api-types';
import { Dec, decToJson } from '../../../storage/decimal';
import { SCALE, type PostingContext } from '../context';
import { decimalLimit, fitsDecimal } from '../limits';
import { allocateRecordNumbersIn, insertRecords, insertRecordsReturning, rangeValues, readAllRecords, recordRow, records } from '../records';

/**
 * Stock movements shared by every write that moves inventory (inventory allocations, source 23;
 * PO receipts, 13; service invoices, 22). One call applies a batch of movements atomically:
 *
 *   invqty    on hand (qtyohn) and available (qtyavl) per part and location; a missing row is
 *             created. Writers of one part are serialised by a lock on the part (taken in part
 *             order), so the quantities read are the quantities written over.
 *   invhst    one history row per movement that changes on hand or value (receipt, transfer,
 *             consumption, loss, revaluation, count), with the on-hand quantity after it. A
 *             movement of `available` only (a hold) writes none: the invariant "on hand = the sum
 *             of the histories" holds by construction.
 *   cost      weighted average per part, as the seed keeps it: the value of a part's stock is the
 *             sum of its history values (invhst.extcst); an issue takes quantity x value / on hand
 *             (all of the value when it takes all of the stock); a receipt adds quantity x unit
 *             cost; the average (tkfprt.avgcst and invqty.avgcst of the part) is value / on hand,
 *             and a hstavg row records every change of it.
 *   refusal   a movement that would take on hand or available below zero is 422
 *             INSUFFICIENT_STOCK, naming every such movement (errors[].field = `<field>.quantity`,
 *             `shortages[]` with the part, location, quantity asked and available); a part that
 *             does not exist is 404 REFERENCE_NOT_FOUND (`<field>.partNumber`). Negative stock is
 *             never allowed (docs/decisions/0017-inventory-allocations-and-stock-movements.md). Nothing is written before every check passed.
 *
 * The value of each movement is what the caller must post to the location's inventory account
 * (the seed invariant "inventory accounts = sum of the history values"). Call it BEFORE
 * writeJournal: the lock order is part locks, then ledger balance rows.
 */

/** invhst.mvttyp (inventory-histories movementType). */
export const MOVEMENT = { receipt: 1, transferOut: 2, transferIn: 3, consumed: 4, loss: 5, revaluation: 6, count: 7 } as const;

export interface StockMovement {
  /** JSON path of the input line the movement comes from (`lines[2]`), for errors[]. */
  field: string;
  partNumber: number;
  locationNumber: number;
  /** MOVEMENT.* (invhst.mvttyp). */
  movementType: number;
  /** Signed quantity: positive into the location, negative out of it; 0 for a revaluation. */
  quantity: Dec;
  /** Changes on hand (and writes a history row). */
  onHand: boolean;
  /** Changes available. A hold is `{ onHand: false, available: true }` with a negative quantity. */
  available: boolean;
  /** Incoming stock: cost per unit (value = quantity x unitCost, rounded to cents). Default: the current average. */
  unitCost?: Dec;
  /** Signed value of the movement when the caller knows it exactly (wins over unitCost). */
  value?: Dec;
  /** Index of an earlier movement of the same batch whose value, negated, this one carries (transfer in). */
  valueFrom?: number;
  /** Revaluation (quantity 0): the part's new average cost; the value is the difference it makes to the stock. */
  newAverageCost?: Dec;
  sourceNumber: number;
  /** Document number, for messages only (invhst has no column for it). */
  documentNumber?: string | null;
  sourceRecordNumber: number | null;
  transactionDate: string;
  /** entdte of the history row (default: today). */
  enteredDate?: string | null;
  period: number;
  year: number;
}

/** A movement as POST /inventory-histories/query returns it (the `inventory` array of a write result). */
export type PostedInventoryHistory = Required<components['schemas']['InventoryHistory']>;

export interface AppliedMovement {
  /** Signed value posted to the location's inventory account (0 for a hold). */
  value: Dec;
  /** Unit cost the movement was valued at (the new average for a revaluation). */
  unitCost: Dec;
  /** Its history row; null for a movement of available only. */
  history: PostedInventoryHistory | null;
}

export interface StockResult {
  /** One entry per movement, in input order. */
  applied: AppliedMovement[];
  /** The history rows written, in input order (the write result's `inventory`). */
  inventory: PostedInventoryHistory[];
}

interface Cell {
  id: string | null;
  onHand: Dec;
  available: Dec;
  changed: boolean;
}

interface PartState {
  quantity: Dec;
  value: Dec;
  /** tkfprt.avgcst as stored. */
  storedAverage: Dec;
  average: Dec;
  lastCost: Dec | null;
  /** The movement that last changed the average (for hstavg). */
  changedBy: StockMovement | null;
}

const r2 = (v: Dec) => v.toDecimalPlaces(SCALE.money, Dec.ROUND_HALF_UP);
const r4 = (v: Dec) => v.toDecimalPlaces(SCALE.price, Dec.ROUND_HALF_UP);
const cellKey = (part: number, location: number) => `${part}/${location}`;
const qtyText = (v: Dec) => v.toFixed();

export async function applyStockMovements(ctx: PostingContext, movements: readonly StockMovement[]): Promise<StockResult> {
  if (movements.length === 0) return { applied: [], inventory: [] };
  const { trx } = ctx;
  const orZero = (v: Dec | null) => v ?? new Dec(0);
  const parts = [...new Set(movements.map((m) => m.partNumber))].sort((a, b) => a - b);

  // Serialise the writers of each part (in part order: two batches never wait on each other in a cycle).
  for (const part of parts) await ctx.lockName(`stock:part:${part}`);

  const partRows = await records(ctx, 'parts').whereIn('recordNumber', parts).all(['recordNumber', 'averageCost', 'lastCost']);
  const state = new Map<number, PartState>();
  for (const row of partRows) {
    const average = orZero(row.averageCost);
    state.set(row.recordNumber, { quantity: new Dec(0), value: new Dec(0), storedAverage: average, average, lastCost: null, changedBy: null });
  }
  const unknown = movements.filter((m) => !state.has(m.partNumber));
  if (unknown.length > 0) {
    throw new ApiProblem('REFERENCE_NOT_FOUND', `Referenced records do not exist: ${unknown.map((m) => `${m.field}: part ${m.partNumber}`).join('; ')}.`, {
      errors: unknown.map((m) => ({ field: `${m.field}.partNumber`, code: 'not_found', message: `part ${m.partNumber} does not exist` })),
    });
  }
  const cells = new Map<string, Cell>();
  const quantities = records(ctx, 'inventory-quantities').whereIn('partNumber', parts);
  for (const row of await quantities.all(['id', 'partNumber', 'locationNumber', 'quantityOnHand', 'quantityAvailable'])) {
    const cell: Cell = { id: row.id, onHand: orZero(row.quantityOnHand), available: orZero(row.quantityAvailable), changed: false };
    cells.set(cellKey(row.partNumber, row.locationNumber), cell);
    const s = state.get(row.partNumber)!;
    s.quantity = s.quantity.plus(cell.onHand);
  }
  for (const { group, sum } of await records(ctx, 'inventory-histories').whereIn('partNumber', parts).sums('partNumber', 'extendedCost')) {
    state.get(group as number)!.value = orZero(sum);
  }

  const applied: AppliedMovement[] = [];
  const shortages: Array<{ movement: StockMovement; asked: Dec; available: Dec; what: 'available' | 'held' }> = [];
  const refused: FieldError[] = [];
  const histories: Array<{ movement: StockMovement; value: Dec; unitCost: Dec; after: Dec }> = [];
  /** The first quantity a movement would push past its column (decision 0441). */
  let exceeded: { movement: StockMovement; cell: Cell; field: 'quantityOnHand' | 'quantityAvailable'; before: Dec; after: Dec } | undefined;

  movements.forEach((m, index) => {
    const s = state.get(m.partNumber)!;
    const key = cellKey(m.partNumber, m.locationNumber);
    let cell = cells.get(key);
    if (!cell) {
      cell = { id: null, onHand: new Dec(0), available: new Dec(0), changed: false };
      cells.set(key, cell);
    }
    const q = m.quantity;
    // Stock taken out: refuse below zero (each movement sees what the earlier ones of the batch
    // left). A movement of on hand alone takes stock already held (available reduced before).
    if (q.isNegative()) {
      const asked = q.negated();
      if (m.available && cell.available.lessThan(asked)) shortages.push({ movement: m, asked, available: cell.available, what: 'available' });
      else if (m.onHand && !m.available && cell.onHand.minus(cell.available).lessThan(asked)) {
        shortages.push({ movement: m, asked, available: cell.onHand.minus(cell.available), what: 'held' });
      }
    } else if (m.available && !m.onHand && cell.available.plus(q).greaterThan(cell.onHand)) {
      throw new Error(`stock movement ${index}: releasing ${q.toFixed()} of part ${m.partNumber} at ${m.locationNumber} would make available exceed on hand`);
    }
    let value = new Dec(0);
    let unitCost = s.average;
    if (m.onHand) {
      if (m.newAverageCost !== undefined) {
        if (!s.quantity.greaterThan(0)) {
          refused.push({ field: m.field, code: 'no_stock', message: `part ${m.partNumber} has no stock on hand to revalue` });
        } else {
          value = r2(s.quantity.times(m.newAverageCost)).minus(s.value);
        }
        unitCost = m.newAverageCost;
      } else if (m.valueFrom !== undefined) {
        const earlier = applied[m.valueFrom];
        if (!earlier) throw new Error(`stock movement ${index}: valueFrom ${m.valueFrom} is not an earlier movement of the batch`);
        value = earlier.value.negated();
        unitCost = earlier.unitCost;
      } else if (m.value !== undefined) {
        value = m.value;
        unitCost = m.unitCost ?? (q.isZero() ? new Dec(0) : r4(value.div(q).abs()));
      } else if (q.greaterThan(0)) {
        unitCost = m.unitCost ?? s.average;
        value = r2(q.times(unitCost));
      } else if (q.isNegative()) {
        const out = q.negated();
        value = out.greaterThanOrEqualTo(s.quantity) ? s.value.negated() : r2(out.times(s.value).div(s.quantity)).negated();
        unitCost = r4(value.div(q).abs());
      }
      cell.onHand = cell.onHand.plus(q);
      s.quantity = s.quantity.plus(q);
      s.value = s.value.plus(value);
      if (m.movementType === MOVEMENT.receipt && m.unitCost !== undefined && q.greaterThan(0)) s.lastCost = m.unitCost;
      // The weighted average: value / on hand; kept as it was while the part has no stock.
      if (s.quantity.greaterThan(0)) {
        const average = r4(s.value.div(s.quantity));
        if (!average.equals(s.average)) {
          s.average = average;
          s.changedBy = m;
        }
      } else if (m.newAverageCost !== undefined) {
        s.average = m.newAverageCost;
        s.changedBy = m;
      }
      histories.push({ movement: m, value, unitCost, after: cell.onHand });
    }
    if (m.available) cell.available = cell.available.plus(q);
    // Computed here from the stored quantity, written as a value: past its column PostgreSQL would
    // refuse it naming no field and SQLite store it (unreadable then). 422 naming the quantity.
    if (!exceeded) {
      for (const [field, after, moved] of [['quantityOnHand', cell.onHand, m.onHand], ['quantityAvailable', cell.available, m.available]] as const) {
        if (moved && !fitsDecimal('inventory-quantities', field, after)) {
          exceeded = { movement: m, cell, field, before: after.minus(q), after };
          break;
        }
      }
    }
    cell.changed = true;
    applied.push({ value, unitCost, history: null });
  });

  if (shortages.length > 0) {
    const texts = shortages.map(
      (s) => `${s.movement.field}: part ${s.movement.partNumber} at location ${s.movement.locationNumber}: ${qtyText(s.asked)} asked, ${qtyText(s.available)} ${s.what}`,
    );
    throw new ApiProblem('INSUFFICIENT_STOCK', `Not enough stock: ${texts.join('; ')}.`, {
      errors: shortages.map((s) => ({
        field: `${s.movement.field}.quantity`,
        code: 'insufficient_stock',
        message: `part ${s.movement.partNumber} at location ${s.movement.locationNumber}: ${qtyText(s.asked)} asked, ${qtyText(s.available)} ${s.what}`,
      })),
      extensions: {
        shortages: shortages.map((s) => ({
          field: s.movement.field,
          partNumber: s.movement.partNumber,
          locationNumber: s.movement.locationNumber,
          quantityAsked: decToJson(s.asked),
          quantityAvailable: decToJson(s.available),
        })),
      },
    });
  }
  if (refused.length > 0) {
    throw new ApiProblem('BUSINESS_RULE_VIOLATED', `The stock cannot be moved: ${refused.map((e) => `${e.field}: ${e.message}`).join('; ')}.`, { errors: refused });
  }
  if (exceeded) throw exceededQuantity(exceeded);

  // Writes: history rows, quantities, averages.
  // History record numbers are taken here, under the part locks and inside the transaction: the
  // order of record numbers is then the order of the movements of a part and location, so the
  // last one's quantityAfter is the quantity on hand. (Numbers allocated before the lock, outside
  // the transaction, commit out of order under concurrency.) The counter row stays locked until
  // commit: stock postings serialise on it, after their part locks.
  const numbers = rangeValues(await allocateRecordNumbersIn(ctx.numbers, trx, 'inventory-histories', histories.length));
  const rows = histories.map((h, i) => {
    const m = h.movement;
    const entered = m.enteredDate === undefined ? ctx.today : m.enteredDate;
    return recordRow(ctx, 'inventory-histories', {
      id: randomUUID(),
      recordNumber: numbers[i]!,
      partNumber: m.partNumber,
      locationNumber: m.locationNumber,
      transactionDate: m.transactionDate,
      movementType: m.movementType,
      quantity: m.quantity,
      unitCost: r4(h.unitCost),
      extendedCost: h.value,
      quantityAfter: h.after,
      sourceNumber: m.sourceNumber,
      sourceRecordNumber: m.sourceRecordNumber,
      enteredDate: entered,
      enteredBy: ctx.user,
      period: m.period,
      year: m.year,
    });
  });
  // Written and read back in one statement (records/insert.ts insertRecordsReturning: the stored
  // rows, decoded as the query engine reads them, in the order of `rows`): the result is the record.
  const posted = (await insertRecordsReturning(ctx.writes, 'inventory-histories', rows)) as unknown as PostedInventoryHistory[];
  let h = 0;
  movements.forEach((m, i) => {
    if (m.onHand) applied[i]!.history = posted[h++]!;
  });

  const missing = [...cells.entries()].filter(([, c]) => c.changed && c.id === null);
  const newNumbers = rangeValues(await allocateRecordNumbersIn(ctx.numbers, trx, 'inventory-quantities', missing.length));
  await insertRecords(
    trx,
    'inventory-quantities',
    missing.map(([key, c], i) => {
      const [part, location] = key.split('/').map(Number) as [number, number];
      return recordRow(ctx, 'inventory-quantities', {
        id: randomUUID(),
        recordNumber: newNumbers[i]!,
        partNumber: part,
        locationNumber: location,
        quantityOnHand: c.onHand,
        quantityAvailable: c.available,
        averageCost: state.get(part)!.average,
      });
    }),
  );
  for (const [, c] of cells) {
    if (!c.changed || c.id === null) continue;
    await records(ctx, 'inventory-quantities').where({ id: c.id }).update({ quantityOnHand: c.onHand, quantityAvailable: c.available });
  }

  const changedParts = parts.filter((p) => {
    const s = state.get(p)!;
    return !s.average.equals(s.storedAverage) || s.lastCost !== null;
  });
  const averageChanges = changedParts.filter((p) => !state.get(p)!.average.equals(state.get(p)!.storedAverage));
  const hstNumbers = rangeValues(await allocateRecordNumbersIn(ctx.numbers, trx, 'historical-average-costs', averageChanges.length));
  for (const p of changedParts) {
    const s = state.get(p)!;
    await records(ctx, 'parts')
      .where({ recordNumber: p })
      .update({ averageCost: s.average, ...(s.lastCost !== null ? { lastCost: r4(s.lastCost) } : {}) });
    if (!s.average.equals(s.storedAverage)) await records(ctx, 'inventory-quantities').where({ partNumber: p }).update({ averageCost: s.average });
  }
  await insertRecords(
    trx,
    'historical-average-costs',
    averageChanges.map((p, i) => {
      const s = state.get(p)!;
      const by = s.changedBy!;
      return recordRow(ctx, 'historical-average-costs', {
        id: randomUUID(),
        recordNumber: hstNumbers[i]!,
        partNumber: p,
        changeDate: by.transactionDate,
        previousAverageCost: s.storedAverage,
        newAverageCost: s.average,
        quantityOnHand: s.quantity,
        sourceNumber: by.sourceNumber,
        sourceRecordNumber: by.sourceRecordNumber,
      });
    }),
  );
  return { applied, inventory: posted };
}

/** The movements a document wrote (by source and the document's record number), in the order written. */
export async function readStockMovementsOf(db: Knex | Knex.Transaction, sourceNumber: number, sourceRecordNumber: number): Promise<PostedInventoryHistory[]> {
  const filters = {
    and: [
      { match: { field: 'sourceNumber', operator: '=', value: sourceNumber } },
      { match: { field: 'sourceRecordNumber', operator: '=', value: sourceRecordNumber } },
    ],
  };
  return (await readAllRecords(db, 'inventory-histories', filters, { orderBy: ['recordNumber ASC'] })) as unknown as PostedInventoryHistory[];
}

/**
 * 422 BUSINESS_RULE_VIOLATED: a movement would push a location's stored quantity past its column
 * (decision 0441): `exceededValue` names the quantity record (its id once it exists), errors[] the
 * movement's request field. Nothing is written (the posting's transaction rolls back).
 */
function exceededQuantity(e: { movement: StockMovement; cell: Cell; field: 'quantityOnHand' | 'quantityAvailable'; before: Dec; after: Dec }): ApiProblem {
  const { movement: m, cell, field, before, after } = e;
  const bound = decimalLimit('inventory-quantities', field).toFixed();
  const recordId = cell.id === null ? undefined : cell.id.toLowerCase();
  return new ApiProblem(
    'BUSINESS_RULE_VIOLATED',
    `The ${field} of part ${m.partNumber} at location ${m.locationNumber} cannot take this posting: it holds ${before.toFixed()}; the posting would make it ${after.toFixed()}, and the accounting database stores at most ${bound} there. Nothing was posted.`,
    {
      errors: [{ field: m.field, code: 'range', message: `would push inventory-quantities ${field} of part ${m.partNumber} at location ${m.locationNumber} past ${bound}` }],
      extensions: { exceededValue: { entity: 'inventory-quantities', field, ...(recordId !== undefined ? { recordId } : {}) } },
    },
  );
}
