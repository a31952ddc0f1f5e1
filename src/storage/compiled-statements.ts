import type { Knex } from 'knex';
import { engineOf } from './dialect';

/**
 * Statements of one shape compiled once (issue 27). knex compiles a builder into SQL text and
 * bindings every time it runs it: identifiers quoted one by one, rows re-sorted into columns, a
 * RETURNING list and an ON CONFLICT clause written anew. A posting's inserts, its balance upsert
 * and its lock fence come in a handful of shapes (a table, its columns, a number of rows, what is
 * returned), and compiling them was 9 % of a journal's CPU in the engine (a CPU profile on
 * SQLite: knex's toSQL and what it calls, 13 % of the JavaScript). Here the text
 * compiled the first time for a shape is kept, and later statements of that shape hand knex that
 * text with their own bindings (the statement's `toSQL`, which knex's runner calls to get what it
 * sends, answers it); everything else about running them is knex's, unchanged.
 *
 * Exact by construction, checked: a shape names everything the text depends on, and a statement
 * is reused only when all its values are plain bindings (text, numbers, booleans, null, dates,
 * buffers: knex writes each as `?` and passes it as is), never `undefined` (knex writes DEFAULT
 * there) or a raw fragment. On the first compile of a shape the bindings knex produced must equal,
 * one by one, the values in the order given here; otherwise the shape is never reused.
 *
 * Shapes are short constant strings (their hash is computed once) and small numbers; the lookups
 * build no text per statement.
 */

/** What knex's `toSQL()` answers for one statement (`sql`, `bindings`, `method`, `returning`...). */
type Compiled = Knex.Sql & Record<string, unknown>;

interface Template {
  /** Unique per template: names a joint statement of several (StatementBatch's riders). */
  id: number;
  /** The rows' columns, sorted (compiledInsert), or none. */
  columns: readonly string[] | undefined;
  /** knex's first compile, or null: the shape is not reusable. */
  compiled: Compiled | null;
}

/** Templates a shape and row count may have (different column sets); more are compiled by knex. */
const COLUMN_SETS_PER_SHAPE = 8;
const MAX_TEMPLATES = 2000;
let templateCount = 0;
let nextId = 1;
/** engine -> shape -> row count -> templates. */
const templates = new Map<string, Map<string, Map<number, Template[]>>>();
/**
 * On a statement handed out reusable: its template and bindings, which `pinnedToSQL` answers from
 * (a property of the statement: no closure and no weak map entry a statement).
 */
const PINNED = Symbol('compiled once');

interface Pinned {
  template: Template;
  bindings: unknown[];
}

type PinnedStatement = { [PINNED]?: Pinned; toSQL: () => Compiled; client: KnexClient };

/** A value knex binds as is (written `?`, passed to the driver unchanged). */
function plainBinding(value: unknown): boolean {
  if (value === null) return true;
  switch (typeof value) {
    case 'string':
    case 'number':
    case 'boolean':
    case 'bigint':
      return true;
    case 'object':
      return value instanceof Date || Buffer.isBuffer(value);
    default:
      return false;
  }
}

function sameList(a: readonly unknown[] | undefined, b: readonly unknown[] | undefined): boolean {
  if (a === b) return true;
  if (!a || !b || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i += 1) if (!Object.is(a[i], b[i])) return false;
  return true;
}

function templatesFor(statement: object, shape: string, rowCount: number): Template[] {
  const engine = engineOf(statement as unknown as Knex);
  let byShape = templates.get(engine);
  if (!byShape) templates.set(engine, (byShape = new Map()));
  let byCount = byShape.get(shape);
  if (!byCount) byShape.set(shape, (byCount = new Map()));
  let list = byCount.get(rowCount);
  if (!list) byCount.set(rowCount, (list = []));
  return list;
}

