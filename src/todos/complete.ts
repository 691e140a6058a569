import type { Actor } from '../data/actor.js';
import { completeTodo, type Completion } from '../data/todos/complete-todo.js';
import type { Todo } from '../data/todos/todo.js';
import type { TodoServiceState } from './todo-service-state.js';

/** Completes a claimed todo; `afterComplete` (a write-back) commits with it or not at all. */
export function complete(
  state: TodoServiceState,
  actor: Actor,
  id: number,
  leaseToken: string,
  completion: Completion,
): Promise<Todo> {
  const { afterComplete } = state.hooks;
  // Concurrent completions share one statement; only a todo the hook may act on takes a
  // transaction of its own.
  return completeTodo(
    state.sql,
    actor,
    id,
    leaseToken,
    completion,
    afterComplete && {
      sources: afterComplete.sources,
      run: (tx, done) => afterComplete.run(tx, done, actor),
    },
  );
}
