/**
 * A webhook receiver on loopback for the events tests (the development switch lets deliveries go
 * to 127.0.0.1): it keeps every request it gets and answers as the test says.
 */
import type http from 'node:http';
import { serveOnLoopback, type LoopbackServer } from './net';

/** A request the receiver got: its headers, the raw body (what the signature covers) and the body parsed (undefined if not JSON). */
export interface ReceivedWebhook {
  headers: http.IncomingHttpHeaders;
  body: string;
  json: any;
}

/** What the receiver answers: a status and headers, or a promise of them (an answer held back). */
type Answer = { status: number; headers?: Record<string, string> };

/** Pushes every request onto `received` and answers `answer()` (default 204, no body). Deliveries go to `${url}/hook`. */
export function startWebhookReceiver(received: ReceivedWebhook[], answer: () => Answer | Promise<Answer> = () => ({ status: 204 })): Promise<LoopbackServer> {
  return serveOnLoopback((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      received.push({ headers: req.headers, body, json: parsed(body) });
      void Promise.resolve(answer()).then(({ status, headers }) => res.writeHead(status, headers ?? {}).end());
    });
  });
}

function parsed(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return undefined;
  }
}
