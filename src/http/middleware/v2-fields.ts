import type { RequestHandler } from 'express';
import { v2FieldProblem } from '../../v2/fields';

const READ_ROUTE = /^\/[^/]+\/(query|match)\/?$/;

/**
 * v2 request fields (withChildren, offset, filter, selectFields) on a v3 read answer 400
 * V2_FIELD_REJECTED naming the v3 replacement. Mounted before the contract validator, whose
 * generic unknown-field error would otherwise answer first. Path relative to /api/v3.
 */
export const rejectV2Fields: RequestHandler = (req, _res, next) => {
  if (req.method !== 'POST' || !READ_ROUTE.test(req.path)) return next();
  const problem = v2FieldProblem(req.body);
  next(problem);
};
