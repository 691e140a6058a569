import type postgres from 'postgres';
import { backgroundLoop } from '../../platform/background-loop.js';
import type { ProbotOctokit } from 'probot';
import { withAdvisoryLock } from '../../platform/db/with-advisory-lock.js';
import { conflict } from '../../data/index.js';
import type { Logger } from '../../platform/logger.js';
import type { DeliveryReconciler, ReconcileTuning } from '../provider.js';
import { reconcileDeliveries } from './reconcile-deliveries.js';

const LOCK = 'switchboard.reconcile';
/** How long a pass by hand waits for another process's pass. */
const HAND_WAIT_MS = 60_000;

/**
 * Reconcile with GitHub's delivery log (reconcile-deliveries.ts) in the background of every
 * server process with App credentials, one process at a time: whoever holds the advisory lock
 * runs the pass, the others skip their turn.
 */
export function createDeliveryReconciler(options: {
  sql: postgres.Sql;
  /** Straight to PostgreSQL (Database.direct), for the advisory lock: see withAdvisoryLock. */
  direct: postgres.Sql;
  log: Logger;
  /** The App's own Octokit (a JWT, no installation): Probot's `auth()`. */
  auth(): Promise<ProbotOctokit>;
  /** Why a pass cannot run now (no App credentials yet), or null: background passes wait for it. */
  off: () => string | null;
  tuning: ReconcileTuning;
}): DeliveryReconciler {
  const { sql, direct, log, tuning } = options;
  const stopping = new AbortController();
  const inFlight = new Set<Promise<unknown>>();

  const pass = (sinceMs: number) => async () =>
    reconcileDeliveries(sql, await options.auth(), { sinceMs, tuning, signal: stopping.signal });

  const track = <T>(promise: Promise<T>): Promise<T> => {
    inFlight.add(promise);
    void promise.finally(() => inFlight.delete(promise)).catch(() => {});
    return promise;
  };

  const background = async () => {
    if (options.off() !== null) return;
    const outcome = await withAdvisoryLock(direct, LOCK, pass(tuning.windowMs));
    if (!outcome.locked) return;
    const report = outcome.value;
    const counts = Object.fromEntries(
      ['requested', 'refused', 'waiting', 'given_up', 'deferred'].map((outcome) => [
        outcome,
        report.missing.filter((missing) => missing.outcome === outcome).length,
      ]),
    );
    const fields = {
      listed: report.listed,
      events: report.events,
      recorded: report.recorded,
      ...counts,
    };
    if (report.missing.length) log.info(fields, "reconciled GitHub's delivery log");
    else log.debug(fields, "reconciled GitHub's delivery log: nothing missing");
  };

  const loop = backgroundLoop({
    everyMs: tuning.intervalMs,
    pass: () => track(background()),
    onError: (error) =>
      // The message only: an Octokit error carries its request, JWT and all.
      log.warn(
        { error: error instanceof Error ? error.message : String(error) },
        "reconciling GitHub's delivery log failed; will try again",
      ),
  });

  return {
    start() {
      // With no interval, passes are by hand only.
      if (stopping.signal.aborted || tuning.intervalMs <= 0) return;
      loop.start();
    },
    async run(sinceMs) {
      const outcome = await track(
        withAdvisoryLock(direct, LOCK, pass(sinceMs), {
          waitMs: HAND_WAIT_MS,
          signal: stopping.signal,
        }),
      );
      if (!outcome.locked) {
        throw conflict(
          'another switchboard process is reconciling right now; try again in a minute',
        );
      }
      return outcome.value;
    },
    async stop() {
      stopping.abort();
      await loop.stop();
      await Promise.allSettled([...inFlight]);
    },
  };
}
