import { sweepTodos, type SweepCounts } from '../data/todos/sweep-todos.js';
import type { TodoServiceState } from './todo-service-state.js';

/**
 * Tidies what time changed: ended leases, due retries, expired approvals (the server's sweeper,
 * every few seconds). What becomes claimable again is woken with the commit.
 */
export function sweep(state: TodoServiceState): Promise<SweepCounts> {
  return sweepTodos(state.sql);
}
