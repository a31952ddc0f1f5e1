/**
 * v2 ignored unknown request fields (spec, Versioning 3: "unknown fields rejected" is new in v3), and
 * /api/v2 is frozen: a v2 write body's fields that its input document does not list are dropped at
 * any depth before the posting (nothing of them is stored) and named in the request log; an operator
 * may refuse them instead (V2_REJECT_UNKNOWN_FIELDS=true: 400 VALIDATION_FAILED naming each, nothing
 * posted). `?dryRun` stays refused on v2 either way. docs/decisions/0405-v2-writes-ignore-unknown-fields.md.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { startTestApp, type TestApp } from '../support/app';
import { V2_WRITES } from '../../src/v2/routes';

const MARKER = 'UNKNOWN-FIELD-MARKER-7731';

const journal = (n: string) => ({
  transactionNumber: n,
  transactionDate: '2026-11-30',
  description: 'v2 unknown fields',
  sourceNumber: 102,
  lines: [
    { lineNumber: 1, ledgerAccount: 7050, description: 'debit', debitAmount: 12.34 },
    { lineNumber: 2, ledgerAccount: 1310, description: 'credit', creditAmount: 12.34 },
  ],
});

/** The journal with unknown fields at the top, in a line, and inside a line's object-free value. */
const withUnknown = (n: string) => {
  const body = journal(n) as Record<string, any>;
  body.memo = MARKER;
  body.lines[0].memo = MARKER;
  body.lines[1].extra = { note: MARKER };
  return body;
};

async function storedRows(t: TestApp, trnnum: string): Promise<Array<Record<string, unknown>>> {
  const header = await t.knex('lgrtrn').where({ trnnum });
  const lines = header.length ? await t.knex('lgtnln').where({ _idref: header[0]._idnum }) : [];
  return [...header, ...lines];
}

let t: TestApp;
let strict: TestApp;
before(async () => {
  t = await startTestApp();
  strict = await startTestApp({ config: { v2RejectUnknownFields: true } });
});
after(async () => {
  await t?.close();
  await strict?.close();
});

test('default: unknown fields of a v2 write are ignored at any depth, logged, and nothing of them is stored', async () => {
  const res = await t.post('/api/v2/post/ledger-transaction', withUnknown('V2U-1'));
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.responseType, 'Success', res.text);
  const rows = await storedRows(t, 'V2U-1');
  assert.equal(rows.length, 3, 'the journal and its two lines are posted');
  assert.ok(!JSON.stringify(rows).includes(MARKER), 'no value of an unknown field is stored');
  assert.ok(!JSON.stringify(res.body).includes(MARKER), 'nor answered');
  const line = t.logs.find((l) => l.msg === 'request' && l.correlationId === res.headers['x-correlation-id']);
  assert.deepEqual([...(line?.v2?.ignoredFields ?? [])].sort(), ['lines[0].memo', 'lines[1].extra', 'memo']);

  // The same journal without them posts the same rows (the dropped fields changed nothing).
  const plain = await t.post('/api/v2/post/ledger-transaction', journal('V2U-2'));
  assert.equal(plain.status, 200, plain.text);
  const strip = (r: Record<string, any>) => ({ ...r.body.response.document, id: undefined, recordNumber: undefined, transactionNumber: undefined, lines: r.body.response.document.lines.map((l: any) => ({ ...l, id: undefined })) });
  assert.deepEqual(strip(res), strip(plain));
});

test('default: every v2 write ignores an unknown field (never 400 VALIDATION_FAILED for it)', async () => {
  const doc = YAML.parse(fs.readFileSync(path.resolve(__dirname, '..', '..', 'openapi.yaml'), 'utf8'));
  for (const [v2Path, v3Route] of Object.entries(V2_WRITES)) {
    const content = doc.paths[v3Route].post.requestBody.content['application/json'];
    const example = (Object.values(content.examples ?? {})[0] as { value: Record<string, unknown> } | undefined)?.value ?? content.example;
    const res = await t.post(`/api/v2${v2Path}`, { ...example, memo: MARKER });
    assert.equal(res.status, 200, `${v2Path}: ${res.text}`);
    const line = t.logs.find((l) => l.msg === 'request' && l.correlationId === res.headers['x-correlation-id']);
    assert.deepEqual(line?.v2?.ignoredFields, ['memo'], v2Path);
  }
});

test('default: ?dryRun stays refused on v2 (a client that believes it dry-runs must not post for real)', async () => {
  const dry = await t.post('/api/v2/post/ledger-transaction?dryRun=true', withUnknown('V2U-3'));
  assert.equal(dry.status, 400, dry.text);
  assert.equal(dry.body.errorCode, 'VALIDATION_FAILED');
  assert.ok(dry.body.errors.some((e: { field: string }) => e.field === 'query.dryRun'), dry.text);
  assert.equal((await storedRows(t, 'V2U-3')).length, 0);
});

test('V2_REJECT_UNKNOWN_FIELDS=true: 400 VALIDATION_FAILED naming each unknown field, nothing posted; reads still ignore them', async () => {
  const res = await strict.post('/api/v2/post/ledger-transaction', withUnknown('V2U-4'));
  assert.equal(res.status, 400, res.text);
  assert.equal(res.body.errorCode, 'VALIDATION_FAILED');
  const fields = (res.body.errors as Array<{ field: string }>).map((e) => e.field).sort();
  assert.deepEqual(fields, ['lines[0].memo', 'lines[1].extra', 'memo']);
  assert.equal((await storedRows(strict, 'V2U-4')).length, 0);
  const ok = await strict.post('/api/v2/post/ledger-transaction', journal('V2U-5'));
  assert.equal(ok.status, 200, ok.text);
  const read = await strict.post('/api/v2/query/part', { pageSize: 1, bogus: 1 });
  assert.equal(read.status, 200, read.text);
});
