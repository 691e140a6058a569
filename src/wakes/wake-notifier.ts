import { setTimeout as sleep } from 'node:timers/promises';
import type postgres from 'postgres';
import type { Todo } from '../data/index.js';
import { sendWakes } from '../data/wakes/send-wakes.js';
import { wakeOf } from '../contract/wake.js';
import type { Logger } from '../platform/logger.js';

export interface WakeNotifier {
  /**
   * Announces the wakes of todos whose writes have committed (created with `announceWake`), in
   * the transaction `wakeId` (src/contract/wake.ts): the same JSON the trigger would have sent.
   * Returns at once; the NOTIFY follows, many wakes to one transaction.
   */
  announce: (todos: Todo[], wakeId: string) => void;
  /** Resolves once everything announced so far has been sent (or given up on). */
  flush: () => Promise<void>;
  /** Sends what is queued once more, without retrying: what fails is left to the catch-up read. */
  close: () => Promise<void>;
}

/** How long wakes that cannot be sent (the database away) are retried before catch-up is left to ring them. */
const RETRY_FOR_MS = 30_000;
const RETRY_MAX_DELAY_MS = 1000;
/** Wakes kept for a retry at most; past it, the oldest are left to the catch-up read. */
const QUEUE_MAX = 10_000;

/**
 * The wakes of new todos, sent after their writes committed rather than inside them: a
 * transaction that NOTIFYs holds a database-wide lock through its WAL flush, so notifying writes
 * commit one at a time (migrations/0012). Here all that were announced meanwhile go out in one
 * statement whose commit does not wait for the disk (a doorbell needs no durability). If that
 * fails (the database restarting), it is sent again until it goes through, for half a minute;
 * past that, the dispatchers' catch-up read rings those todos: a lost wake costs latency only.
 */
export function createWakeNotifier(sql: postgres.Sql, schema: string, log: Logger): WakeNotifier {
  let queued: string[] = [];
  let sending: Promise<void> | undefined;

  let closed = false;
  const send = async () => {
    // Announcements of this same tick go together.
    await Promise.resolve();
    let failingSince: number | undefined;
    for (let failures = 0; queued.length > 0;) {
      const payloads = queued;
      queued = [];
      try {
        await sendWakes(sql, schema, payloads);
        failures = 0;
        failingSince = undefined;
      } catch (error) {
        failingSince ??= Date.now();
        if (closed || Date.now() - failingSince > RETRY_FOR_MS) {
          log.warn(
            { err: error, wakes: payloads.length },
            'wakes not sent; catch-up will ring them',
          );
          failingSince = undefined;
          continue;
        }
        queued = payloads.concat(queued).slice(-QUEUE_MAX);
        await sleep(Math.min(RETRY_MAX_DELAY_MS, 50 * 2 ** failures++));
      }
    }
    sending = undefined;
  };

  return {
    announce(todos, wakeId) {
      for (const todo of todos) {
        if (todo.state === 'pending') queued.push(JSON.stringify(wakeOf(todo, wakeId)));
      }
      if (queued.length > 0) sending ??= send();
    },
    flush: () => sending ?? Promise.resolve(),
    async close() {
      closed = true;
      await sending;
    },
  };
}
