/**
 * src/engines/posting/write-rows.ts: a row built from published names through the catalog is the
 * row the hand-written inserts built (the columns and encodings of the posting engines before the
 * write side went through the catalog), on every engine's decimal encoding. Unknown names throw.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Dec } from '../../../src/storage/decimal';
import { dialectFor } from '../../../src/storage/dialect';
import { SCALE } from '../../../src/engines/posting/context';
import { childRow, childTableOf, recordRow, tableOf } from '../../../src/engines/posting/write-rows';

const ENGINES = ['sqlite', 'postgres', 'mssql'] as const;

for (const engine of ENGINES) {
  describe(`write-rows (${engine} encoding)`, () => {
    const dialect = dialectFor(engine);
    const ctx = { dialect, user: 'writer' };
    const money = (v: Dec) => dialect.encodeDecimal(v, SCALE.money);

    test('a ledger transaction header equals the hand-built lgrtrn row', () => {
      const debit = new Dec('1234.5');
      const hand = {
        _idnum: 'id-1',
        recnum: 7,
        trnnum: 'JE-7',
        trndte: '2026-11-20',
        dscrpt: 'Month end',
        srcnum: 1,
        status: 1,
        dbttot: money(debit),
        crdtot: money(debit),
        entdte: null,
        usrnme: 'writer',
        actprd: 11,
        postyr: 2026,
        insusr: 'writer',
        updusr: 'writer',
      };
      const built = recordRow(ctx, 'ledger-transactions', {
        id: 'id-1',
        recordNumber: 7,
        transactionNumber: 'JE-7',
        transactionDate: '2026-11-20',
        description: 'Month end',
        sourceNumber: 1,
        status: 1,
        debitTotal: debit,
        creditTotal: 1234.5,
        enteredDate: null,
        enteredBy: 'writer',
        period: 11,
        year: 2026,
      });
      assert.deepEqual(built, hand);
      assert.equal(tableOf('ledger-transactions'), 'lgrtrn');
    });

    test('an AP invoice line equals the hand-built apivln row (quantity, price, cost code scales)', () => {
      const hand = {
        _idnum: 'line-1',
        _idref: 'inv-1',
        linnum: 1,
        lgract: 5100,
        dscrpt: 'Lumber',
        jobnum: 300,
        phsnum: null,
        cstcde: dialect.encodeDecimal(new Dec('1.001'), SCALE.costCode),
        csttyp: 2,
        eqpnum: null,
        linqty: dialect.encodeDecimal(new Dec('2.5'), SCALE.quantity),
        linprc: dialect.encodeDecimal(new Dec('10.1234'), SCALE.price),
        extttl: money(new Dec('25.31')),
        taxamt: money(new Dec(0)),
        insusr: 'writer',
        updusr: 'writer',
      };
      const lineTable = childTableOf('ap-invoices', 'lines');
      assert.deepEqual(lineTable, { table: 'apivln', parentColumn: '_idref' });
      const built = childRow(
        ctx,
        'ap-invoices',
        'lines',
        {
          id: 'line-1',
          lineNumber: 1,
          ledgerAccount: 5100,
          description: 'Lumber',
          jobNumber: 300,
          phaseNumber: null,
          costCode: new Dec('1.001'),
          costType: 2,
          equipmentNumber: null,
          quantity: new Dec('2.5'),
          unitPrice: new Dec('10.1234'),
          extendedTotal: new Dec('25.31'),
          salesTax: new Dec(0),
        },
        { [lineTable.parentColumn]: 'inv-1' },
      );
      assert.deepEqual(built, hand);
    });
  });
}

describe('write-rows refuses what the catalog does not map', () => {
  const ctx = { dialect: dialectFor('sqlite'), user: 'writer' };

  test('an unknown published name throws', () => {
    assert.throws(() => recordRow(ctx, 'ap-invoices', { vendorNumber: 1, vndnum: 1 }), /ap-invoices has no published field vndnum/);
    assert.throws(() => childRow(ctx, 'ap-invoices', 'lines', { lineNumber: 1, invoiceTotal: 5 }), /ap-invoices\.lines has no published field invoiceTotal/);
    // Not a field, though an Object.prototype property.
    assert.throws(() => recordRow(ctx, 'ap-invoices', { toString: 'x' }), /no published field toString/);
  });

  test('a published column in extra, an unknown entity or collection, or a non-decimal for a decimal throws', () => {
    assert.throws(() => recordRow(ctx, 'ap-invoices', {}, { vndnum: 1 }), /column vndnum has a published name/);
    assert.throws(() => recordRow(ctx, 'no-such-things', {}), /no entity no-such-things/);
    assert.throws(() => childRow(ctx, 'ap-invoices', 'parts', {}), /no child collection parts/);
    assert.throws(() => recordRow(ctx, 'ap-invoices', { invoiceTotal: '12.00' }), /invoiceTotal is a decimal, got string/);
  });
});
