/**
 * Posted records, both ways, through the catalog (generated/catalog.ts maps every published name
 * to its table and column): a posting builds rows in published names (rows.ts), inserts them,
 * with or without RETURNING what was stored (insert.ts), looks records up and updates them by
 * published names with the audit stamps set in one place (query.ts, audit.ts), takes their record
 * numbers (numbers.ts) and reads them back as a query would (engines/query/read-records.ts). The
 * floor under ledger/ and documents/: it imports nothing of the posting engine but context.ts.
 */
export { recordRow, childRow, type PublishedValue } from './rows';
export { insertRecords, insertRecordsReturning, insertChildrenReturning } from './insert';
export { records, increment, decrementToZero, decodeStored, type RecordsContext, type StoredRecord } from './query';
export { tableOf, childTableOf, columnOf, fitText, recordLockName } from './shapes';
export { allocateRecordNumbers, allocateRecordNumbersIn, rangeValues } from './numbers';
export { readRecord, readWrittenRecord, readAllRecords, readRecordsById } from '../../query/read-records';
export type { FullRecord, FullRecordWithLines } from './types';
