/**
 * The one registry of problem codes. Append-only: a code, once published, keeps its
 * status and meaning forever and is never reused (spec, Errors). docs/errors.md is kept
 * equal to this table by test/contract/errors-registry.test.ts.
 */
export const PROBLEM_TYPE_BASE = 'https://accounting-integration.example/problems/';

export interface ProblemCodeSpec {
  readonly status: number;
  readonly title: string;
  /** When an integrator sees it; shown in docs/errors.md. */
  readonly when: string;
}

export const PROBLEM_CODES = {
  VALIDATION_FAILED: { status: 400, title: 'Request validation failed', when: 'A body field, query parameter or header breaks its rule; errors[] names each field.' },
  MALFORMED_JSON: { status: 400, title: 'Malformed JSON body', when: 'The body is not parseable JSON.' },
  MALFORMED_REQUEST: { status: 400, title: 'Malformed HTTP request', when: 'The request is not valid HTTP/1.1 (request line or headers); answered before any routing.' },
  FILTER_TOO_DEEP: { status: 400, title: 'Filter tree too deep', when: 'The and/or nesting of filters exceeds the documented bound.' },
  UNKNOWN_FIELD: { status: 400, title: 'Unknown field', when: 'A select, orderBy, filter or match field name is not a published field of the entity.' },
  UNKNOWN_CHILD_COLLECTION: { status: 400, title: 'Unknown child collection', when: 'A children name is not a collection of the entity; detail lists the valid ones.' },
  V2_FIELD_REJECTED: { status: 400, title: 'v2 field not accepted in v3', when: 'A v2 request field (withChildren, offset, filter, selectFields) was sent; detail names the v3 replacement.' },
  IDEMPOTENCY_KEY_INVALID: { status: 400, title: 'Invalid Idempotency-Key', when: 'The Idempotency-Key header is empty, longer than 128 characters or not printable ASCII, or missing where required.' },
  UNAUTHORIZED: { status: 401, title: 'Unauthorized', when: 'x-api-key is missing, not a UUID, or not a recognised key.' },
  FORBIDDEN: { status: 403, title: 'Forbidden', when: 'The API key is valid but its role may not call this operation.' },
  ROUTE_NOT_FOUND: { status: 404, title: 'Route not found', when: 'No operation exists at this path.' },
  UNKNOWN_ENTITY: { status: 404, title: 'Unknown entity', when: 'A read names an entity that the API does not publish.' },
  REFERENCE_NOT_FOUND: { status: 404, title: 'Referenced record not found', when: 'A write refers to a record (account, vendor, job, source, ...) that does not exist; errors[] names the field.' },
  METHOD_NOT_ALLOWED: { status: 405, title: 'Method not allowed', when: 'The path exists but not for this HTTP method; the Allow header lists the methods.' },
  REQUEST_TIMEOUT: { status: 408, title: 'Request timeout', when: 'The request (headers and body) did not arrive completely in time.' },
  IDEMPOTENCY_KEY_REUSED: { status: 409, title: 'Idempotency-Key reused', when: 'The key was used before with a different body or route.' },
  IDEMPOTENCY_KEY_IN_FLIGHT: { status: 409, title: 'Idempotent request in flight', when: 'A request with the same key is still being processed; retry after Retry-After.' },
  TRANSACTION_NUMBER_CONFLICT: { status: 409, title: 'Transaction number already posted', when: 'A journal with this transactionNumber was already posted with different lines.' },
  LOCK_HELD: { status: 409, title: 'Maintenance lock held by another user', when: 'un-lock was called by someone other than the holder without override.' },
  DOCUMENT_NUMBER_CONFLICT: { status: 409, title: 'Document number already entered', when: 'A document with this number (an AP invoice: the same vendor and invoice number) was already entered with different content.' },
  PAYLOAD_TOO_LARGE: { status: 413, title: 'Request body too large', when: 'The body exceeds the documented size limit.' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, title: 'Unsupported media type', when: 'Content-Type is missing or is not application/json.' },
  PERIOD_CLOSED: { status: 422, title: 'Posting period closed', when: 'The resolved posting period is later than the open period; detail names both.' },
  PERIOD_INVALID: { status: 422, title: 'Invalid posting period', when: "An explicit period and year pair, or the period derived from the document's date, is not a period of the ledger setup (no such fiscal period)." },
  JOURNAL_UNBALANCED: { status: 422, title: 'Journal does not balance', when: 'Total debits differ from total credits.' },
  JOURNAL_LINE_INVALID: { status: 422, title: 'Journal line invalid', when: 'A line carries both a debit and a credit, or neither.' },
  TOTALS_DISAGREE: { status: 422, title: 'Totals disagree with lines', when: 'A document total differs from the sum of its lines.' },
  COLUMN_UNAVAILABLE: { status: 422, title: 'Column not available', when: 'A requested column does not exist in the installed accounting database build.' },
  BUSINESS_RULE_VIOLATED: { status: 422, title: 'Business rule violated', when: 'The document is well-formed but cannot be applied (for example stock below zero, a closed job, or a total of the books it would push past its column: `ledgerBalance` or `exceededValue` names that total, errors[] the request field behind it).' },
  MAINTENANCE_LOCK: { status: 423, title: 'Database locked for maintenance', when: 'The accounting database is locked for maintenance; the body names the holder. Retry after Retry-After.' },
  RATE_LIMITED: { status: 429, title: 'Rate limit exceeded', when: 'The API key exceeded its request rate; retry after Retry-After.' },
  HEADERS_TOO_LARGE: { status: 431, title: 'Request headers too large', when: 'The request line and headers together exceed 16 KiB.' },
  INTERNAL_ERROR: { status: 500, title: 'Internal server error', when: 'An unexpected failure; the body is redacted and correlationId is the handle to the full log record.' },
  CHANGE_STAMP_UNSUPPORTED: { status: 501, title: 'Change stamp not supported', when: 'lastUpdated or createdSince was sent to an entity without that stamp; the body names the field.' },
  NOT_IMPLEMENTED: { status: 501, title: 'Not implemented', when: 'The posting path is not wired up in this build.' },
  DATABASE_REFUSED: { status: 502, title: 'Accounting database refused the request', when: 'The database refused (constraint, deadlock, permission, busy, out of resources); a dropped or refused connection is DATABASE_UNAVAILABLE. Retry with backoff.' },
  SERVICE_DISABLED: { status: 503, title: 'Service switched off for this key', when: 'The operator switched the service off for the API key; the body carries the reason. Retry-After 300.' },
  SERVICE_UNAVAILABLE: { status: 503, title: 'Service unavailable', when: 'The server is starting or shutting down.' },
  UPSTREAM_TIMEOUT: { status: 504, title: 'Accounting database did not answer in time', when: 'The deadline passed, the database timed the statement out, or the connection failed while the COMMIT of a write was in flight; a write outcome is unknown. Retry with the same Idempotency-Key only.' },
  VALUE_OUT_OF_RANGE: { status: 400, title: "Value out of range", when: "A value passed the contract but the accounting database cannot store or compare it (out of the column's range, precision or length, or an invalid character); errors[] names the field where it can be known." },
  DATABASE_UNAVAILABLE: { status: 502, title: "Accounting database unavailable", when: "The connection to the accounting database was refused, reset or terminated before anything was applied (for a write: before its COMMIT was sent; the Idempotency-Key is not consumed). No Retry-After; retry with backoff." },
  INSUFFICIENT_STOCK: { status: 422, title: "Insufficient stock", when: "A movement takes more of a part from a location than is available there; errors[] names the line, and the problem names the part, the location and the quantities asked and available." },
  DOCUMENT_NOT_POSTABLE: { status: 422, title: "Document not postable", when: "The referenced document is in a state that does not accept this write (for example a closed or void purchase order, a payroll record that is not Computed, a work order that is not Open)." },
  DOCUMENT_ALREADY_POSTED: { status: 409, title: "Document already posted", when: "The document (for example a payroll record of the batch) was posted before; nothing was posted again. errors[] names each posted record and the problem lists their ledger transactions." },
  WEBHOOK_ENDPOINT_NOT_FOUND: { status: 404, title: "Webhook endpoint not found", when: "No webhook endpoint (not deleted) has the id in the path or body, or the delivery to resend belongs to a deleted endpoint." },
  WEBHOOK_DELIVERY_NOT_FOUND: { status: 404, title: "Webhook delivery not found", when: "No delivery in the delivery log (kept 30 days) has the id in the path." },
  WEBHOOK_TARGET_REFUSED: { status: 422, title: "Webhook target refused", when: "The webhook url is not https or its host is, or resolves to, a non-public address (loopback, private, link-local, unique-local, carrier-grade NAT, metadata, reserved); errors[] names url and the problem gives the reason." },
  SCOPE_MISSING: { status: 403, title: "API key lacks the scope", when: "The API key is valid but was created with scopes that do not include the one this operation needs; detail and `requiredScope` name it." },
  PII_FIELD_WITHHELD: { status: 400, title: "Personal data field withheld", when: "A select, orderBy, filter or match field names employee personal data and the API key was created without the pii scope; errors[] names the field." },
  AUTH_THROTTLED: { status: 429, title: "Too many failed authentications", when: "This client address presented more unknown, revoked, malformed or disabled API keys than the service allows in a minute; until Retry-After every request from it is refused unless it carries an active key." },
  EVENT_CURSOR_EXPIRED: { status: 410, title: "Event cursor expired", when: "The `after` cursor of POST /events/query is unknown or points before the oldest event still kept (30 days); `oldestCursor` names the oldest cursor still available." },
  EVENT_CURSOR_NOT_FOUND: { status: 404, title: "Event cursor not found", when: "The `after` cursor of POST /events/query was given to another API key (what a page holds depends on the key)." },
  EVENT_FEED_NOT_FOUND: { status: 404, title: "Event feed not found", when: "No event feed (not deleted) has the id in the path." },
  LOCK_NOT_CONFIRMED: { status: 504, title: "Maintenance lock not confirmed in time", when: "Lock or un-lock was recorded, but a live process of the service did not confirm within LOCK_ACK_TIMEOUT_MS that it applied it (for a lock: closed its gate and its connections); send the same request again (idempotent for the holder)." },
  STORED_VALUE_UNREADABLE: { status: 502, title: "Stored value cannot be read", when: "The accounting database holds a value that does not fit the type the contract publishes for its field (text in a number, date or boolean column, a number or text beyond its column, a date outside 0001-01-01 to 9999-12-31), written there by another program; `unreadableValue` names the entity, the record and the field. Nothing is guessed or left out: correct the value in the accounting database (a read that does not select the field is not affected). Retrying does not help until then." },
  UPSTREAM_TIMEOUT_NOT_APPLIED: { status: 503, title: "Accounting database did not answer in time; nothing was applied", when: "A write's deadline passed (or the database timed a statement out) before its posting transaction began, while claiming the Idempotency-Key or allocating numbers: nothing was applied and the key is not consumed (a 504 under a key is always stored and replayed as unknown; this is not one). Retry after Retry-After, with the same key or a new one." },
} as const satisfies Record<string, ProblemCodeSpec>;

export type ProblemCode = keyof typeof PROBLEM_CODES;

/** `PERIOD_CLOSED` -> `period-closed`: the last segment of the type URI. */
export function codeSlug(code: string): string {
  return code.toLowerCase().replace(/_/g, '-');
}

export function problemTypeUri(code: ProblemCode): string {
  return PROBLEM_TYPE_BASE + codeSlug(code);
}
