import type { Db } from '../../platform/db/open-database.js';
import type { Actor } from '../actor.js';
import { updateLeasedTodo } from './lease.js';
import type { Todo } from './todo.js';
import { assertStorable } from '../validate.js';
import { excerpt } from '../../contract/neutralise-text.js';

/** Seconds before attempt n+1 after attempt n failed: 10 s, doubling, at most an hour. */
export const RETRY_BASE_SECONDS = 10;
export const RETRY_MAX_SECONDS = 3600;

/**
 * Marks the attempt failed. With attempts left the todo comes back after an exponential backoff
 * (computed in SQL from the attempt count); after the last attempt it is dead (failed for good).
 */
export async function failTodo(
  db: Db,
  actor: Actor,
  id: number,
  leaseToken: string,
  reason?: string | null,
): Promise<Todo> {
  const summary = reason ?? null;
  assertStorable({ reason: summary });
  return updateLeasedTodo(db, actor, id, leaseToken, {
    set: db`state = 'failed', lease_token = null, summary = ${summary},
            available_at = case when t.attempt < t.max_attempts
              then now() + make_interval(secs => least(${RETRY_MAX_SECONDS}::float8,
                                                       ${RETRY_BASE_SECONDS}::float8 * power(2, t.attempt - 1)))
            end`,
    action: 'failed',
    data: summary === null ? null : { reason: excerpt(summary) },
    freesSlot: true,
  });
}
