import type { Actor } from '../data/actor.js';
import {
  requestApproval as askApproval,
  type ApprovalRequest,
} from '../data/todos/request-approval.js';
import type { Todo } from '../data/todos/todo.js';
import { sourceOf, type TodoServiceState } from './todo-service-state.js';

/** An approval asked by a person or an agent, recorded as coming from where they are. */
export function requestApproval(
  state: TodoServiceState,
  actor: Actor,
  input: Omit<ApprovalRequest, 'source'>,
): Promise<Todo> {
  return askApproval(state.sql, actor, { ...input, source: sourceOf(actor) }, { seal: state.seal });
}
