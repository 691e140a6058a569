import type { Db } from '../../platform/db/open-database.js';
import type { Actor } from '../actor.js';
import { assertLeaseSeconds } from './claim-todo.js';
import { updateLeasedTodo } from './lease.js';
import { LEASE_DEFAULT_SECONDS, type Todo } from './todo.js';

/** Extends the lease to `leaseSeconds` from now. */
export async function heartbeatTodo(
  db: Db,
  actor: Actor,
  id: number,
  leaseToken: string,
  leaseSeconds = LEASE_DEFAULT_SECONDS,
): Promise<Todo> {
  assertLeaseSeconds(leaseSeconds);
  return updateLeasedTodo(db, actor, id, leaseToken, {
    set: db`available_at = now() + make_interval(secs => ${leaseSeconds})`,
    action: 'heartbeat',
    data: { lease_seconds: leaseSeconds },
  });
}
