import { PROBLEM_CODES, type ProblemCode, problemTypeUri } from './registry';

/** One input field to blame: a JSON path such as `lines[2].debitAmount`, and a per-field code. */
export interface FieldError {
  field: string;
  code: string;
  message?: string;
}

export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance: string;
  correlationId: string;
  errors?: FieldError[];
  [extension: string]: unknown;
}

export interface ProblemOptions {
  errors?: FieldError[];
  /** Response headers to add, e.g. Retry-After, Allow. */
  headers?: Record<string, string>;
  /** Extension members of the problem document (RFC 9457 section 3.2), e.g. lockUser. */
  extensions?: Record<string, unknown>;
  /** What it was made from (a driver error): for the logs and for callers that recover; never rendered. */
  cause?: unknown;
}

/**
 * Throw this from anywhere (engines and storage included) to answer with a problem document.
 * It knows nothing of HTTP transport: the HTTP layer (src/http/errors/render.ts) renders it.
 */
export class ApiProblem extends Error {
  readonly code: ProblemCode;
  readonly status: number;
  readonly detail: string;
  readonly errors?: FieldError[];
  readonly headers: Record<string, string>;
  readonly extensions: Record<string, unknown>;

  constructor(code: ProblemCode, detail: string, options: ProblemOptions = {}) {
    super(detail, options.cause !== undefined ? { cause: options.cause } : undefined);
    this.name = 'ApiProblem';
    this.code = code;
    this.status = PROBLEM_CODES[code].status;
    this.detail = detail;
    if (options.errors && options.errors.length > 0) this.errors = options.errors;
    this.headers = options.headers ?? {};
    this.extensions = options.extensions ?? {};
  }
}

export function problemBody(problem: ApiProblem, instance: string, correlationId: string): ProblemBody {
  const spec = PROBLEM_CODES[problem.code];
  const body: ProblemBody = {
    ...problem.extensions,
    type: problemTypeUri(problem.code),
    title: spec.title,
    status: spec.status,
    detail: problem.detail,
    instance,
    correlationId,
  };
  if (problem.errors) body.errors = problem.errors;
  return body;
}
