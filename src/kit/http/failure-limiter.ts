import type postgres from 'postgres';
import { countAuthFailure } from '../../data/principals/count-auth-failure.js';

export interface FailureLimiter {
  /** The limit: failures allowed per key per window, across every server process. */
  readonly limit: number;
  readonly windowMs: number;
  /**
   * Seconds until `key` may fail again, once it has used up its allowance, as far as this
   * process has been told by the counts of the failures it counted itself; undefined otherwise.
   * Asks the database nothing: it is asked before every webhook body is read.
   */
  retryAfter(key: string): number | undefined;
  /**
   * Counts one failure of `key` in the shared count; the seconds it must now wait, if this one
   * went over the limit. From the one that used up the allowance, {@link retryAfter} says so
   * too, in this process.
   */
  fail(key: string): Promise<number | undefined>;
  close(): void;
}

/** Keys this process remembers as over the limit, at most; the expired ones go first. */
const MAX_REMEMBERED = 10_000;

/**
 * Failures counted per key (a client's address) in fixed windows, in PostgreSQL (auth_failures),
 * so that every server process on the database counts the same failures: one upsert per failure,
 * and nothing for a success, so that nobody's successes use up the allowance. Every caller
 * decides what over the limit means for it. `name` keeps one limiter's counts apart from
 * another's.
 */
export function createFailureLimiter({
  sql,
  name,
  limit,
  windowMs,
}: {
  sql: postgres.Sql;
  name: string;
  limit: number;
  windowMs: number;
}): FailureLimiter {
  const over = new Map<string, number>();
  const remember = (key: string, seconds: number) => {
    if (over.size >= MAX_REMEMBERED) {
      const now = Date.now();
      for (const [each, until] of over) if (until <= now) over.delete(each);
      if (over.size >= MAX_REMEMBERED) over.delete(over.keys().next().value!);
    }
    over.set(key, Date.now() + seconds * 1000);
  };
  return {
    limit,
    windowMs,
    retryAfter(key) {
      const until = over.get(key);
      if (until === undefined) return undefined;
      const left = until - Date.now();
      if (left > 0) return Math.max(1, Math.ceil(left / 1000));
      over.delete(key);
      return undefined;
    },
    async fail(key) {
      const row = await countAuthFailure(sql, name, key, windowMs);
      const wait = Math.max(1, row.seconds);
      // Its allowance used up: what is checked before it fails (a webhook body) is refused now.
      if (row.failures >= limit) remember(key, wait);
      return row.failures > limit ? wait : undefined;
    },
    close: () => over.clear(),
  };
}
