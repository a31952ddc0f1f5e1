/**
 * The catalog as the installed build of the accounting database has it (spec, Errors, 422: "a
 * column the installed build lacks"). Storage learns which columns are missing
 * (src/storage/installed-schema.ts); this module turns that into published names:
 *
 *   installedView   the entity without the fields (and child collections, child fields, change
 *                   stamps) whose columns are missing: a read that does not name them answers
 *                   without them, the default select included;
 *   unavailableIssue / entityUnavailable
 *                   a read that names one answers 422 COLUMN_UNAVAILABLE naming it, before any SQL;
 *   columnsUnavailable
 *                   the problem a write answers with when its cascade needs such a column
 *                   (docs/decisions/0230-writes-on-an-older-build.md says which it needs).
 */
import type { Catalog, EntityDef, FieldDef } from './types';
import { ApiProblem } from '../errors/problem';
import type { Issues } from '../errors/issues';

/** Which columns the installed build lacks (implemented by storage). */
export interface InstalledColumns {
  /** Changes whenever what is missing changes: views built from an older generation are rebuilt. */
  readonly generation: number;
  lacks(table: string, column: string): boolean;
}

/** Every table the catalog reads, with the columns it expects there (fields, keys, links, stamps). */
export function expectedColumns(catalog: Catalog): Map<string, string[]> {
  const out = new Map<string, Set<string>>();
  const add = (table: string, ...columns: Array<string | undefined>) => {
    let set = out.get(table);
    if (!set) out.set(table, (set = new Set()));
    for (const c of columns) if (c) set.add(c);
  };
  for (const entity of Object.values(catalog)) {
    add(entity.table, entity.keyColumn, ...Object.values(entity.fields).map((f) => f.column), entity.changeStamps.lastUpdated, entity.changeStamps.createdSince);
    for (const child of Object.values(entity.children)) {
      add(child.table, child.parentColumn, child.orderColumn, ...Object.values(child.fields).map((f) => f.column));
    }
  }
  return new Map([...out].map(([table, columns]) => [table, [...columns]]));
}

/** The published names (`entity.field`, `entity.collection.field`) stored in `table.column`. */
export function publishedNamesOf(catalog: Catalog, table: string, column: string): string[] {
  const out: string[] = [];
  for (const entity of Object.values(catalog)) {
    if (entity.table === table) for (const f of Object.values(entity.fields)) if (f.column === column) out.push(`${entity.entity}.${f.name}`);
    for (const child of Object.values(entity.children)) {
      if (child.table === table) for (const f of Object.values(child.fields)) if (f.column === column) out.push(`${entity.entity}.${child.name}.${f.name}`);
    }
  }
  return out;
}

/** What a whole table is published as: `entity.id` (nothing of the entity without it), `entity.collection`. */
function tableNamesOf(catalog: Catalog, table: string): string[] {
  const out: string[] = [];
  for (const entity of Object.values(catalog)) {
    if (entity.table === table) out.push(`${entity.entity}.id`);
    for (const child of Object.values(entity.children)) if (child.table === table) out.push(`${entity.entity}.${child.name}`);
  }
  return out;
}

const STAMPS = ['lastUpdated', 'createdSince'] as const;

const views = new WeakMap<InstalledColumns, WeakMap<EntityDef, { generation: number; view: EntityDef }>>();

/**
 * The entity as the installed build has it: the same object when nothing of it is missing. A
 * missing key column (or table) leaves nothing readable: every name is unavailable. `installed`
 * undefined: the schema was never read, every column is taken as present.
 */
export function installedView(entity: EntityDef, installed: InstalledColumns | undefined): EntityDef {
  if (!installed || installed.generation === 0) return entity;
  let cache = views.get(installed);
  if (!cache) views.set(installed, (cache = new WeakMap()));
  const cached = cache.get(entity);
  if (cached && cached.generation === installed.generation) return cached.view;
  const view = buildView(entity, installed);
  cache.set(entity, { generation: installed.generation, view });
  return view;
}

function buildView(entity: EntityDef, installed: InstalledColumns): EntityDef {
  const unavailable: string[] = [];
  const keep = (table: string, fields: Record<string, FieldDef>, prefix: string, all: boolean): Record<string, FieldDef> => {
    const out: Record<string, FieldDef> = {};
    for (const [name, f] of Object.entries(fields)) {
      if (all || installed.lacks(table, f.column)) unavailable.push(prefix + name);
      else out[name] = f;
    }
    return out;
  };
  const unreadable = installed.lacks(entity.table, entity.keyColumn);
  const fields = keep(entity.table, entity.fields, '', unreadable);
  const children: EntityDef['children'] = {};
  for (const [name, child] of Object.entries(entity.children)) {
    const childKey = child.fields.id?.column;
    const gone = unreadable || installed.lacks(child.table, child.parentColumn) || installed.lacks(child.table, child.orderColumn) || (childKey !== undefined && installed.lacks(child.table, childKey));
    if (gone) {
      unavailable.push(name);
      continue;
    }
    const childFields = keep(child.table, child.fields, `${name}.`, false);
    children[name] = Object.keys(childFields).length === Object.keys(child.fields).length ? child : { ...child, fields: childFields };
  }
  const changeStamps: EntityDef['changeStamps'] = {};
  for (const stamp of STAMPS) {
    const column = entity.changeStamps[stamp];
    if (!column) continue;
    if (unreadable || installed.lacks(entity.table, column)) unavailable.push(stamp);
    else changeStamps[stamp] = column;
  }
  if (unavailable.length === 0) return entity;
  return {
    ...entity,
    fields,
    children,
    changeStamps,
    matchFields: entity.matchFields.filter((f) => Object.hasOwn(fields, f)),
    // Extras stay: the field an extra filters on is resolved (and found unavailable) like any filter's.
    unavailable: [...(entity.unavailable ?? []), ...unavailable],
  };
}

