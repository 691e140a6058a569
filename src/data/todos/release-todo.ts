import type { Db } from '../../platform/db/open-database.js';
import type { Actor } from '../actor.js';
import { updateLeasedTodo } from './lease.js';
import type { Todo } from './todo.js';

/**
 * Hands the todo back, at once claimable by anyone. A voluntary release does not use up an
 * attempt: the attempt counter is for failures and lost leases.
 */
export async function releaseTodo(
  db: Db,
  actor: Actor,
  id: number,
  leaseToken: string,
): Promise<Todo> {
  return updateLeasedTodo(db, actor, id, leaseToken, {
    set: db`state = 'pending', available_at = now(), lease_token = null, claimed_by = null,
            attempt = t.attempt - 1`,
    action: 'released',
  });
}
