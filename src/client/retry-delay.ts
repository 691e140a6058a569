import { ApiError } from './client-errors.js';

/** The longest pause between two tries: a server that is back is noticed within this. */
const MAX_MS = 5000;
/**
 * The longest a server's Retry-After is waited before asking again: a misconfigured hour (or a
 * date years away) must not park a worker; a server that still means it says so again.
 */
export const RETRY_AFTER_CAP_MS = 60_000;

/**
 * How long to pause before try number `failures + 1`. When the failure was the server's answer
 * with a Retry-After (a 429, a 503), that long, up to a minute. Otherwise doubling from half a
 * second up to `maxMs` (5 s), each pause between half and all of that at random, so that the
 * workers of a whole machine, started together under a supervisor, do not knock on a
 * restarting server in step.
 */
export function retryDelay(failures: number, maxMs = MAX_MS, error?: unknown): number {
  if (error instanceof ApiError && error.retryAfterMs !== undefined) return error.retryAfterMs;
  const ceiling = Math.min(maxMs, 500 * 2 ** Math.min(failures, 16));
  return ceiling / 2 + (Math.random() * ceiling) / 2;
}

/**
 * `Retry-After` (RFC 9110 §10.2.3) in milliseconds from `now`: delta-seconds or an HTTP-date, at
 * most RETRY_AFTER_CAP_MS; undefined when absent or neither form.
 */
export function parseRetryAfter(
  header: string | string[] | undefined,
  now = Date.now(),
): number | undefined {
  const value = (Array.isArray(header) ? header[0] : header)?.trim();
  if (!value) return undefined;
  // An HTTP-date starts with its day's name (Sun, 06 Nov 1994 …): Date.parse would take "-5" too.
  const ms = /^\d+$/.test(value)
    ? Number(value) * 1000
    : /^[A-Za-z]{3}/.test(value)
      ? Date.parse(value) - now
      : NaN;
  if (!Number.isFinite(ms)) return undefined;
  return Math.min(RETRY_AFTER_CAP_MS, Math.max(0, ms));
}
