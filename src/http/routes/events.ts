import { Router, type Request, type Response, type NextFunction } from 'express';
import { apiRouter } from '../base';
import type { Services } from '../../services';
import type { components } from '../../../generated/api-types';
import { requireAdmin } from '../middleware/auth';
import { requestActor } from '../audit';
import type { DeliveryRow, EndpointRow } from '../../events';
import type { AttemptRow } from '../../events/store';
import { planDeliveryList, planEndpointList, project } from '../../events/lists';
import { readEnvelope } from '../../engines/query/envelope';

type S = components['schemas'];

/**
 * Webhook endpoints and the delivery log (tag Events). Admin keys only; the contract validator
 * has checked every body before a handler runs. The events wing (src/events) decides; this file
 * renders.
 */

function endpointBody(e: EndpointRow): S['WebhookEndpoint'] {
  return {
    id: e.id,
    url: e.url,
    description: e.description,
    eventTypes: e.eventTypes as S['EventType'][],
    status: e.state === 'deleted' ? 'disabled' : e.state,
    statusReason: e.stateReason,
    ownerKeyId: e.ownerKeyId,
    previousSecretExpiresAt: e.storedPreviousSecret && e.previousSecretUntil ? e.previousSecretUntil.toISOString() : null,
    createdAt: e.createdAt.toISOString(),
    updatedAt: e.updatedAt.toISOString(),
  };
}

function deliveryBody(d: DeliveryRow, attempts: AttemptRow[]): S['WebhookDelivery'] {
  return {
    id: d.id,
    endpointId: d.endpointId,
    eventId: d.eventId,
    eventType: d.eventType,
    status: d.status,
    attempts: d.attempts,
    createdAt: d.createdAt.toISOString(),
    nextAttemptAt: d.status === 'pending' && d.nextAttemptAt ? d.nextAttemptAt.toISOString() : null,
    lastAttemptAt: d.lastAttemptAt?.toISOString() ?? null,
    lastStatusCode: d.lastStatusCode,
    lastError: d.lastError,
    attemptLog: attempts.map((a) => ({ attempt: a.attempt, attemptedAt: a.attemptedAt.toISOString(), statusCode: a.statusCode, outcome: a.outcome as S['WebhookAttempt']['outcome'], error: a.error, durationMs: a.durationMs })),
  };
}

/** The calling key and the request's correlation id: who the audit log says made the change. */
const by = requestActor;

type Handler = (req: Request, res: Response) => Promise<unknown>;
const wrap = (h: Handler) => (req: Request, res: Response, next: NextFunction) => {
  h(req, res).then((body) => res.json(body), next);
};

export function eventsRoutes(services: Services): Router {
  const router = apiRouter();
  // Admin keys only (the spec: subscriptions are the company administrator's). Failures go to the
  // app's error handler, which maps database errors through the boundary like every other route.
  const post = (path: string, h: Handler) => router.post(path, requireAdmin, wrap(h));
  // services.events is read per request (tests swap in one with a fake clock, DNS and HTTP client).
  const withAttempts = async (d: DeliveryRow) => deliveryBody(d, await services.events.store.attempts(d.id));

  post('/webhook-endpoints', async (req, res) => {
    const b = req.body as S['WebhookEndpointCreateRequest'];
    const e = await services.events.createEndpoint(by(res), { url: b.url, eventTypes: b.eventTypes, description: b.description ?? null });
    const body: S['WebhookEndpointCreated'] = { ...endpointBody(e), secret: e.secret };
    return body;
  });

  // The lists speak the query language of every /query and answer the read envelope (src/events/lists.ts).
  post('/webhook-endpoints/query', async (req) => {
    const { plan, select } = planEndpointList(req.body as S['WebhookEndpointQueryRequest'], { maxFilterDepth: services.config.maxFilterDepth });
    const asOf = new Date(); // before the read, as every read envelope's (decision 0400)
    const { total, rows } = await services.events.store.endpointsPage(plan);
    const body = readEnvelope(asOf, plan.pageNumber, plan.pageSize, total, rows.map((e) => project(endpointBody(e), select))) as S['WebhookEndpointPage'];
    return body;
  });

  post('/webhook-endpoints/:id/update', async (req, res) => endpointBody(await services.events.updateEndpoint(by(res), String(req.params.id), req.body as S['WebhookEndpointUpdateRequest'])));

  post('/webhook-endpoints/:id/delete', async (req, res) => {
    const e = await services.events.deleteEndpoint(by(res), String(req.params.id));
    const body: S['WebhookEndpointDeleted'] = { id: e.id, deleted: true };
    return body;
  });

  post('/webhook-endpoints/:id/rotate-secret', async (req, res) => {
    const r = await services.events.rotateSecret(by(res), String(req.params.id));
    const body: S['WebhookSecretRotated'] = { id: r.endpoint.id, secret: r.secret, previousSecretExpiresAt: r.previousSecretExpiresAt.toISOString() };
    return body;
  });

  post('/webhook-endpoints/:id/test', async (req, res) => withAttempts(await services.events.sendTest(by(res), String(req.params.id))));

  post('/webhook-deliveries/query', async (req) => {
    const { plan, select } = planDeliveryList(req.body as S['WebhookDeliveryQueryRequest'], { maxFilterDepth: services.config.maxFilterDepth });
    const asOf = new Date(); // before the read, as every read envelope's (decision 0400)
    const { total, rows } = await services.events.store.deliveriesPage(plan);
    // The attempts are read only when attemptLog is answered.
    const render = !select || select.includes('attemptLog') ? withAttempts : async (d: DeliveryRow) => deliveryBody(d, []);
    const data = await Promise.all(rows.map(async (d) => project(await render(d), select)));
    const body = readEnvelope(asOf, plan.pageNumber, plan.pageSize, total, data) as S['WebhookDeliveryPage'];
    return body;
  });

  post('/webhook-deliveries/resend-failed', async (req, res) => {
    const b = req.body as S['WebhookResendFailedRequest'];
    const body: S['WebhookResendFailedResult'] = { resent: await services.events.resendFailed(by(res), new Date(b.since), b.endpointId) };
    return body;
  });

  post('/webhook-deliveries/:id/resend', async (req, res) => withAttempts(await services.events.resend(by(res), String(req.params.id))));

  return router;
}
