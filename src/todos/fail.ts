import type { Actor } from '../data/actor.js';
import { failTodo } from '../data/todos/fail-todo.js';
import type { Todo } from '../data/todos/todo.js';
import type { TodoServiceState } from './todo-service-state.js';

/**
 * The holder's attempt failed: retried after a backoff, or dead after the last. The slot it frees
 * wakes the todo its queue held back (in the statement: src/data/todos/wake-held-back.ts).
 */
export function fail(
  state: TodoServiceState,
  actor: Actor,
  id: number,
  leaseToken: string,
  reason?: string | null,
): Promise<Todo> {
  return failTodo(state.sql, actor, id, leaseToken, reason);
}
