import type postgres from 'postgres';
import { backgroundLoop } from '../platform/background-loop.js';
import { historyPosition } from '../data/index.js';
import type { Logger } from '../platform/logger.js';

export interface ChangeFeed {
  /**
   * Called on every tick that may have seen a change (`changed`: the ledger moved lately), and
   * now and then regardless (`changed` false); the feed polls only while someone listens.
   */
  subscribe(listener: (changed: boolean) => void): () => void;
  close(): void;
}

/** After a change is seen, pages look again on this many more ticks: a commit may lag its id. */
const HOT_TICKS = 3;
/** And every this many ticks regardless: what time alone changes (an approval expiring). */
const FULL_EVERY_TICKS = 20;

/**
 * Tells open console pages (and the API's streams that follow changes) that the ledger may have
 * changed, without adding anything to the write path: no NOTIFY (PostgreSQL serialises the
 * commits of notifying transactions) and no trigger. Every change appends a history row, so the
 * history's position moves; reading it is one tiny statement, done only while at least one
 * stream listens. Sequences move before their transaction commits, so a change stays "hot" for
 * a few more ticks.
 */
export function createChangeFeed(
  sql: postgres.Sql,
  { intervalMs = 250, log }: { intervalMs?: number; log: Logger },
): ChangeFeed {
  const listeners = new Set<(changed: boolean) => void>();
  const position = historyPosition(sql);
  let last: string | undefined;
  let hot = 0;
  let quiet = 0;
  let closed = false;

  const poll = backgroundLoop({
    everyMs: intervalMs,
    delayFirst: true,
    pass: async () => {
      const now = await position();
      if (now !== last) {
        last = now;
        hot = HOT_TICKS + 1;
      }
      if (hot > 0 || ++quiet >= FULL_EVERY_TICKS) {
        const changed = hot > 0;
        hot = Math.max(0, hot - 1);
        quiet = 0;
        for (const listener of listeners) listener(changed);
      }
    },
    onError: (error) => log.warn({ err: error }, 'change poll failed; trying again'),
  });

  return {
    subscribe(listener) {
      listeners.add(listener);
      if (!closed) poll.start();
      return () => {
        listeners.delete(listener);
        if (listeners.size === 0) void poll.stop();
      };
    },
    close() {
      closed = true;
      listeners.clear();
      void poll.stop();
    },
  };
}
