import type postgres from 'postgres';
import { backgroundLoop } from '../platform/background-loop.js';
import { withAdvisoryLock } from '../platform/db/with-advisory-lock.js';
import type { Logger } from '../platform/logger.js';
import { type HistoryCursor } from '../data/index.js';
import { pruneOldRows, type Pruned } from '../data/retention/prune-old-rows.js';

export interface Pruner {
  start(): void;
  /** One pass now, unless another process is pruning (null then). */
  runOnce(): Promise<Pruned | null>;
  /** Stops after the statement in flight. */
  stop(): Promise<void>;
}

/** Once an hour: the batches are small, and a day's rows are few next to 30 days' worth. */
export const PRUNE_INTERVAL_MS = 3_600_000;

/**
 * Retention in the background of every server process, one process at a time (an advisory
 * lock: the others skip their turn): a pass on start, then every `intervalMs`.
 */
export function createPruner(options: {
  sql: postgres.Sql;
  /** Straight to PostgreSQL (Database.direct), for the advisory lock: see withAdvisoryLock. */
  direct: postgres.Sql;
  log: Logger;
  retentionDays: number;
  intervalMs?: number;
  batchSize?: number;
}): Pruner {
  const { sql, log } = options;
  const intervalMs = options.intervalMs ?? PRUNE_INTERVAL_MS;
  const cursor: { history: HistoryCursor | null } = { history: null };
  const stopping = new AbortController();
  let running: Promise<Pruned | null> | undefined;

  const runOnce = (): Promise<Pruned | null> => {
    running ??= (async () => {
      const started = performance.now();
      const outcome = await withAdvisoryLock(options.direct, 'switchboard.retention', () =>
        pruneOldRows(sql, {
          retentionDays: options.retentionDays,
          batchSize: options.batchSize,
          cursor,
          signal: stopping.signal,
        }),
      );
      if (!outcome.locked) return null;
      const pruned = outcome.value;
      if (Object.values(pruned).some((count) => count > 0)) {
        log.info(
          {
            ...pruned,
            retention_days: options.retentionDays,
            ms: Math.round(performance.now() - started),
          },
          'pruned rows past retention',
        );
      }
      return pruned;
    })().finally(() => {
      running = undefined;
    });
    return running;
  };

  const loop = backgroundLoop({
    everyMs: intervalMs,
    pass: runOnce,
    onError: (error) => log.warn({ err: error }, 'retention pass failed; will try again'),
  });

  return {
    start() {
      if (!stopping.signal.aborted) loop.start();
    },
    runOnce,
    async stop() {
      stopping.abort();
      await loop.stop();
      await running?.catch(() => {});
    },
  };
}
