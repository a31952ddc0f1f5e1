/** Path prefix of the v3 API (src/app.ts mounts it; the start banner prints it). */
export const API_BASE = '/api/v3';
