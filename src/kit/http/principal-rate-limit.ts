import type { RequestHandler, Response } from 'express';
import { actorOf } from './authenticate.js';

export interface RateLimiter {
  /** Requests per second per principal, across every server process. */
  readonly perSecond: number;
  /** This process's share of it: `perSecond` divided among the live server processes. */
  share(): number;
  /** The most requests a principal may send at once here (a second's share, at least one). */
  burst(): number;
  /**
   * Takes `count` requests (one by default) of `principal`'s: undefined if they may go, else the
   * seconds until they may (never, for more than the burst: the caller refuses those outright).
   */
  take(principal: string, count?: number): number | undefined;
}

/**
 * A token bucket per principal (as many as there are principals): `perSecond` requests a second
 * on average, in bursts of up to one second's worth (at least one request). Off unless
 * SWITCHBOARD_RATE_LIMIT is set: one agent token may legitimately drive hundreds of requests a
 * second. The buckets are this process's own, in memory — a request costs no statement — and
 * each process takes its share of the rate, divided among the live server processes, so that
 * the processes behind one load balancer together let through at most `perSecond` (fewer, when
 * a principal's requests crowd onto one of them).
 */
export function createRateLimiter(
  perSecond: number,
  processes: () => number = () => 1,
): RateLimiter {
  const share = () => perSecond / Math.max(1, processes());
  const burst = () => Math.max(1, share());
  const buckets = new Map<string, { tokens: number; at: number }>();
  return {
    perSecond,
    share,
    burst,
    take(principal, count = 1) {
      const now = performance.now();
      const [rate, capacity] = [share(), burst()];
      const bucket = buckets.get(principal) ?? { tokens: capacity, at: now };
      bucket.tokens = Math.min(capacity, bucket.tokens + ((now - bucket.at) / 1000) * rate);
      bucket.at = now;
      buckets.set(principal, bucket);
      if (bucket.tokens < count) return Math.max(1, Math.ceil((count - bucket.tokens) / rate));
      bucket.tokens -= count;
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
    refuse(res, overRate(limiter, name, wait));
  };
}

/**
 * Mounted after the body is read, on a surface that takes batches (MCP's JSON-RPC): a batch of N
 * messages is N requests of the limit, not one — the one its HTTP request was charged, and N − 1
 * more. A batch larger than the limit's burst could never go, and is refused as such.
 */
export function limitBatchRate(
  limiter: RateLimiter | undefined,
  refuse: (res: Response, message: string) => void,
): RequestHandler {
  return (req, res, next) => {
    const body: unknown = req.body;
    if (!limiter || !Array.isArray(body) || body.length < 2) return next();
    const { name } = actorOf(res);
    const burst = limiter.burst();
    if (body.length > burst) {
      return refuse(
        res,
        `${name} sent a batch of ${body.length} messages, more than this server's limit per principal lets through at once (SWITCHBOARD_RATE_LIMIT, ${limiter.perSecond} requests per second${shared(limiter)}): send at most ${Math.floor(burst)} at a time`,
      );
    }
    const wait = limiter.take(name, body.length - 1);
    if (wait === undefined) return next();
    res.set('retry-after', String(wait));
    refuse(res, overRate(limiter, name, wait));
  };
}

const overRate = (limiter: RateLimiter, name: string, wait: number) =>
  `${name} sent more than ${limiter.perSecond} requests per second, this server's limit per principal (SWITCHBOARD_RATE_LIMIT${shared(limiter)}): wait ${wait} s and send it again`;

/** The share of the rate a process takes, when it is less than the whole. */
const shared = (limiter: RateLimiter) =>
  limiter.share() < limiter.perSecond
    ? `, shared out among the live server processes: ${Number(limiter.share().toFixed(2))} a second on this one`
    : '';
