/**
 * Compiles the storage extensions of openapi.yaml into the entity catalog, and strips them
 * from the public document. Conventions (documented in docs/decisions/0002-entities.md):
 *   record schema:  x-entity (path segment), x-table, x-change-stamps {lastUpdated, createdSince},
 *                   x-match-fields [published names], x-admin-only (true: read by admin keys only;
 *                   compiled into ADMIN_CATALOG, apart from the books' entities: the audit log)
 *   property:       x-column (storage column), x-scale (decimal places of a number, default 2)
 *   child schema:   x-table, x-parent-column (default _idref), x-order-column (default linnum);
 *                   referenced from an array property of the record schema, whose name is the
 *                   collection name.
 *   request schema: an entity-specific query request repeats the base properties of
 *                   BaseQueryRequest; every other property carries
 *                   x-filter { field, operator } (its value becomes the filter value) or, on a
 *                   boolean flag, x-filter { field, operator, value } (applied only when true).
 *   write results:  a schema `allOf: [{ $ref: <record schema> }, { required: [...] }]` (PostedApInvoice)
 *                   is a record as a write result holds it: its required list becomes the entity's
 *                   `resultRequired`, and every operation whose 200 response reaches it lists the
 *                   entity in `resultEntities` (what a write needs on an older build of the database)
 *   value bounds:   every property with x-column gets the bounds of its column's type
 *                   (src/catalog/bounds.ts: integer range, DECIMAL(p,s) magnitude, nvarchar length,
 *                   storable text) in the generated public document, which the request validator
 *                   loads. A write input property opts in with `x-column: table.column` (or a bare
 *                   column under a schema with x-table); a value x-filter gets its field's bounds.
 */
import { parseColumnType, schemaKeywords } from '../../src/catalog/bounds';
import { columnTypes as migrationColumnTypes, type ColumnTypes } from './column-types';
import type { Catalog, ChildDef, EntityDef, ExtraOperator, FieldDef, FieldKind, OperationInfo, RequestExtra } from '../../src/catalog/types';

type Json = Record<string, any>;

// x-optic-exemptions: the breaking-change gate (scripts/check-breaking.ts) reads the public document.
const PUBLIC_EXTENSIONS = new Set(['x-tagGroups', 'x-logo', 'x-optic-exemptions']);
const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'options', 'head'];

export function stripStorageExtensions<T>(node: T): T {
  if (Array.isArray(node)) return node.map((item) => stripStorageExtensions(item)) as T;
  if (node && typeof node === 'object') {
    const out: Json = {};
    for (const [key, value] of Object.entries(node as Json)) {
      if (key.startsWith('x-') && !PUBLIC_EXTENSIONS.has(key)) continue;
      out[key] = stripStorageExtensions(value);
    }
    return out as T;
  }
  return node;
}

function refName(ref: unknown): string | undefined {
  return typeof ref === 'string' && ref.startsWith('#/components/schemas/') ? ref.slice('#/components/schemas/'.length) : undefined;
}

function fieldKind(schemaName: string, prop: string, def: Json): { kind: FieldKind; nullable: boolean } {
  const types: string[] = Array.isArray(def.type) ? def.type : def.type ? [def.type] : [];
  const nullable = types.includes('null');
  const type = types.find((t) => t !== 'null');
  switch (type) {
    case 'integer':
      return { kind: 'integer', nullable };
    case 'number':
      return { kind: 'decimal', nullable };
    case 'boolean':
      return { kind: 'boolean', nullable };
    case 'string':
      if (def.format === 'uuid') return { kind: 'uuid', nullable };
      if (def.format === 'date') return { kind: 'date', nullable };
      if (def.format === 'date-time') return { kind: 'datetime', nullable };
      return { kind: 'string', nullable };
    default:
      throw new Error(`${schemaName}.${prop}: a stored field needs a scalar type (got ${JSON.stringify(def.type)})`);
  }
}

function compileFields(schemas: Json, schemaName: string, types: ColumnTypes): { fields: Record<string, FieldDef>; collections: Array<[string, string]> } {
  const schema = schemas[schemaName];
  if (!schema) throw new Error(`schema ${schemaName} not found`);
  const table = String(schema['x-table']);
  const fields: Record<string, FieldDef> = {};
  const collections: Array<[string, string]> = [];
  for (const [prop, raw] of Object.entries<Json>(schema.properties ?? {})) {
    if (raw.type === 'array') {
      const child = refName(raw.items?.$ref);
      if (!child || !schemas[child]?.['x-table']) throw new Error(`${schemaName}.${prop}: arrays must reference a child schema with x-table`);
      collections.push([prop, child]);
      continue;
    }
    const column = raw['x-column'];
    if (typeof column !== 'string' || !column) throw new Error(`${schemaName}.${prop}: missing x-column`);
    const { kind, nullable } = fieldKind(schemaName, prop, raw);
    const sqlType = types.get(`${table}.${column}`);
    if (!sqlType) throw new Error(`${schemaName}.${prop}: column ${table}.${column} is not created by any migration`);
    const field: FieldDef = { name: prop, column, kind, nullable, sqlType };
    if (kind === 'decimal') field.scale = typeof raw['x-scale'] === 'number' ? raw['x-scale'] : 2;
    fields[prop] = field;
  }
  return { fields, collections };
}

