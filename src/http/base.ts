import { Router } from 'express';

/** Path prefix of the v3 API (src/app.ts mounts it; the start banner prints it). */
export const API_BASE = '/api/v3';

/** Path prefix of the frozen v2 surface (src/app.ts mounts src/v2/routes.ts there, behind v2CanonicalPath). */
export const V2_BASE = '/api/v2';

/**
 * A router of the API surfaces (v3, and v2 behind its canonical path): its paths match only as the
 * document spells them, case-sensitive and without a trailing slash, as the app's own mounts
 * (src/app.ts) and the contract validators do: no piece of the pipeline routes a path another
 * piece did not resolve to the same operation (decision 0445).
 */
export function apiRouter(): Router {
  return Router({ caseSensitive: true, strict: true });
}
