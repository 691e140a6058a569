import { MemoryStore } from 'express-rate-limit';

export interface FailureLimiter {
  /** The limit: failures allowed per key per window. */
  readonly limit: number;
  readonly windowMs: number;
  /** Seconds until `key` may fail again, when it is over the limit; undefined otherwise. */
  retryAfter(key: string): Promise<number | undefined>;
  /** Counts one failure of `key`; the seconds it must now wait, if this one went over the limit. */
  fail(key: string): Promise<number | undefined>;
  close(): void;
}

/**
 * Failures counted per key (a client's address) in fixed windows: only failures count, so that
 * nobody's successes use up the allowance, and every caller decides what over the limit means
 * for it. express-rate-limit's MemoryStore keeps the windows and forgets idle keys in bulk.
 */
export function createFailureLimiter({
  limit,
  windowMs,
}: {
  limit: number;
  windowMs: number;
}): FailureLimiter {
  const store = new MemoryStore();
  store.init({ windowMs } as Parameters<MemoryStore['init']>[0]);
  const secondsUntil = (time: Date | undefined) =>
    Math.max(1, Math.ceil(((time?.getTime() ?? Date.now() + windowMs) - Date.now()) / 1000));
  return {
    limit,
    windowMs,
    async retryAfter(key) {
      const seen = await store.get(key);
      return seen && seen.totalHits >= limit ? secondsUntil(seen.resetTime) : undefined;
    },
    async fail(key) {
      const seen = await store.increment(key);
      return seen.totalHits > limit ? secondsUntil(seen.resetTime) : undefined;
    },
    close: () => store.shutdown(),
  };
}
