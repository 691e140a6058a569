import { ECDH } from 'node:crypto';
import { isIP } from 'node:net';
import { Router } from 'express';
import type postgres from 'postgres';
import { z } from 'zod';
import { savePushSubscription } from './push-subscriptions.js';
import { webRequestOf } from '../../kit/pages/web-request.js';

/** base64url of exactly `bytes` bytes (browsers write it unpadded; a padded one is taken too). */
const base64url = (bytes: number, what: string) =>
  z
    .string()
    .max(200)
    .transform((text) => text.replace(/=+$/, ''))
    .refine(
      (text) => /^[A-Za-z0-9_-]+$/.test(text) && Buffer.from(text, 'base64url').length === bytes,
      `${what} must be ${bytes} bytes, base64url`,
    );

/**
 * A push service's address, as a browser's `PushSubscription` names it: https, a host name (the
 * browsers' push services have one; an IP address or localhost would let a signed-in human point
 * the server at its own network), no credentials.
 */
const Endpoint = z
  .string()
  .max(2048)
  .refine((text) => {
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      return false;
    }
    const host = url.hostname.replace(/^\[|\]$/g, '');
    return (
      url.protocol === 'https:' &&
      url.href === text &&
      !url.username &&
      !url.password &&
      isIP(host) === 0 &&
      !/(^|\.)localhost\.?$/i.test(host) &&
      host.includes('.')
    );
  }, 'endpoint must be the https address of a browser push service');

const SubscriptionForm = z.object({
  endpoint: Endpoint,
  // The browser's P-256 public key (uncompressed point) and its auth secret.
  p256dh: base64url(65, 'p256dh').refine(
    (text) => isP256Point(Buffer.from(text, 'base64url')),
    'p256dh must be a point on P-256, uncompressed',
  ),
  auth: base64url(16, 'auth'),
});

/**
 * `POST /push/subscriptions`: the page's **Notify me** (console.js) hands in the browser's push
 * subscription. Behind the console's guard like every change: a session, its CSRF token, the
 * console's own `Origin`.
 */
export function pushRoutes(sql: postgres.Sql): Router {
  const router = Router({ caseSensitive: true });
  router.post('/push/subscriptions', async (req, res) => {
    const web = webRequestOf(res);
    if (!web) throw new Error('guarded route reached without a session');
    const form = SubscriptionForm.parse(req.body);
    await savePushSubscription(sql, web.session, form);
    res.status(204).end();
  });
  return router;
}

/** A browser's public key that really is a point on the curve (else nothing can be sent to it). */
function isP256Point(key: Buffer): boolean {
  if (key[0] !== 0x04) return false;
  try {
    ECDH.convertKey(key, 'prime256v1');
    return true;
  } catch {
    return false;
  }
}
