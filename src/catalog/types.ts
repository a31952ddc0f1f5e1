/**
 * Shape of the entity catalog compiled from openapi.yaml's storage extensions
 * (generated/catalog.ts). It is the one mapping between published JSON names and the
 * legacy storage names: nothing else in the code spells a table or column of an entity.
 */
export type FieldKind = 'uuid' | 'integer' | 'string' | 'date' | 'datetime' | 'decimal' | 'boolean';

export interface FieldDef {
  /** Published camelCase JSON name. */
  name: string;
  /** Storage column. */
  column: string;
  kind: FieldKind;
  /** Decimal places of a `decimal` field (its DECIMAL(p, scale) column). */
  scale?: number;
  nullable: boolean;
  /**
   * The column's type as the migrations compile it for SQL Server (`int`, `smallint`,
   * `decimal(14, 2)`, `nvarchar(50)`, `date`...): the bounds of its values (src/catalog/bounds.ts).
   */
  sqlType: string;
}

export interface ChildDef {
  /** Collection name as requested in `children` (e.g. lines, parts). */
  name: string;
  schema: string;
  table: string;
  /** Column of the child table holding the parent's key (`_idref`). */
  parentColumn: string;
  /** Column that orders the child rows (`linnum`). */
  orderColumn: string;
  fields: Record<string, FieldDef>;
}

/** Operators a request extra may apply (the filter-tree operators that take a single value). */
export type ExtraOperator = '=' | '!=' | '>' | '<' | '>=' | '<=' | 'LIKE' | 'NOT LIKE';

/**
 * An entity-specific request field (x-filter in openapi.yaml), applied by the query engine as one
 * more match condition AND-ed with `filters`:
 *   kind 'value': `{ field, operator, value: <the request value> }`
 *   kind 'flag':  a boolean; when true, `{ field, operator, value }` with the fixed value; when false or absent, nothing.
 */
export interface RequestExtra {
  /** Published field of the record the condition applies to. */
  field: string;
  operator: ExtraOperator;
  /** Fixed value of a flag. */
  value?: string | number | boolean;
  kind: 'value' | 'flag';
}

export interface EntityDef {
  /** Path segment, e.g. `ap-invoices`. */
  entity: string;
  /** Record schema name in openapi.yaml, e.g. `ApInvoice`. */
  schema: string;
  table: string;
  tag: string;
  /** operationId of POST /{entity}/query. */
  queryOperationId: string;
  /** Request schema of the query (BaseQueryRequest or an entity-specific one). */
  requestSchema: string;
  /** Unique key column used as the ordering tiebreak and to attach children (`_idnum`). */
  keyColumn: string;
  fields: Record<string, FieldDef>;
  children: Record<string, ChildDef>;
  changeStamps: { lastUpdated?: string; createdSince?: string };
  /** Fields `match` may use; empty where match is not offered. */
  matchFields: string[];
  /** Entity-specific request fields (empty for BaseQueryRequest), by request property name. */
  requestExtras: Record<string, RequestExtra>;
  /** Fields withheld from this view of the entity (src/catalog/pii.ts); naming one is 400, not "unknown". */
  withheld?: readonly string[];
  /**
   * Names the installed build of the accounting database lacks (src/catalog/installed.ts): fields,
   * child collections, `collection.field`, change stamps; naming one is 422 COLUMN_UNAVAILABLE.
   */
  unavailable?: readonly string[];
  /**
   * Fields a write result promises for a record of this entity: the `required` list of the schema
   * that extends this entity's in a write's response (PostedApInvoice for ApInvoice). A write whose
   * result holds such a record needs their columns.
   */
  resultRequired?: readonly string[];
}

export type Catalog = Record<string, EntityDef>;

export interface OperationInfo {
  operationId: string;
  method: string;
  path: string;
  tag: string;
  /** A write: the entities whose records its 200 result holds (through their Posted schemas). */
  resultEntities?: readonly string[];
}
