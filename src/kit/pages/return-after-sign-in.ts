import type { Request, Response } from 'express';
import { parse, serialize } from 'cookie';
import { localPath, type CookiePolicy } from './web-request.js';

/** Long enough to sign in (a link from `switchboard open`, or GitHub), short enough to be forgotten. */
const RETURN_SECONDS = 15 * 60;
const cookieName = ({ secure }: CookiePolicy) =>
  secure ? '__Host-switchboard_return' : 'switchboard_return';

/**
 * A page that needs a signed-in human (a client's consent page) sends the browser to sign in and
 * remembers itself here, so that signing in comes back to it rather than to the approvals.
 */
export function rememberReturn(res: Response, policy: CookiePolicy, path: string): void {
  res.append(
    'set-cookie',
    serialize(cookieName(policy), localPath(path), {
      httpOnly: true,
      sameSite: 'lax',
      secure: policy.secure,
      path: '/',
      maxAge: RETURN_SECONDS,
    }),
  );
}

/** The page to go back to after signing in, if one asked (used once: the cookie is cleared). */
export function takeReturn(req: Request, res: Response, policy: CookiePolicy): string | undefined {
  const path = parse(req.get('cookie') ?? '')[cookieName(policy)];
  if (path === undefined) return undefined;
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
  return localPath(path);
}
