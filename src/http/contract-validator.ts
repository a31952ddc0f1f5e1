import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type ErrorRequestHandler, type RequestHandler } from 'express';
import { middlewareOnOwnDocument } from './openapi-validator-patches';
import { OPERATIONS } from '../../generated/operations';
import { contractDocument } from './openapi-document';
import { isStorableDate, isStorableDateTime } from '../catalog/bounds';
import { ApiProblem } from '../errors/problem';

/**
 * The operation the validator found for a request must be the one the guards judged (the scope
 * check and the lock gate read res.locals.operationId, resolved by src/http/operations.ts): one
 * path, one operation for every piece (decision 0445). They are built to agree; should they ever
 * not (a routing setting changed, a lookup that tolerates what the other does not), the request
 * reaches no handler: 404, as a path that names no operation.
 */
function operationDisagreement(req: express.Request, operationId: unknown): ApiProblem | undefined {
  const found = (req as { openapi?: { schema?: { operationId?: string } } }).openapi?.schema?.operationId;
  // Undefined: no label was set (the warm-up's loopback chain): there are no guards to agree with.
  if (found === undefined || operationId === undefined || found === operationId) return undefined;
  return new ApiProblem('ROUTE_NOT_FOUND', `No operation at ${req.method} ${req.path}.`);
}

/**
 * The document without what only response validation reads (responses, response headers,
 * examples): the validator preprocesses every response schema of every operation at load (a third
 * of its start-up work) even when responses are not validated, as in production.
 */
function requestOnly(doc: Record<string, any>): Record<string, any> {
  for (const item of Object.values<any>(doc.paths ?? {})) {
    for (const op of Object.values<any>(item ?? {})) {
      if (op && typeof op === 'object' && 'responses' in op) op.responses = { default: { description: 'not validated' } };
    }
  }
  if (doc.components) {
    delete doc.components.responses;
    delete doc.components.headers;
    delete doc.components.examples;
  }
  return doc;
}

/**
 * The contract requires the Idempotency-Key on /purchase-order-receipts, but the server accepts a
 * dry run without one (spec, Writes rule 7: a dry run ignores the key), which the document cannot
 * express. So the validator does not check the key: whether it must be present is the write
 * runner's rule (WriteDefinition `requireKey`), which knows the dry run and answers a missing key
 * on a real post with 400 IDEMPOTENCY_KEY_INVALID. Its form too (1 to 128 printable ASCII
 * characters): a dry run ignores a malformed key as well, so the form is checked by the
 * idempotency protocol on real writes only (src/engines/idempotency/key.ts; decision 0407).
 */
export function keyPresenceLeftToTheRunner(doc: Record<string, any>): Record<string, any> {
  const relax = (p: any) => {
    if (p && typeof p === 'object' && p.in === 'header' && String(p.name).toLowerCase() === 'idempotency-key') {
      p.required = false;
      p.schema = { type: 'string' };
    }
  };
  for (const p of Object.values<any>(doc.components?.parameters ?? {})) relax(p);
  for (const item of Object.values<any>(doc.paths ?? {})) {
    for (const p of item?.parameters ?? []) relax(p);
    for (const op of Object.values<any>(item ?? {})) {
      if (op && typeof op === 'object' && Array.isArray(op.parameters)) for (const p of op.parameters) relax(p);
    }
  }
  return doc;
}

/**
 * The warm-up order: the writes (posting) first, whose request bodies are the largest schemas and
 * whose first request would otherwise pay the longest compile; then queries and the rest.
 */
function writesFirst<T extends { operationId: string }>(ops: readonly T[]): T[] {
  const write = (op: T) => /^post[A-Z]/.test(op.operationId);
  return [...ops.filter(write), ...ops.filter((op) => !write(op))];
}

export interface WarmOptions {
  /**
   * Whether the server has no request of its own in flight. The warm-up compiles the next
   * operation only then (it waits otherwise): a request's every step (auth, validation, handler)
   * would otherwise queue behind a compile, one per await, and a first request right after start
   * paid several compiles instead of at most one.
   */
  idle?: () => boolean;
}

export interface ContractValidator {
  /** express-openapi-validator's middleware chain (request validation; responses too when asked), as one handler. */
  middleware: RequestHandler[];
  /**
   * Compiles the validator for every operation now instead of on its first request (the spec is
   * loaded and each operation's schemas compiled lazily: the first hit on an operation costs
   * about 250 ms and errors in the document would only surface then). Runs the same middleware
   * instances on a private loopback server that has no handlers, so nothing is executed.
   */
  warm(options?: WarmOptions): Promise<{ operations: number; ms: number }>;
  /**
   * Loads the document and compiles one operation (ping): what every operation shares (the
   * document, the validator's preprocessing, the shared component schemas it needs). The rest
   * compile on first use or in warm(), each in a few milliseconds. `also`: further operationIds
   * to compile now (the server's: those whose engines the warm-up runs before readiness).
   */
  prepare(also?: readonly string[]): Promise<{ operations: number; ms: number }>;
}

/**
 * One request to the warm-up's loopback server through node:http. Not the global fetch: that is
 * undici, which nothing else in the service loads; its first use cost every worker about 20 MB
 * resident for good (its module graph and compiled code; decision 0039).
 */
