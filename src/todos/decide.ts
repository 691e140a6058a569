import type { Db } from '../platform/db/open-database.js';
import type { Actor } from '../data/actor.js';
import { decideApproval } from '../data/todos/decide-approval.js';
import type { Todo, Verdict } from '../data/todos/todo.js';
import type { TodoServiceState } from './todo-service-state.js';

/**
 * A human's verdict on an approval, from whichever surface they gave it (`actor.via`: the API,
 * the console, Slack, a GitHub comment; MCP has no tool for it, and an agent is refused). Only
 * the assignee or an admin decides, and the first verdict wins. Its wake goes out with the
 * commit (the trigger), and carries it to the asker, to Slack's message and to the browsers told.
 */
export function decide(
  state: TodoServiceState,
  actor: Actor,
  id: number,
  verdict: Verdict,
  note?: string | null,
): Promise<Todo> {
  return decideOn(state, state.sql, actor, id, verdict, note);
}

/** `decide` in a transaction of the caller's (a delivery's, for a verdict given in a comment). */
export function decideOn(
  state: TodoServiceState,
  db: Db,
  actor: Actor,
  id: number,
  verdict: Verdict,
  note?: string | null,
): Promise<Todo> {
  // The note reaches the agent that asked: a credential in it is withheld, and sealed.
  return decideApproval(db, actor, id, verdict, note, { seal: state.seal });
}