const BASE_REQUEST = 'BaseQueryRequest';
const EXTRA_OPERATORS: readonly ExtraOperator[] = ['=', '!=', '>', '<', '>=', '<=', 'LIKE', 'NOT LIKE'];

function compileRequestExtras(schemas: Json, requestSchema: string, fields: Record<string, FieldDef>): Record<string, RequestExtra> {
  if (requestSchema === BASE_REQUEST) return {};
  const schema = schemas[requestSchema];
  if (!schema) throw new Error(`request schema ${requestSchema} not found`);
  if (schema.additionalProperties !== false) throw new Error(`${requestSchema}: additionalProperties must be false`);
  const base: Json = schemas[BASE_REQUEST]?.properties ?? {};
  for (const name of Object.keys(base)) {
    if (!schema.properties?.[name]) throw new Error(`${requestSchema}: missing base property ${name}`);
  }
  const extras: Record<string, RequestExtra> = {};
  for (const [name, raw] of Object.entries<Json>(schema.properties ?? {})) {
    if (base[name]) continue;
    const filter: Json | undefined = raw['x-filter'];
    if (!filter) throw new Error(`${requestSchema}.${name}: an extra request property needs x-filter`);
    const field = String(filter.field ?? '');
    const target = fields[field];
    if (!target) throw new Error(`${requestSchema}.${name}: x-filter names unknown field ${field}`);
    const operator = String(filter.operator ?? '').toUpperCase() as ExtraOperator;
    if (!EXTRA_OPERATORS.includes(operator)) throw new Error(`${requestSchema}.${name}: unsupported x-filter operator ${filter.operator}`);
    if ('value' in filter) {
      if (raw.type !== 'boolean') throw new Error(`${requestSchema}.${name}: an x-filter with a fixed value must be a boolean flag`);
      const value = filter.value;
      if (!['string', 'number', 'boolean'].includes(typeof value)) throw new Error(`${requestSchema}.${name}: x-filter value must be a scalar`);
      extras[name] = { field, operator, value, kind: 'flag' };
    } else {
      extras[name] = { field, operator, kind: 'value' };
    }
  }
  return extras;
}

export interface CompiledCatalog {
  /** The books' entities: every API key that may read reads them (v2 too). */
  entities: Catalog;
  /** Entities read by admin keys only (x-admin-only): the service's own records, not the books. */
  adminEntities: Catalog;
  operations: OperationInfo[];
}

