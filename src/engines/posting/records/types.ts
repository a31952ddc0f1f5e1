/**
 * The TypeScript shape of a record read back with every field (the contract's entity schema,
 * generated/api-types.ts, all fields present since no `select` is given), with its `lines`.
 */
export type FullRecord<T> = { [K in keyof T]-?: T[K] };
export type FullRecordWithLines<Header extends { lines?: unknown }, Line> = FullRecord<Omit<Header, 'lines'>> & { lines: Array<FullRecord<Line>> };
