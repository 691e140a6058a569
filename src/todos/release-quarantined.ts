import type { Actor } from '../data/actor.js';
import { releaseQuarantinedTodo } from '../data/todos/release-quarantined-todo.js';
import type { Todo } from '../data/todos/todo.js';
import type { TodoServiceState } from './todo-service-state.js';

/** A human vouches for an untrusted sender's todo: pending, and woken with the commit. */
export function releaseQuarantined(
  state: TodoServiceState,
  actor: Actor,
  id: number,
): Promise<Todo> {
  return releaseQuarantinedTodo(state.sql, actor, id);
}