export function buildCatalog(doc: Json, types: ColumnTypes = migrationColumnTypes()): CompiledCatalog {
  const schemas: Json = doc.components?.schemas ?? {};
  const paths: Json = doc.paths ?? {};
  const entities: Catalog = {};
  const adminEntities: Catalog = {};

  for (const [schemaName, schema] of Object.entries<Json>(schemas)) {
    const entity = schema['x-entity'];
    if (!entity) continue;
    if (entities[entity] || adminEntities[entity]) throw new Error(`x-entity ${entity} declared twice`);
    const table = schema['x-table'];
    if (typeof table !== 'string') throw new Error(`${schemaName}: x-entity needs x-table`);
    const { fields, collections } = compileFields(schemas, schemaName, types);
    for (const required of ['id', 'recordNumber']) {
      if (!fields[required]) throw new Error(`${schemaName}: every record needs ${required}`);
    }
    const children: Record<string, ChildDef> = {};
    for (const [name, childSchema] of collections) {
      const child = schemas[childSchema];
      children[name] = {
        name,
        schema: childSchema,
        table: child['x-table'],
        parentColumn: child['x-parent-column'] ?? '_idref',
        orderColumn: child['x-order-column'] ?? 'linnum',
        fields: compileFields(schemas, childSchema, types).fields,
      };
    }
    const stamps: Json = schema['x-change-stamps'] ?? {};
    const matchFields: string[] = schema['x-match-fields'] ?? [];
    for (const f of matchFields) if (!fields[f]) throw new Error(`${schemaName}: x-match-fields names unknown field ${f}`);

    const op = paths[`/${entity}/query`]?.post;
    if (!op) throw new Error(`${schemaName}: no POST /${entity}/query operation for x-entity ${entity}`);
    const requestSchema = refName(op.requestBody?.content?.['application/json']?.schema?.$ref);
    if (!requestSchema) throw new Error(`/${entity}/query: request body must $ref a component schema`);

    const def: EntityDef = {
      entity,
      schema: schemaName,
      table,
      tag: op.tags?.[0] ?? 'Untagged',
      queryOperationId: op.operationId,
      requestSchema,
      keyColumn: fields.id!.column,
      fields,
      children,
      changeStamps: {
        ...(stamps.lastUpdated ? { lastUpdated: String(stamps.lastUpdated) } : {}),
        ...(stamps.createdSince ? { createdSince: String(stamps.createdSince) } : {}),
      },
      matchFields,
      requestExtras: compileRequestExtras(schemas, requestSchema, fields),
    };
    if (schema['x-admin-only'] === true) adminEntities[entity] = def;
    else entities[entity] = def;
  }

  const posted = resultRecords(schemas, entities);
  const operations: OperationInfo[] = [];
  for (const [p, item] of Object.entries<Json>(paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      if (!op.operationId) throw new Error(`${method.toUpperCase()} ${p}: missing operationId`);
      const info: OperationInfo = { operationId: op.operationId, method: method.toUpperCase(), path: p, tag: op.tags?.[0] ?? 'Untagged' };
      const held = resultEntitiesOf(schemas, posted, op.responses?.['200']?.content?.['application/json']?.schema);
      if (held.length > 0) info.resultEntities = held;
      operations.push(info);
    }
  }
  const sorted = (catalog: Catalog): Catalog => {
    const out: Catalog = {};
    for (const key of Object.keys(catalog).sort()) out[key] = catalog[key]!;
    return out;
  };
  return { entities: sorted(entities), adminEntities: sorted(adminEntities), operations };
}

/**
 * The write-result records: schemas `allOf: [{ $ref: <record schema with x-entity> }, { required }]`,
 * by schema name -> entity. Sets each entity's `resultRequired` (the union of its required lists).
 */
function resultRecords(schemas: Json, entities: Catalog): Map<string, string> {
  const entityOfSchema = new Map(Object.values(entities).map((e) => [e.schema, e.entity]));
  const out = new Map<string, string>();
  for (const [name, schema] of Object.entries<Json>(schemas)) {
    const parts: Json[] = Array.isArray(schema.allOf) ? schema.allOf : [];
    const entity = parts.map((part) => entityOfSchema.get(refName(part.$ref) ?? '')).find((e) => e !== undefined);
    if (!entity) continue;
    const required = parts.flatMap((part) => (Array.isArray(part.required) ? (part.required as string[]) : []));
    const def = entities[entity]!;
    for (const field of required) {
      if (!def.fields[field] && !def.children[field]) throw new Error(`${name}: required ${field} is not a field or collection of ${entity}`);
    }
    def.resultRequired = [...new Set([...(def.resultRequired ?? []), ...required])];
    out.set(name, entity);
  }
  return out;
}

/** The entities whose write-result records `schema` reaches (through $ref, allOf, properties, items), sorted. */
function resultEntitiesOf(schemas: Json, posted: Map<string, string>, schema: Json | undefined): string[] {
  const found = new Set<string>();
  const seen = new Set<string>();
  const visit = (node: Json | undefined): void => {
    if (!node || typeof node !== 'object') return;
    const ref = refName(node.$ref);
    if (ref !== undefined) {
      if (seen.has(ref)) return;
      seen.add(ref);
      const entity = posted.get(ref);
      if (entity) found.add(entity);
      visit(schemas[ref]);
      return;
    }
    for (const part of [...(node.allOf ?? []), ...(node.anyOf ?? []), ...(node.oneOf ?? [])]) visit(part);
    for (const child of Object.values<Json>(node.properties ?? {})) visit(child);
    if (node.items && typeof node.items === 'object') visit(node.items);
  };
  visit(schema);
  return [...found].sort();
}

/**
 * Merges the bounds of `sqlType` into a property schema: the tighter of what openapi.yaml already
 * says and what the column holds wins; a pattern already present is kept and the text rule is
 * added beside it (allOf).
 */
