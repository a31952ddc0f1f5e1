import { Router } from 'express';
import type { Services } from '../../services';
import type { components } from '../../../generated/api-types';

type PingResult = components['schemas']['PingResult'];

export function utilityRoutes(services: Services): Router {
  const router = Router();
  router.post('/utility/ping', async (_req, res, next) => {
    try {
      const started = process.hrtime.bigint();
      await services.knex.raw('select 1 as ok');
      const elapsedMs = Number(process.hrtime.bigint() - started) / 1e6;
      const body: PingResult = {
        status: 'ok',
        databaseRoundTripMs: Math.round(elapsedMs * 1000) / 1000,
        engine: services.engine,
        serverTime: new Date().toISOString(),
      };
      res.json(body);
    } catch (err) {
      next(err);
    }
  });
  return router;
}
