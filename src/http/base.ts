/** Path prefix of the v3 API (src/app.ts mounts it; the start banner prints it). */
export const API_BASE = '/api/v3';

/** Path prefix of the frozen v2 surface (src/app.ts mounts src/v2/routes.ts there; scopes on it go by path). */
export const V2_BASE = '/api/v2';
