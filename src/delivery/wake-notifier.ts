import { randomUUID } from 'node:crypto';
import type postgres from 'postgres';
import { wakeChannel, type Todo, type Wake } from '../ledger/index.js';
import type { Logger } from '../logger.js';

export interface WakeNotifier {
  /**
   * Announces the wakes of todos whose writes have committed (created with `announceWake`).
   * Returns at once; the NOTIFY follows, many wakes to one transaction.
   */
  announce: (todos: Todo[]) => void;
  /** Resolves once everything announced so far has been sent. */
  flush: () => Promise<void>;
}

/**
 * The wakes of new todos, sent after their writes committed rather than inside them: a
 * transaction that NOTIFYs holds a database-wide lock through its WAL flush, so notifying writes
 * commit one at a time (migrations/0012). Here all that were announced meanwhile go out in one
 * statement whose commit does not wait for the disk (a doorbell needs no durability). If it
 * fails, the dispatchers' catch-up read rings those todos later: a lost wake costs latency only.
 */
export function createWakeNotifier(sql: postgres.Sql, schema: string, log: Logger): WakeNotifier {
  const channel = wakeChannel(schema);
  let queued: string[] = [];
  let sending: Promise<void> | undefined;

  const send = async () => {
    // Announcements of this same tick go together.
    await Promise.resolve();
    while (queued.length > 0) {
      const payloads = queued;
      queued = [];
      try {
        await sql`
          select pg_notify(${channel}, payload)
          from (select set_config('synchronous_commit', 'off', true)) quick,
               unnest(${payloads}::text[]) payload`;
      } catch (error) {
        log.warn({ err: error, wakes: payloads.length }, 'wakes not sent; catch-up will ring them');
      }
    }
    sending = undefined;
  };

  return {
    announce(todos) {
      for (const todo of todos) {
        if (todo.state !== 'pending') continue;
        const wake: Wake = {
          todo_id: todo.id,
          queue: todo.queue,
          assignee: todo.assignee,
          requested_by: todo.requested_by,
          wake_id: randomUUID(),
          event: todo.kind === 'approval' ? 'approval' : 'claimable',
        };
        queued.push(JSON.stringify(wake));
      }
      if (queued.length > 0) sending ??= send();
    },
    flush: () => sending ?? Promise.resolve(),
  };
}
