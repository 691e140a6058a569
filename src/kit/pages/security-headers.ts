import type { RequestHandler } from 'express';

/**
 * A strict Content-Security-Policy for every console answer: scripts and styles only from
 * switchboard's own files (no inline script, no inline style, no eval), nothing framed,
 * nothing sent elsewhere. No address leaks to another site (same-origin referrers only: with
 * `no-referrer`, browsers send `Origin: null` on a plain form POST, which the CSRF check refuses).
 */
export const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  // the Web Push service worker, /sw.js
  "worker-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

export const securityHeaders: RequestHandler = (_req, res, next) => {
  res.set({
    'content-security-policy': CSP,
    'referrer-policy': 'same-origin',
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
    'cross-origin-opener-policy': 'same-origin',
  });
  next();
};
