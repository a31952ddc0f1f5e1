import type { Response } from 'express';
import { problemBody, type ApiProblem } from '../../errors/problem';

/** Writes a problem document with X-Error-Code and X-Correlation-Id. */
export function sendProblem(res: Response, problem: ApiProblem, instance: string): void {
  const correlationId = String(res.getHeader('X-Correlation-Id') ?? res.locals.correlationId ?? '');
  for (const [name, value] of Object.entries(problem.headers)) res.setHeader(name, value);
  res.setHeader('X-Error-Code', problem.code);
  res.setHeader('X-Correlation-Id', correlationId);
  res.locals.errorCode = problem.code;
  res.status(problem.status);
  res.type('application/problem+json');
  res.send(JSON.stringify(problemBody(problem, instance, correlationId)));
}
