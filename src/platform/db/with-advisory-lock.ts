import { setTimeout as sleep } from 'node:timers/promises';
import type postgres from 'postgres';

export type Locked<T> = { locked: true; value: T } | { locked: false };

const POLL_MS = 200;

/**
 * Runs `work` while this process holds the session advisory lock `name` (of this schema: tests
 * run many schemas on one database), so that of several switchboard processes on one database
 * one does the job at a time. The lock is held on a connection of its own, reserved from the pool
 * for as long as the work lasts, and not in a transaction: the work runs its own short statements
 * on the pool, and a process that dies frees the lock with its connection. So `sql` must reach
 * PostgreSQL directly (Database.direct): through a transaction pooler the lock and its unlock
 * could land on different server connections, and one would stay locked for its next client.
 *
 * The lock is tried, never queued for: with `waitMs` it is tried again until then; when another
 * process still holds it, `work` is not run (`locked: false`).
 */
export async function withAdvisoryLock<T>(
  sql: postgres.Sql,
  name: string,
  work: () => Promise<T>,
  { waitMs = 0, signal }: { waitMs?: number; signal?: AbortSignal } = {},
): Promise<Locked<T>> {
  const connection = await sql.reserve();
  try {
    const giveUpAt = Date.now() + waitMs;
    for (;;) {
      const [{ locked }] = await connection<[{ locked: boolean }]>`
        select pg_try_advisory_lock(hashtextextended(${name} || ':' || current_schema(), 0)) as locked`;
      if (locked) break;
      if (Date.now() + POLL_MS > giveUpAt || signal?.aborted) return { locked: false };
      await sleep(POLL_MS);
    }
    try {
      return { locked: true, value: await work() };
    } finally {
      await connection`
        select pg_advisory_unlock(hashtextextended(${name} || ':' || current_schema(), 0))`.catch(
        () => {},
      );
    }
  } finally {
    connection.release();
  }
}
