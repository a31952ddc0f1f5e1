/**
 * After the suite ran with STATUS_LOG=FILE (make test-sqlite / test-postgres): fails, listing them,
 * when a response the suite saw has a status its operation does not declare in openapi.yaml.
 *
 *   tsx scripts/check-statuses.ts FILE
 */
import fs from 'node:fs';
import { undeclared, type StatusPair } from '../test/support/statuses';

const file = process.argv[2];
if (!file || !fs.existsSync(file)) {
  process.stderr.write(`usage: tsx scripts/check-statuses.ts STATUS_LOG_FILE (no file at "${file ?? ''}")\n`);
  process.exit(2);
}
const pairs: StatusPair[] = fs
  .readFileSync(file, 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((line) => {
    const [operationId, status] = line.split(' ');
    return { operationId: operationId!, status: Number(status) };
  });
const missing = undeclared(pairs);
const distinct = new Set(pairs.map((p) => `${p.operationId} ${p.status}`)).size;
if (missing.length > 0) {
  process.stderr.write(`statuses sent but not declared on their operation in openapi.yaml (${missing.length}):\n  ${missing.join('\n  ')}\n`);
  process.exit(1);
}
process.stdout.write(`every status the suite saw is declared: ${distinct} (operation, status) pairs checked\n`);
