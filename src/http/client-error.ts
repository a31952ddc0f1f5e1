import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { ApiProblem, problemBody } from '../errors/problem';
import type { ProblemCode } from '../errors/registry';
import { SECURITY_HEADERS } from './middleware/security-headers';

/** The security headers every answer carries (no HSTS: without a request there is no X-Forwarded-Proto to trust). */
const SECURITY_HEADER_LINES = Object.entries(SECURITY_HEADERS)
  .map(([name, value]) => `${name}: ${value}\r\n`)
  .join('');

/**
 * Requests Node's HTTP parser rejects never reach Express (malformed request line or headers,
 * headers over 16 KiB, a request that does not arrive in time). Node would answer them with a bare
 * status line; here they get a problem document with X-Error-Code, X-Correlation-Id and the
 * security headers like everything else, and a request log line.
 */
export function answerClientErrors(server: Server, logger: Logger): void {
  server.on('clientError', (err: NodeJS.ErrnoException & { rawPacket?: Buffer }, socket: Duplex) => {
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    let code: ProblemCode = 'MALFORMED_REQUEST';
    let detail = 'The request is not valid HTTP/1.1.';
    if (err.code === 'HPE_HEADER_OVERFLOW') {
      code = 'HEADERS_TOO_LARGE';
      detail = 'The request line and headers exceed 16 KiB.';
    } else if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT' || err.code === 'ERR_HTTP_HEADERS_TIMEOUT') {
      code = 'REQUEST_TIMEOUT';
      detail = 'The request did not arrive completely in time.';
    }
    const correlationId = randomUUID();
    const target = /^[A-Z]+ (\/[^ ?\r\n]{0,2048})/.exec(err.rawPacket?.toString('latin1', 0, 2100) ?? '')?.[1] ?? '/';
    const problem = new ApiProblem(code, detail);
    const body = JSON.stringify(problemBody(problem, target, correlationId));
    socket.end(
      `HTTP/1.1 ${problem.status} ${STATUS_CODES[problem.status] ?? 'Error'}\r\n` +
        'Content-Type: application/problem+json; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        `X-Error-Code: ${code}\r\n` +
        `X-Correlation-Id: ${correlationId}\r\n` +
        SECURITY_HEADER_LINES +
        'Connection: close\r\n\r\n' +
        body,
    );
    logger.info({ correlationId, route: target, status: problem.status, errorCode: code, parserError: err.code }, 'request');
  });
}
