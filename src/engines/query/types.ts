/**
 * Shapes shared by the read pipeline: validated body -> plan -> SQL -> envelope.
 *
 * The request shapes mirror openapi.yaml (BaseQueryRequest, FilterNode, MatchCondition); the
 * resolved shapes carry catalog definitions instead of published names, so nothing after
 * `plan.ts` looks a name up again.
 */
import type { ChildDef, EntityDef, FieldDef } from '../../catalog/types';
import type { Dec } from '../../storage/decimal';

export type FilterValue = string | number | boolean;

export interface MatchLeaf {
  field?: string;
  operator: string;
  value?: FilterValue;
  values?: FilterValue[];
  fields?: string[];
  pairs?: Array<Record<string, FilterValue>>;
}

export interface FilterNode {
  and?: FilterNode[];
  or?: FilterNode[];
  match?: MatchLeaf;
}

export interface PageRequest {
  pageNumber?: number;
  pageSize?: number;
}

export interface QueryRequest {
  select?: string[];
  children?: string[];
  filters?: FilterNode;
  orderBy?: string[];
  page?: PageRequest;
  lastUpdated?: string;
  createdSince?: string;
  /** Entity-specific request extras (see EntityDef.requestExtras). */
  [extra: string]: unknown;
}

/**
 * A value checked against its field's kind, not yet encoded for a driver: decimals are exact
 * decimals, dates `YYYY-MM-DD`, datetimes a UTC instant, uuids lower-case.
 */
export type TypedValue =
  | { kind: 'integer'; value: number }
  | { kind: 'decimal'; value: Dec }
  | { kind: 'string'; value: string }
  | { kind: 'boolean'; value: boolean }
  | { kind: 'uuid'; value: string }
  | { kind: 'date'; value: string }
  | { kind: 'datetime'; value: Date };

export type CompareOp = '=' | '<>' | '>' | '<' | '>=' | '<=';

/** The resolved filter tree: names replaced by field definitions, values typed. */
export type Condition =
  | { kind: 'and'; items: Condition[] }
  | { kind: 'or'; items: Condition[] }
  | { kind: 'compare'; field: FieldDef; op: CompareOp; value: TypedValue }
  | { kind: 'like'; field: FieldDef; negate: boolean; pattern: string }
  | { kind: 'in'; field: FieldDef; values: TypedValue[] }
  | { kind: 'inPairs'; fields: FieldDef[]; pairs: TypedValue[][] };

export interface OrderTerm {
  column: string;
  direction: 'asc' | 'desc';
}

export interface QueryPlan {
  entity: EntityDef;
  /** Top-level fields to return, in the order requested (all fields when select is omitted). */
  fields: FieldDef[];
  /** Child collections to attach, in the order requested. */
  children: ChildDef[];
  where: Condition | null;
  /** Requested ordering followed by the unique tiebreak (the key column). */
  order: OrderTerm[];
  pageNumber: number;
  pageSize: number;
  offset: number;
}
