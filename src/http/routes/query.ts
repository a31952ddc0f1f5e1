import { Router, type Request, type Response } from 'express';
import { apiRouter } from '../base';
import type { Services } from '../../services';
import type { Catalog, EntityDef } from '../../catalog/types';
import { ADMIN_CATALOG, CATALOG } from '../../../generated/catalog';
import { ApiProblem } from '../../errors/problem';
import { executePlan } from '../../engines/query/run';
import { planQuery } from '../../engines/query/plan';
import { ReadBudget } from '../../engines/query/read-budget';
import { executeMatch, planMatch } from '../../engines/match/run';
import type { QueryRequest } from '../../engines/query/types';
import type { MatchRequest } from '../../engines/match/types';
import { entityAsSeenBy } from '../../auth/scopes';
import { installedView } from '../../catalog/installed';

/**
 * POST /{entity}/query and /{entity}/match: one generic handler each over the catalog (and
 * /{entity}/query over the admin catalog, admin keys only: the audit log).
 * The contract validator has already checked the body against the entity's request schema
 * (and answered 404 for paths that do not exist); the engines check names and values.
 */
export function queryRoutes(services: Services, catalog: Catalog = CATALOG, adminCatalog: Catalog = ADMIN_CATALOG): Router {
  const router = apiRouter();
  const qd = services.queryDialect;
  // Pages in flight are what a process's memory grows with under load (read-budget.ts).
  const budget = new ReadBudget();

  /**
   * The entity as the calling key sees it (without employee PII unless the key holds `pii`) on the
   * installed build of the accounting database (without the columns it lacks).
   */
  const entityOf = (req: Request, res: Response, operation: 'query' | 'match'): EntityDef => {
    const name = String(req.params.entity);
    // The service's own records (the audit log): admin keys only, query only.
    const admin = operation === 'query' && Object.prototype.hasOwnProperty.call(adminCatalog, name) ? adminCatalog[name] : undefined;
    if (admin) {
      if (res.locals.apiKey?.role !== 'admin') throw new ApiProblem('FORBIDDEN', `Reading ${name} needs an admin API key.`);
      return admin;
    }
    const entity = Object.prototype.hasOwnProperty.call(catalog, name) ? catalog[name] : undefined;
    if (!entity || (operation === 'match' && entity.matchFields.length === 0)) {
      throw new ApiProblem('UNKNOWN_ENTITY', `There is no ${operation} operation for entity "${name}".`);
    }
    return installedView(entityAsSeenBy(entity, res.locals.apiKey?.scopes), services.installed);
  };

  router.post('/:entity/query', async (req, res) => {
    const entity = entityOf(req, res, 'query');
    const plan = planQuery(entity, (req.body ?? {}) as QueryRequest, { maxFilterDepth: services.config.maxFilterDepth });
    const release = await budget.acquire(ReadBudget.weigh(plan.pageSize, plan.children.length));
    try {
      // Through the on-premise boundary: deadline (504) and driver errors (502).
      const envelope = await services.boundary.read((db) => executePlan(db, qd, plan), { what: `reading ${entity.entity}` });
      res.json(envelope);
    } finally {
      release();
    }
  });

  router.post('/:entity/match', async (req, res) => {
    const entity = entityOf(req, res, 'match');
    const plan = planMatch(entity, (req.body ?? {}) as MatchRequest, { maxFilterDepth: services.config.maxFilterDepth });
    const { truncated, ...result } = await services.boundary.read((db) => executeMatch(db, qd, plan), { what: `matching ${entity.entity}` });
    // A cut list is never mistaken for the whole (the contract's XResultTruncated).
    res.setHeader('X-Result-Truncated', String(truncated));
    res.json(result);
  });

  return router;
}
