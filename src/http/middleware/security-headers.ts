import type { RequestHandler } from 'express';
import helmet from 'helmet';

/**
 * The security headers of every answer (OWASP REST security cheat sheet; docs/security.md):
 *
 * - `Cache-Control: no-store`: pay rates, balances and birth dates are never kept by a proxy or
 *   a browser (only the reference's static assets, /docs/assets, are cacheable: they drop it);
 * - `X-Content-Type-Options: nosniff`, `Referrer-Policy: no-referrer`;
 * - `Strict-Transport-Security` when HSTS_MAX_AGE_SECONDS is set, on answers that came over TLS
 *   (Express's `req.secure`: X-Forwarded-Proto from a proxy TRUST_PROXY trusts): RFC 6797 8.1
 *   forbids it over plain HTTP, which is all the service itself speaks;
 * - no `X-Powered-By` (src/app.ts disables it) and no `Server` banner (Node sends none).
 *
 * Set first in the pipeline, so every refusal (401, 404, 413, 415, 429, ...) carries them as well.
 * The answers Node's parser refuses before Express (src/http/client-error.ts) carry SECURITY_HEADERS.
 */
export const SECURITY_HEADERS = {
  'Cache-Control': 'no-store',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
} as const;

export interface SecurityHeaderOptions {
  /** 0: no Strict-Transport-Security. */
  hstsMaxAgeSeconds: number;
}

/** Helmet with only what an API answer needs: one middleware, two setHeader calls. */
const apiHelmet = helmet({
  contentSecurityPolicy: false,
  crossOriginEmbedderPolicy: false,
  crossOriginOpenerPolicy: false,
  crossOriginResourcePolicy: false,
  originAgentCluster: false,
  referrerPolicy: { policy: 'no-referrer' },
  strictTransportSecurity: false,
  xContentTypeOptions: true,
  xDnsPrefetchControl: false,
  xDownloadOptions: false,
  xFrameOptions: false,
  xPermittedCrossDomainPolicies: false,
  // Express's own switch is off (src/app.ts): nothing to remove per request.
  xPoweredBy: false,
  xXssProtection: false,
});

export function securityHeaders(options: SecurityHeaderOptions): RequestHandler {
  const hsts =
    options.hstsMaxAgeSeconds > 0
      ? // No includeSubDomains: the service speaks for its own host, not for the operator's other names.
        helmet.strictTransportSecurity({ maxAge: options.hstsMaxAgeSeconds, includeSubDomains: false })
      : undefined;
  return function securityHeadersMiddleware(req, res, next) {
    res.setHeader('Cache-Control', SECURITY_HEADERS['Cache-Control']);
    if (hsts && req.secure) hsts(req, res, () => apiHelmet(req, res, next));
    else apiHelmet(req, res, next);
  };
}

/**
 * The rendered reference (/docs and its assets): a Content-Security-Policy that lets the page
 * load only this service's own scripts, styles, images and document (`data:` images: the
 * stylesheet's inline SVG icons), no inline script or style, and be framed by no one
 * (`frame-ancestors 'none'`, with X-Frame-Options DENY for browsers that predate it).
 */
export const docsHeaders: RequestHandler = helmet({
  contentSecurityPolicy: {
    useDefaults: false,
    directives: {
      defaultSrc: ["'none'"],
      scriptSrc: ["'self'"],
      styleSrc: ["'self'"],
      imgSrc: ["'self'", 'data:'],
      fontSrc: ["'self'"],
      connectSrc: ["'self'"],
      baseUri: ["'none'"],
      formAction: ["'none'"],
      frameAncestors: ["'none'"],
      objectSrc: ["'none'"],
    },
  },
  crossOriginEmbedderPolicy: false,
  crossOriginOpenerPolicy: false,
  crossOriginResourcePolicy: false,
  originAgentCluster: false,
  referrerPolicy: false,
  strictTransportSecurity: false,
  xContentTypeOptions: false,
  xDnsPrefetchControl: false,
  xDownloadOptions: false,
  xFrameOptions: { action: 'deny' },
  xPermittedCrossDomainPolicies: false,
  xPoweredBy: false,
  xXssProtection: false,
});
