import type { Actor } from '../data/actor.js';
import { claimNextOrHeldBack, claimTodo, type ClaimNextAnswer } from '../data/todos/claim-todo.js';
import type { ClaimedTodo } from '../data/todos/todo.js';
import type { TodoServiceState } from './todo-service-state.js';

/** Claims one todo by id (refused, saying until when, if its queue's limits hold it back). */
export function claim(
  state: TodoServiceState,
  actor: Actor,
  id: number,
  leaseSeconds?: number,
): Promise<ClaimedTodo> {
  return claimTodo(state.sql, actor, id, leaseSeconds);
}

/** Claims the queue's next todo, or says when its limits let one be claimed again. */
export async function claimNext(
  state: TodoServiceState,
  actor: Actor,
  queue: string,
  leaseSeconds?: number,
): Promise<ClaimNextAnswer> {
  const answer = await claimNextOrHeldBack(state.sql, actor, queue, leaseSeconds);
  if (answer.held_back) state.hooks.heldBack?.(answer.held_back);
  return answer;
}
