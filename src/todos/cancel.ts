import type { Actor } from '../data/actor.js';
import { cancelSessionApprovals as cancelApprovalsOf } from '../data/todos/cancel-session-approvals.js';
import { cancelTodo } from '../data/todos/cancel-todo.js';
import type { Todo } from '../data/todos/todo.js';
import type { TodoServiceState } from './todo-service-state.js';

/** Cancels a todo nobody works on: a human, or an agent withdrawing an approval it asked for. */
export function cancel(
  state: TodoServiceState,
  actor: Actor,
  id: number,
  reason?: string | null,
): Promise<Todo> {
  return cancelTodo(state.sql, actor, id, reason);
}

/** Cancels the approvals still waiting that sessions which went away asked: nobody waits now. */
export function cancelSessionApprovals(
  state: TodoServiceState,
  sessionIds: string[],
): Promise<number[]> {
  return cancelApprovalsOf(state.sql, sessionIds);
}
