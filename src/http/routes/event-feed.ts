import { Router, type Request, type Response, type NextFunction } from 'express';
import { apiRouter } from '../base';
import type { Services } from '../../services';
import type { components } from '../../../generated/api-types';
import { requestKey, requireAdmin } from '../middleware/auth';
import type { FeedRow } from '../../events/feed';
import type { EventQueryBody } from '../../events/feed/request';
import type { OpsState } from './ops';
import { requestActor } from '../audit';

type S = components['schemas'];

/**
 * The pull feed of change events (tag Events): POST /events/query for any key that may read, and
 * the feed subscriptions (/event-feeds), admin keys only like webhook endpoints. The contract
 * validator has checked every body; the events wing (src/events/feed) decides; this file renders.
 */

function feedBody(f: FeedRow): S['EventFeed'] {
  return {
    id: f.id,
    description: f.description,
    eventTypes: f.eventTypes as S['EventType'][],
    status: f.state === 'deleted' ? 'paused' : f.state,
    statusReason: f.stateReason,
    ownerKeyId: f.ownerKeyId,
    lastReadAt: f.lastReadAt?.toISOString() ?? null,
    createdAt: f.createdAt.toISOString(),
    updatedAt: f.updatedAt.toISOString(),
  };
}

function apiKey(res: Response) {
  return requestKey(res);
}

type Handler = (req: Request, res: Response) => Promise<unknown>;
const wrap = (h: Handler) => (req: Request, res: Response, next: NextFunction) => {
  h(req, res).then((body) => {
    // A long poll whose client went away: nobody to answer.
    if (!res.destroyed) res.json(body);
  }, next);
};

export function eventFeedRoutes(services: Services): Router {
  const router = apiRouter();
  // services.events is read per request (tests swap in one with a fake clock).
  const admin = (path: string, h: Handler) => router.post(path, requireAdmin, wrap(h));

  router.post(
    '/events/query',
    wrap(async (req, res) => {
      // Stop waiting when the client goes away or the server drains (it then answers what it has).
      const gone = new AbortController();
      res.once('close', () => gone.abort());
      const ops = req.app.locals.opsState as OpsState | undefined;
      const body: S['EventPage'] = await services.events.feed.query(apiKey(res), (req.body ?? {}) as EventQueryBody, {
        run: (fn) => services.boundary.read(fn, { what: 'reading events' }),
        maxFilterDepth: services.config.maxFilterDepth,
        signal: gone.signal,
        stopping: () => ops?.draining === true,
      }) as S['EventPage'];
      return body;
    }),
  );

  admin('/event-feeds', async (req, res) => {
    const b = req.body as S['EventFeedCreateRequest'];
    return feedBody(await services.events.feed.createFeed(requestActor(res), { eventTypes: b.eventTypes, description: b.description ?? null }));
  });

  admin('/event-feeds/query', async (req) => {
    const b = req.body as S['EventFeedQueryRequest'];
    const pageNumber = b.page?.pageNumber ?? 1;
    const pageSize = b.page?.pageSize ?? 100;
    const asOf = new Date(); // before the read, as every read envelope's (decision 0400)
    const { total, rows } = await services.events.feed.store.feeds({ ...(b.status ? { states: b.status } : {}), limit: pageSize, offset: (pageNumber - 1) * pageSize });
    const body: S['EventFeedPage'] = { asOf: asOf.toISOString(), page: { pageNumber, pageSize, totalCount: total, returnedCount: rows.length }, data: rows.map(feedBody) };
    return body;
  });

  admin('/event-feeds/:id/update', async (req, res) => feedBody(await services.events.feed.updateFeed(requestActor(res), String(req.params.id), req.body as S['EventFeedUpdateRequest'])));

  admin('/event-feeds/:id/delete', async (req, res) => {
    const f = await services.events.feed.deleteFeed(requestActor(res), String(req.params.id));
    const body: S['EventFeedDeleted'] = { id: f.id, deleted: true };
    return body;
  });

  return router;
}