function mergeBounds(prop: Json, sqlType: string): void {
  const add = schemaKeywords(parseColumnType(sqlType));
  for (const [key, value] of Object.entries(add)) {
    const have = prop[key];
    if (key === 'minimum') prop[key] = typeof have === 'number' ? Math.max(have, value as number) : value;
    else if (key === 'maximum' || key === 'maxLength') prop[key] = typeof have === 'number' ? Math.min(have, value as number) : value;
    else if (key === 'pattern') {
      if (have === undefined || have === value) prop[key] = value;
      else if (!(prop.allOf ?? []).some((s: Json) => s.pattern === value)) prop.allOf = [...(prop.allOf ?? []), { pattern: value }];
    } else prop[key] = value;
  }
}

/** Only properties whose type (or $ref target) takes the keywords: a format'd string needs no pattern. */
function boundable(prop: Json, sqlType: string): boolean {
  const kind = parseColumnType(sqlType).kind;
  if (kind === 'string') return prop.format === undefined && prop.enum === undefined && prop.const === undefined;
  return kind === 'integer' || kind === 'decimal';
}

/**
 * Writes the column bounds into `doc` (the authored document, before its storage extensions are
 * stripped): every property with x-column, and every value x-filter of a query request (the bounds
 * of the field it filters). Returns how many properties were bounded.
 */
export function applyColumnBounds(doc: Json, catalog: CompiledCatalog, types: ColumnTypes = migrationColumnTypes()): number {
  const schemas: Json = doc.components?.schemas ?? {};
  let count = 0;
  for (const [schemaName, schema] of Object.entries<Json>(schemas)) {
    for (const [prop, raw] of Object.entries<Json>(schema.properties ?? {})) {
      const column = raw['x-column'];
      if (typeof column !== 'string') continue;
      const qualified = column.includes('.') ? column : `${schema['x-table'] ?? ''}.${column}`;
      const sqlType = types.get(qualified);
      if (!sqlType) throw new Error(`${schemaName}.${prop}: x-column ${qualified} is not created by any migration (a bare column needs x-table on the schema)`);
      if (!boundable(raw, sqlType)) continue;
      mergeBounds(raw, sqlType);
      count += 1;
    }
  }
  for (const entity of [...Object.values(catalog.entities), ...Object.values(catalog.adminEntities)]) {
    for (const [name, extra] of Object.entries(entity.requestExtras)) {
      if (extra.kind !== 'value') continue;
      const raw: Json = schemas[entity.requestSchema].properties[name];
      const sqlType = entity.fields[extra.field]!.sqlType;
      if (!boundable(raw, sqlType)) continue;
      // A LIKE pattern is not a stored value: only the text rule applies, not the column length.
      if (extra.operator === 'LIKE' || extra.operator === 'NOT LIKE') mergeBounds(raw, 'nvarchar(max)');
      else mergeBounds(raw, sqlType);
      count += 1;
    }
  }
  count += applyRequestDefaults(doc);
  return count;
}

/**
 * The floor under every request value that names no column (an enum code, a line number of the
 * request, a record number to post): no engine stores an integer wider than int32 or text with
 * NUL or a lone surrogate, so every integer and free-text property reachable from a request body
 * gets the `int` range and the text rule. A property with `x-column` already has its column's
 * (tighter or equal) bounds; tighter bounds written in openapi.yaml win as everywhere.
 */
function applyRequestDefaults(doc: Json): number {
  const schemas: Json = doc.components?.schemas ?? {};
  const seen = new Set<Json>();
  let count = 0;
  const visit = (node: Json | undefined): void => {
    if (!node || typeof node !== 'object' || seen.has(node)) return;
    seen.add(node);
    if (typeof node.$ref === 'string') {
      const name = /^#\/components\/schemas\/(.+)$/.exec(node.$ref)?.[1];
      if (name) visit(schemas[name]);
    }
    const types = Array.isArray(node.type) ? node.type : [node.type];
    if (node['x-column'] === undefined && node.enum === undefined && node.const === undefined) {
      if (types.includes('integer')) {
        mergeBounds(node, 'int');
        count += 1;
      } else if (types.includes('string') && node.format === undefined) {
        mergeBounds(node, 'nvarchar(max)');
        count += 1;
      }
    }
    for (const key of ['properties', 'patternProperties']) for (const child of Object.values<Json>(node[key] ?? {})) visit(child);
    for (const key of ['items', 'additionalProperties', 'not']) if (node[key] && typeof node[key] === 'object') visit(node[key]);
    for (const key of ['allOf', 'anyOf', 'oneOf', 'prefixItems']) for (const child of node[key] ?? []) visit(child);
  };
  for (const item of Object.values<Json>(doc.paths ?? {})) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      for (const media of Object.values<Json>(op.requestBody?.content ?? {})) visit(media.schema);
    }
  }
  return count;
}