function isUnavailable(entity: EntityDef, name: unknown): name is string {
  return typeof name === 'string' && entity.unavailable !== undefined && entity.unavailable.includes(name);
}

/**
 * Adds COLUMN_UNAVAILABLE at `path` and answers true when `name` (a field, a collection,
 * `collection.field`, a change stamp) is one the installed build lacks.
 */
export function unavailableIssue(entity: EntityDef, name: unknown, path: string, issues: Issues): boolean {
  if (!isUnavailable(entity, name)) return false;
  issues.add('COLUMN_UNAVAILABLE', path, 'column_unavailable', `${name} is not in the installed build of the accounting database`);
  const qualified = `${entity.entity}.${name}`;
  if (!issues.extension('COLUMN_UNAVAILABLE', 'unavailableFields').includes(qualified)) issues.extend('COLUMN_UNAVAILABLE', 'unavailableFields', qualified);
  issues.setDetail('COLUMN_UNAVAILABLE', unavailableDetail(entity.entity, issues.extension('COLUMN_UNAVAILABLE', 'unavailableFields')));
  return true;
}

function unavailableDetail(entity: string, names: readonly unknown[]): string {
  const list = names.map((n) => String(n).slice(entity.length + 1)).join(', ');
  return `The installed build of the accounting database lacks ${list} of ${entity}: leave ${names.length > 1 ? 'them' : 'it'} out of the request (a read that does not name ${names.length > 1 ? 'them' : 'it'} answers without ${names.length > 1 ? 'them' : 'it'}), or upgrade the accounting system.`;
}

/** 422 when the installed build lacks the entity's table or key: nothing of it can be read. */
export function entityUnavailable(entity: EntityDef): ApiProblem | undefined {
  // `id` is every entity's key (scripts/lib/openapi-catalog.ts): without it nothing is readable.
  if (!isUnavailable(entity, 'id')) return undefined;
  return new ApiProblem('COLUMN_UNAVAILABLE', `The installed build of the accounting database lacks ${entity.entity} (its table or its key): nothing of it can be read.`, {
    extensions: { unavailableFields: [`${entity.entity}.id`] },
  });
}

/**
 * The answer of a write whose cascade needs fields the installed build lacks (published names
 * `entity.field`, `entity.collection.field`; a column without one is named `table.column`).
 * Nothing is written: the posting's transaction rolls back, or it never started.
 */
export function columnsUnavailable(names: readonly string[], what: string): ApiProblem {
  const unique = [...new Set(names)];
  return new ApiProblem(
    'COLUMN_UNAVAILABLE',
    `The installed build of the accounting database lacks ${unique.join(', ')}, which ${what} needs: nothing was written. Upgrade the accounting system to post this.`,
    { extensions: { unavailableFields: unique } },
  );
}

/**
 * The answer when the database itself reported a missing column or table (the installed schema
 * had not been read since it went, or a statement outside the catalog needed it), once the schema
 * was read again: the published fields of the known-missing columns the report matches. The
 * report names a column (maybe with its table) or a table; when nothing published matches, the
 * storage name is given.
 */
export function missingColumnProblem(catalog: Catalog, known: ReadonlyArray<{ table: string; column: string }>, reported: { table?: string; column?: string }): ApiProblem {
  const column = reported.column?.toLowerCase();
  const table = reported.table?.toLowerCase();
  const matching = known.filter((m) => (column === undefined || m.column.toLowerCase() === column) && (table === undefined || m.table.toLowerCase() === table));
  // A table missing as a whole is named as a whole: its collection, or its entity's key.
  const expected = expectedColumns(catalog);
  const whole = new Set([...new Set(matching.map((m) => m.table))].filter((t) => (expected.get(t) ?? []).every((c) => known.some((m) => m.table === t && m.column === c))));
  const names = [
    ...[...whole].flatMap((t) => tableNamesOf(catalog, t)),
    ...matching.filter((m) => !whole.has(m.table)).flatMap((m) => publishedNamesOf(catalog, m.table, m.column)),
  ];
  if (names.length === 0) {
    const storage = column ? `column ${table ? `${table}.` : ''}${column}` : `table ${table ?? '(not named)'}`;
    return new ApiProblem('COLUMN_UNAVAILABLE', `The accounting database has no ${storage}: its build is older than this service expects. Nothing was applied.`);
  }
  const unique = [...new Set(names)];
  return new ApiProblem(
    'COLUMN_UNAVAILABLE',
    `The installed build of the accounting database lacks ${unique.join(', ')}: nothing was applied. A read that does not name ${unique.length > 1 ? 'them' : 'it'} answers without ${unique.length > 1 ? 'them' : 'it'}; a write that needs ${unique.length > 1 ? 'them' : 'it'} waits for an upgrade of the accounting system.`,
    { extensions: { unavailableFields: unique } },
  );
}
