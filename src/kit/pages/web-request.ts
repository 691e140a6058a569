import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Request, RequestHandler, Response } from 'express';
import { parse, serialize } from 'cookie';
import type { Db } from '../../platform/db/open-database.js';
import { actorFor, type Actor } from '../../data/index.js';
import {
  findWebSession,
  SESSION_MAX_AGE_SECONDS,
  type WebSession,
} from '../../data/console/web-sessions.js';

/** Who a console request is from: a human's session, their actor (via `web`), their CSRF token. */
export interface WebRequest {
  session: WebSession;
  actor: Actor & { kind: 'human' };
  csrf: string;
}

export interface CookiePolicy {
  /** Behind https: `Secure` cookies with the `__Host-` prefix (host-only, path /, never over http). */
  secure: boolean;
}

const cookieName = ({ secure }: CookiePolicy) =>
  secure ? '__Host-switchboard_session' : 'switchboard_session';

/** The CSRF token of a session: derived from its secret, so nothing more is stored, and one-way. */
export function csrfTokenFor(sessionToken: string): string {
  return createHmac('sha256', sessionToken)
    .update('switchboard web console csrf')
    .digest('base64url');
}

export function sameToken(given: unknown, expected: string): boolean {
  if (typeof given !== 'string') return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Reads the session cookie on every console request; `res.locals.web` is set when it is live. */
export function readWebSession(sql: Db, policy: CookiePolicy): RequestHandler {
  return async (req, res, next) => {
    const token = parse(req.get('cookie') ?? '')[cookieName(policy)];
    const session = token ? await findWebSession(sql, token) : undefined;
    if (session) {
      res.locals.web = {
        session,
        actor: actorFor(session.human, 'web') as WebRequest['actor'],
        csrf: csrfTokenFor(session.token),
      } satisfies WebRequest;
    }
    next();
  };
}

export function webRequestOf(res: Response): WebRequest | undefined {
  return res.locals.web as WebRequest | undefined;
}

export function setSessionCookie(res: Response, policy: CookiePolicy, token: string): void {
  res.append(
    'set-cookie',
    serialize(cookieName(policy), token, {
      httpOnly: true,
      sameSite: 'lax',
      secure: policy.secure,
      path: '/',
      maxAge: SESSION_MAX_AGE_SECONDS,
    }),
  );
}

export function clearSessionCookie(res: Response, policy: CookiePolicy): void {
  res.append(
    'set-cookie',
    serialize(cookieName(policy), '', {
      httpOnly: true,
      sameSite: 'lax',
      secure: policy.secure,
      path: '/',
      maxAge: 0,
    }),
  );
}

/**
 * The console's own origin, which every state-changing request's `Origin` must be: the public
 * URL when one is configured (behind a proxy), else the address the request was sent to — a
 * Host already checked against the server's own (src/kit/http/host-guard.ts). Only ever compared
 * with: no URL switchboard gives out is built from a request.
 */
export function ownOrigin(req: Request, publicUrl: string | undefined): string {
  if (publicUrl) return new URL(publicUrl).origin;
  return `${req.protocol}://${req.get('host') ?? ''}`;
}

/** A local path to go back to after a form (never another site: `//evil` and `/\evil` are not). */
export function localPath(value: unknown, fallback = '/'): string {
  return typeof value === 'string' && /^\/(?![/\\])[^\s]*$/.test(value) && value.length < 2048
    ? value
    : fallback;
}
