import type { Actor } from '../data/actor.js';
import { releaseTodo } from '../data/todos/release-todo.js';
import type { Todo } from '../data/todos/todo.js';
import type { TodoServiceState } from './todo-service-state.js';

/** The holder hands the todo back, claimable at once; its wake goes out with the commit. */
export function release(
  state: TodoServiceState,
  actor: Actor,
  id: number,
  leaseToken: string,
): Promise<Todo> {
  return releaseTodo(state.sql, actor, id, leaseToken);
}
