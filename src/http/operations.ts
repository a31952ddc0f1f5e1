import type { RequestHandler } from 'express';
import { OPERATIONS } from '../../generated/operations';
import type { OperationInfo } from '../catalog/types';

/** Label for requests that match no operation (kept to one value so metric cardinality stays bounded). */
export const UNMATCHED = 'unmatched';

/**
 * `/api/v3/{entity}/query` -> a regex with one segment per template. `exact`: the path as the
 * document spells it, case-sensitive and without a trailing slash (the v3 contract's paths);
 * otherwise any case and one trailing slash (the routes Express matches by its default: the
 * ops routes and the frozen v2 surface; decision 0445).
 */
function templateRegex(template: string, exact = false): RegExp {
  const pattern = template
    .split(/(\{[^}]+\})/)
    .map((part) => (part.startsWith('{') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return exact ? new RegExp(`^${pattern}$`) : new RegExp(`^${pattern}/?$`, 'i');
}

interface CompiledPath {
  /** The path as registered (`/api/v2/query/{entity}`). */
  template: string;
  regex: RegExp;
  /** Method (upper case) -> operationId. */
  methods: Map<string, string>;
}

/**
 * Resolves `METHOD /path` to the operationId of openapi.yaml (generated/operations.ts) without
 * the validator, so that requests rejected before validation (401, 429, 415, ...) are still
 * labelled in the request log and the metrics. Also answers with the methods a path accepts.
 */
export class OperationMap {
  private readonly exact = new Map<string, CompiledPath>();
  private readonly templated: CompiledPath[] = [];
  /** Non-contract routes served by this server (health, metrics, docs). */
  private readonly extra = new Map<string, CompiledPath>();

  constructor(base: string, operations: readonly OperationInfo[] = OPERATIONS) {
    const byPath = new Map<string, CompiledPath>();
    for (const op of operations) {
      const full = base + op.path;
      let entry = byPath.get(full);
      if (!entry) {
        entry = { template: full, regex: templateRegex(full, true), methods: new Map() };
        byPath.set(full, entry);
        if (full.includes('{')) this.templated.push(entry);
        else this.exact.set(full, entry);
      }
      entry.methods.set(op.method.toUpperCase(), op.operationId);
    }
  }

  /** Registers a route outside the contract (GET /healthz -> `healthz`). */
  addRoute(method: string, path: string, operationId: string): void {
    let entry = this.extra.get(path);
    if (!entry) {
      entry = { template: path, regex: templateRegex(path), methods: new Map() };
      this.extra.set(path, entry);
    }
    entry.methods.set(method.toUpperCase(), operationId);
  }

  private find(path: string): CompiledPath | undefined {
    // The contract's paths exactly as the document spells them (case-sensitive, no trailing slash).
    const contract = this.exact.get(path) ?? this.templated.find((entry) => entry.regex.test(path));
    if (contract) return contract;
    const trimmed = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
    const hit = this.extra.get(trimmed);
    if (hit) return hit;
    for (const entry of this.extra.values()) if (entry.regex.test(trimmed)) return entry;
    return undefined;
  }

  /**
   * The path as registered, for a path that names a route in another case or with a trailing
   * slash (`/API/V2/Query/part/` -> `/api/v2/query/part`): the template's literal segments, the
   * request's own segments where the template has a parameter. Undefined when no route matches.
   */
  canonicalPath(path: string): string | undefined {
    const entry = this.find(path);
    if (!entry) return undefined;
    const trimmed = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
    const given = trimmed.split('/');
    const wanted = entry.template.split('/');
    if (given.length !== wanted.length) return undefined;
    return wanted.map((segment, i) => (segment.includes('{') ? given[i] : segment)).join('/');
  }

  /** operationId for this method and path, or UNMATCHED. HEAD counts as GET. */
  resolve(method: string, path: string): string {
    const entry = this.find(path);
    if (!entry) return UNMATCHED;
    const m = method.toUpperCase();
    return entry.methods.get(m) ?? (m === 'HEAD' ? entry.methods.get('GET') : undefined) ?? UNMATCHED;
  }

  /** The methods a path accepts (for Allow), or undefined for an unknown path. */
  allowed(path: string): string[] | undefined {
    const entry = this.find(path);
    if (!entry) return undefined;
    const methods = [...entry.methods.keys()];
    if (methods.includes('GET') && !methods.includes('HEAD')) methods.push('HEAD');
    return methods;
  }
}

/** Sets res.locals.operationId as early as possible (logs and metrics read it). */
export function operationLabel(map: OperationMap): RequestHandler {
  return (req, res, next) => {
    res.locals.operationId = map.resolve(req.method, req.path);
    next();
  };
}