function reuse<S extends Knex.QueryBuilder | Knex.Raw>(statement: S, shape: string, rowCount: number, columns: readonly string[] | undefined, bindings: unknown[]): S {
  for (const value of bindings) if (!plainBinding(value)) return statement;
  const list = templatesFor(statement, shape, rowCount);
  let template = list.find((t) => sameList(t.columns, columns));
  if (!template) {
    if (list.length >= COLUMN_SETS_PER_SHAPE) return statement;
    if (templateCount >= MAX_TEMPLATES) {
      templates.clear();
      templateCount = 0;
      return statement;
    }
    const compiled = statement.toSQL() as unknown as Compiled | Compiled[];
    // A copy: knex rewrites the object it runs (PostgreSQL's $n placeholders, prepared bindings).
    const reusable = !Array.isArray(compiled) && sameList(compiled.bindings as unknown[], bindings);
    template = { id: nextId++, columns, compiled: reusable ? { ...compiled } : null };
    list.push(template);
    templateCount += 1;
  }
  if (template.compiled === null) return statement;
  const pinned = statement as unknown as PinnedStatement;
  pinned[PINNED] = { template, bindings };
  pinned.toSQL = pinnedToSQL;
  return statement;
}

/** knex's per-run query id (its query events and the tracing spans key on it): unique in the process. */
let queryCount = 0;

/** A pinned statement's `toSQL`: its template with its bindings, a new object each call (as knex's own). */
function pinnedToSQL(this: PinnedStatement): Compiled {
  const { template, bindings } = this[PINNED]!;
  const compiled = Object.assign({}, template.compiled, { bindings: bindings.slice(), __knexQueryUid: `compiled-${(queryCount += 1)}` }) as Compiled;
  Object.defineProperty(compiled, 'toNative', { value: nativeOf(this.client, compiled), enumerable: false });
  return compiled;
}

interface KnexClient {
  positionBindings(sql: string): string;
  prepBindings(bindings: unknown[]): unknown[];
}

/** knex's toNative of a compiled statement: the engine's placeholders, the driver's bindings. */
function nativeOf(client: KnexClient, compiled: Compiled): () => { sql: string; bindings: unknown[] } {
  return () => ({ sql: client.positionBindings(compiled.sql), bindings: client.prepBindings(compiled.bindings as unknown[]) });
}

/**
 * `statement` compiled once per `shape` (a constant naming everything its SQL text depends on, given
 * plain bindings), with `bindings`, the values in the order knex binds them. Returns `statement`
 * itself, reusing the text compiled the first time from then on; as it is when a value is not a
 * plain binding.
 */
export function compiledOnce<S extends Knex.QueryBuilder | Knex.Raw>(statement: S, shape: string, bindings: unknown[]): S {
  return reuse(statement, shape, 0, undefined, bindings);
}

/**
 * An INSERT of `rows` (`build` makes it: the table, the rows and whatever the caller adds, a
 * RETURNING list, an ON CONFLICT clause, all named by the constant `shape`), compiled once per
 * shape, row count and set of columns: knex binds a row's values in the order of its columns,
 * sorted, the columns of the first row; every row must have those columns, or it is compiled as usual.
 */
export function compiledInsert<S extends Knex.QueryBuilder>(shape: string, rows: ReadonlyArray<Record<string, unknown>>, build: () => S): S {
  const statement = build();
  if (rows.length === 0) return statement;
  const columns = Object.keys(rows[0]!).sort();
  const bindings: unknown[] = [];
  for (let r = 0; r < rows.length; r += 1) {
    const row = rows[r]!;
    if (r > 0 && Object.keys(row).length !== columns.length) return statement;
    for (const column of columns) {
      const value = row[column];
      // A column the row lacks reads undefined, which is no plain binding either: compiled by knex.
      if (value === undefined) return statement;
      bindings.push(value);
    }
  }
  return reuse(statement, shape, rows.length, columns, bindings);
}

/**
 * A statement joining statements compiled here (the riders of a PostgreSQL batch and their
 * carrier, statement-batch.ts), compiled once per combination of their templates; `statement`
 * as it is when one of them was compiled by knex.
 */
export function compiledJoint<S extends Knex.QueryBuilder | Knex.Raw>(statement: S, parts: readonly object[], bindings: unknown[]): S {
  let shape = 'joint';
  for (const part of parts) {
    const pinned = (part as PinnedStatement)[PINNED];
    if (!pinned) return statement;
    shape += `:${pinned.template.id}`;
  }
  return reuse(statement, shape, 0, undefined, bindings);
}

/** Whether `statement` runs a text compiled once here (tests). */
export function isCompiledOnce(statement: object): boolean {
  return (statement as PinnedStatement)[PINNED] !== undefined;
}
