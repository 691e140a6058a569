import type postgres from 'postgres';
import { historyPosition } from '../ledger/index.js';
import type { Logger } from '../logger.js';

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
 * Tells open console pages that the ledger may have changed, without adding anything to the
 * write path: no NOTIFY (PostgreSQL serialises the commits of notifying transactions) and no
 * trigger. Every change appends a history row, so the history's id sequence moves; reading the
 * sequence is one tiny statement, done only while at least one page stream is open. Sequences
 * move before their transaction commits, so a change stays "hot" for a few more ticks.
 */
export function createChangeFeed(
  sql: postgres.Sql,
  { intervalMs = 250, log }: { intervalMs?: number; log: Logger },
): ChangeFeed {
  const listeners = new Set<(changed: boolean) => void>();
  const position = historyPosition(sql);
  let timer: NodeJS.Timeout | undefined;
  let last: string | undefined;
  let hot = 0;
  let quiet = 0;
  let closed = false;

  const tick = async () => {
    try {
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
    } catch (error) {
      log.warn({ err: error }, 'console change poll failed; trying again');
    } finally {
      if (!closed && listeners.size > 0) timer = setTimeout(() => void tick(), intervalMs);
      else timer = undefined;
    }
  };

  return {
    subscribe(listener) {
      listeners.add(listener);
      if (!timer && !closed) timer = setTimeout(() => void tick(), intervalMs);
      return () => {
        listeners.delete(listener);
      };
    },
    close() {
      closed = true;
      clearTimeout(timer);
      listeners.clear();
    },
  };
}
