import type { RequestHandler, Response } from 'express';
import { actorOf } from './authenticate.js';

export interface RateLimiter {
  /** Requests per second per principal. */
  readonly perSecond: number;
  /** Takes one request of `principal`'s: undefined if it may go, else the seconds until it may. */
  take(principal: string): number | undefined;
}

/**
 * A token bucket per principal (as many as there are principals): `perSecond` requests a second
 * on average, in bursts of up to one second's worth (at least one request). Off unless
 * SWITCHBOARD_RATE_LIMIT is set: one agent token may legitimately drive hundreds of requests a
 * second. The buckets are this process's own.
 */
export function createRateLimiter(perSecond: number): RateLimiter {
  const capacity = Math.max(1, perSecond);
  const buckets = new Map<string, { tokens: number; at: number }>();
  return {
    perSecond,
    take(principal) {
      const now = performance.now();
      const bucket = buckets.get(principal) ?? { tokens: capacity, at: now };
      bucket.tokens = Math.min(capacity, bucket.tokens + ((now - bucket.at) / 1000) * perSecond);
      bucket.at = now;
      buckets.set(principal, bucket);
      if (bucket.tokens < 1) return Math.max(1, Math.ceil((1 - bucket.tokens) / perSecond));
      bucket.tokens -= 1;
      return undefined;
    },
  };
}

/**
 * Mounted after authentication: a principal's request over its rate is refused with 429 and
 * Retry-After, in the words of its surface (`refuse`: the API's `{error, code}`, MCP's JSON-RPC).
 */
export function limitPrincipalRate(
  limiter: RateLimiter | undefined,
  refuse: (res: Response, message: string) => void,
): RequestHandler {
  return (_req, res, next) => {
    if (!limiter) return next();
    const { name } = actorOf(res);
    const wait = limiter.take(name);
    if (wait === undefined) return next();
    res.set('retry-after', String(wait));
    refuse(
      res,
      `${name} sent more than ${limiter.perSecond} requests per second, this server's limit per principal (SWITCHBOARD_RATE_LIMIT): wait ${wait} s and send it again`,
    );
  };
}
