import type { Db } from '../../platform/db/open-database.js';
import { visibleTo, waitsFor, type Actor } from '../actor.js';
import { invalid } from '../ledger-error.js';
import { TODO_STATES, todoColumns, type Todo, type TodoState } from './todo.js';
import { assertQueue } from '../validate.js';

export interface TodoFilter {
  queue?: string | undefined;
  /** One state, `open` (the default: everything not finished) or `all`. */
  state?: TodoState | 'open' | 'all' | undefined;
  /** Only what waits for the actor: assigned to it, or held by it (an admin: the admins' approvals too). */
  mine?: boolean | undefined;
  limit?: number | undefined;
  /** Only todos with a smaller id: the next page after the last id seen. */
  before?: number | undefined;
}

export const LIST_LIMIT_MAX = 500;

/** Newest first. */
export async function listTodos(db: Db, actor: Actor, filter: TodoFilter = {}): Promise<Todo[]> {
  const limit = filter.limit ?? 50;
  if (!Number.isInteger(limit) || limit < 1 || limit > LIST_LIMIT_MAX) {
    throw invalid(`limit must be a whole number from 1 to ${LIST_LIMIT_MAX}`);
  }
  // A queue no todo can be on is a mistake to report, not a filter that finds nothing.
  if (filter.queue !== undefined) assertQueue(filter.queue);
  const state = filter.state ?? 'open';
  if (state !== 'open' && state !== 'all' && !TODO_STATES.includes(state)) {
    throw invalid(`state must be one of ${[...TODO_STATES, 'open', 'all'].join(', ')}`);
  }
  const states =
    state === 'open'
      ? ['pending', 'claimed', 'failed', 'quarantined']
      : state === 'all'
        ? [...TODO_STATES]
        : [state];
  // States go over the wire as text[] and are cast server-side: postgres.js learns array types
  // when it connects, which may be before the migration that created todo_state.
  return db<Todo[]>`
    select ${todoColumns(db)} from todos t
    where ${visibleTo(db, actor)}
      and t.state = any(${states}::text[]::todo_state[])
      ${state === 'open' ? db`and not (t.state = 'failed' and t.available_at is null)` : db``}
      ${filter.queue ? db`and t.queue = ${filter.queue}` : db``}
      ${filter.mine ? db`and ${waitsFor(db, actor)}` : db``}
      ${filter.before ? db`and t.id < ${filter.before}` : db``}
    order by t.id desc
    limit ${limit}`;
}
