import type { Actor } from '../data/actor.js';
import { heartbeatTodo } from '../data/todos/heartbeat-todo.js';
import type { Todo } from '../data/todos/todo.js';
import type { TodoServiceState } from './todo-service-state.js';

/** The holder extends its lease. */
export function heartbeat(
  state: TodoServiceState,
  actor: Actor,
  id: number,
  leaseToken: string,
  leaseSeconds?: number,
): Promise<Todo> {
  return heartbeatTodo(state.sql, actor, id, leaseToken, leaseSeconds);
}
