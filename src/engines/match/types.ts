import type { FilterNode } from '../query/types';

/** Body of POST /{entity}/match (openapi.yaml MatchRequest). */
export interface MatchRequest {
  matchString: string;
  matchFields: string[];
  select: string[];
  maxDistance: number;
  filters?: FilterNode;
}

export interface MatchResult {
  asOf: string;
  data: Array<Record<string, unknown> & { distance: number }>;
}
