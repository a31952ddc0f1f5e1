/**
 * The row builder moved to records/rows.ts (the records module: posted records both ways). This
 * path stays for the tests that import it (test/engines/posting/write-rows.test.ts, test/catalog/installed-schema.test.ts).
 */
export { recordRow, childRow, tableOf, childTableOf } from './records';
