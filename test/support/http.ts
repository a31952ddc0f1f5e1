/**
 * Helpers of the HTTP surface tests: problem-document assertions and raw requests (for what
 * supertest cannot send, such as a body without Content-Type).
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type express from 'express';
import type { Response } from 'supertest';
import { PROBLEM_CODES, problemTypeUri, type ProblemCode } from '../../src/errors/registry';
import { serveOnLoopback } from './net';

export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** What the helpers below need of a test app: a keyed POST (test/support/app.ts `TestApp.post`). */
interface Poster {
  post(path: string, body?: unknown): PromiseLike<Response>;
}

/** POST that must answer 200; returns the body (the failure message shows the request and the answer). */
export async function postOk(app: Poster, path: string, body: unknown): Promise<any> {
  const res = await app.post(path, body);
  assert.equal(res.status, 200, `${path} ${JSON.stringify(body).slice(0, 300)} -> ${res.status} ${JSON.stringify(res.body).slice(0, 500)}`);
  return res.body;
}

/** POST that must fail with `status` and problem `code` (a problem document), naming `fields` in errors[] when given. */
export async function postFails(app: Poster, path: string, body: unknown, status: number, code: string, fields?: string[]): Promise<any> {
  const res = await app.post(path, body);
  assert.equal(res.status, status, `${JSON.stringify(body).slice(0, 300)} -> ${res.status} ${JSON.stringify(res.body)}`);
  assert.equal(res.headers['x-error-code'], code, JSON.stringify(res.body));
  assert.match(String(res.headers['content-type']), /application\/problem\+json/);
  assert.equal(res.body.status, status);
  if (fields) assert.deepEqual(res.body.errors?.map((e: { field: string }) => e.field), fields, JSON.stringify(res.body));
  return res.body;
}

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  body: any;
}

/**
 * Asserts the response is the problem document of `code`: status, content type, X-Error-Code,
 * X-Correlation-Id equal to correlationId, type/title/status/instance. Returns the body.
 */
export function assertProblem(res: Response | RawResponse, code: ProblemCode, instance?: string): Record<string, any> {
  const spec = PROBLEM_CODES[code];
  const text = 'text' in res ? res.text : '';
  assert.equal(res.status, spec.status, `status of ${code}: ${text}`);
  assert.match(String(res.headers['content-type']), /^application\/problem\+json/, 'problem content type');
  assert.equal(res.headers['x-error-code'], code, 'X-Error-Code');
  const correlationId = res.headers['x-correlation-id'];
  assert.match(String(correlationId), UUID_RE, 'X-Correlation-Id');
  const body = typeof res.body === 'object' && res.body !== null && Object.keys(res.body).length > 0 ? res.body : JSON.parse(text);
  assert.equal(body.type, problemTypeUri(code));
  assert.equal(body.title, spec.title);
  assert.equal(body.status, spec.status);
  assert.equal(typeof body.detail, 'string');
  assert.ok(body.detail.length > 0, 'detail is not empty');
  assert.equal(body.correlationId, correlationId, 'correlationId equals X-Correlation-Id');
  if (instance !== undefined) assert.equal(body.instance, instance);
  return body;
}

/** A raw HTTP request against the app on an ephemeral loopback port. */
export async function rawRequest(
  app: express.Express,
  options: { method: string; path: string; headers?: Record<string, string>; body?: string | Buffer },
): Promise<RawResponse> {
  const server = await serveOnLoopback(app);
  try {
    const { port } = server;
    return await new Promise<RawResponse>((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, method: options.method, path: options.path, headers: options.headers ?? {} }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: unknown;
          try {
            body = text ? JSON.parse(text) : undefined;
          } catch {
            body = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body });
        });
      });
      req.on('error', reject);
      if (options.body !== undefined) req.write(options.body);
      req.end();
    });
  } finally {
    await server.close();
  }
}