function loopbackRequest(port: number, method: string, route: string, body: string | undefined): Promise<{ status: number; pid: string | undefined; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, method, path: route, agent: false, headers: body === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => {
          const pid = res.headers['x-warm-pid'];
          resolve({ status: res.statusCode ?? 0, pid: Array.isArray(pid) ? pid[0] : pid, text });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** `document`: a fresh copy of the document at each call (the validator changes it); default contractDocument. */
export function contractValidator(options: { base: string; validateResponses: boolean; document?: () => Record<string, any> }): ContractValidator {
  // Built on first use (warm-up or first request): loading the document takes seconds of CPU,
  // which would otherwise hold up the server's listen.
  const build = () => middlewareOnOwnDocument({
    apiSpec: keyPresenceLeftToTheRunner(options.validateResponses ? (options.document ?? contractDocument)() : requestOnly((options.document ?? contractDocument)())) as any,
    // allErrors: one entry per culprit, not just the first one ajv meets. coerceTypes false: body
    // values must have their declared type ("5" is not a number); query parameters are always
    // coerced by the validator (?dryRun=true).
    validateRequests: { allowUnknownQueryParameters: false, coerceTypes: false, allErrors: true },
    validateResponses: options.validateResponses ? ({ onError: undefined } as any) : false,
    validateSecurity: false,
    // No operation takes multipart/form-data: without this the validator builds one more ajv over
    // the whole document at start (createRequestAjv for multer's middleware), never used.
    fileUploader: false,
    // ajv-formats' default ("fast") date check is a regex that takes 2026-02-30 and 0000-01-01:
    // dates and timestamps must be real and within what every engine stores (0001..9999).
    formats: {
      date: { type: 'string', validate: isStorableDate },
      'date-time': { type: 'string', validate: isStorableDateTime },
    },
    // The document is linted (make lint) and compiled by the test suite; validating it against the
    // OpenAPI meta-schema again at every start costs seconds of blocked event loop.
    validateApiSpec: false,
    ignoreUndocumented: false,
    // In any case: no spelling of the base escapes validation (the routes answer only the exact
    // spelling, decision 0445; a path in another case is the validator's 404 or the app's).
    ignorePaths: (p: string) => !p.toLowerCase().startsWith(options.base.toLowerCase()),
    $refParser: { mode: 'bundle' },
  });
  let chain: RequestHandler[] | undefined;

  /** Runs the validator's middleware chain in order, as `app.use(...chain)` would. */
  const run: RequestHandler = (req, res, next) => {
    const handlers = (chain ??= build());
    let i = 0;
    const step = (err?: unknown): void => {
      if (err !== undefined && err !== null) return next(err);
      const handler = handlers[i++];
      if (!handler) return next(operationDisagreement(req, res.locals.operationId));
      try {
        void handler(req, res, step);
      } catch (e) {
        next(e);
      }
    };
    step();
  };
  const middleware = [run];

  async function warm(only?: (op: (typeof OPERATIONS)[number]) => boolean, idle?: () => boolean): Promise<{ operations: number; ms: number }> {
    const started = process.hrtime.bigint();
    const mini = express();
    mini.set('query parser', 'simple');
    // The app's routing settings (src/app.ts): the validator's route table is built per settings.
    mini.set('case sensitive routing', true);
    mini.set('strict routing', true);
    mini.use(express.json({ type: () => true, strict: false, limit: '1kb' }));
    // Each answer names the process that gave it: a warm-up answered by another process compiled
    // nothing here (see the exclusive listen below), which is an error, not a silent no-op.
    mini.use((_req, res, next) => {
      res.setHeader('x-warm-pid', String(process.pid));
      next();
    });
    mini.use(...middleware);
    mini.use((_req, res) => {
      res.status(204).end();
    });
    const swallow: ErrorRequestHandler = (err, _req, res, _next) => {
      // 400s are expected (an empty body misses required fields); a 500 means the document is broken.
      const status = typeof err?.status === 'number' ? err.status : 500;
      res.status(status >= 500 ? 500 : 204).type('text/plain').end(status >= 500 ? String(err?.message ?? err) : '');
    };
    mini.use(swallow);
    const server = http.createServer(mini);
    // exclusive: in a node:cluster worker a plain listen(0) is NOT private: the primary holds the
    // socket under the key (127.0.0.1, port 0) and round-robins its connections among every worker
    // listening under that key, so one worker's warm-up requests were answered by the other
    // worker's warm-up server (waiting for that worker's compile, or cut when it closed: "other
    // side closed", readiness 503 for seconds). An exclusive handle is this process's own.
    await new Promise<void>((resolve) => server.listen({ port: 0, host: '127.0.0.1', exclusive: true }, resolve));
    const { port } = server.address() as AddressInfo;
    try {
      for (const op of only ? OPERATIONS.filter(only) : writesFirst(OPERATIONS)) {
        while (idle && !idle()) await new Promise((resolve) => setTimeout(resolve, 2));
        const route = options.base + op.path.replace(/\{[^}]+\}/g, 'warm');
        const hasBody = op.method !== 'GET' && op.method !== 'HEAD';
        const res = await loopbackRequest(port, op.method, route, hasBody ? '{}' : undefined);
        if (res.pid !== String(process.pid)) throw new Error(`the warm-up request for ${op.operationId} was answered by process ${res.pid}, not this one (${process.pid})`);
        if (res.status >= 500) throw new Error(`openapi.yaml does not compile for ${op.operationId}: ${res.text}`);
      }
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    return { operations: only ? OPERATIONS.filter(only).length : OPERATIONS.length, ms: Math.round(Number(process.hrtime.bigint() - started) / 1e6) };
  }

  return { middleware, warm: (o) => warm(undefined, o?.idle), prepare: (also = []) => warm((op) => op.operationId === 'ping' || also.includes(op.operationId)) };
}
