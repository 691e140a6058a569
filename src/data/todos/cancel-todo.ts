import type { Db } from '../../platform/db/open-database.js';
import { visibleTo, type Actor } from '../actor.js';
import { conflict, forbidden, notFound } from '../ledger-error.js';
import { describeState } from './lease.js';
import { displayId, insertEvent, todoColumns, type Todo } from './todo.js';
import { excerpt } from '../../contract/neutralise-text.js';
import { assertStorable } from '../validate.js';

/**
 * Cancels a todo nobody is working on: waiting, quarantined, failed (retrying or dead), or an
 * approval still waiting for its verdict. Humans and switchboard itself may cancel, and only
 * what they can see (another human's approval is answered as a missing id). An agent may
 * withdraw an approval it asked for (`approval request --wait` that gave up waiting), nothing else.
 */
export async function cancelTodo(
  db: Db,
  actor: Actor,
  id: number,
  reason?: string | null,
): Promise<Todo> {
  assertStorable({ reason });
  const mayCancel =
    actor.kind === 'agent'
      ? db`t.kind = 'approval' and t.requested_by = ${actor.name}`
      : visibleTo(db, actor);
  const [todo] = await db<Todo[]>`
    with t as (
      update todos t set state = 'canceled', available_at = null, summary = coalesce(${reason ?? null}, t.summary),
                         updated_at = now()
      where t.id = ${id} and t.state in ('pending', 'failed', 'quarantined') and ${mayCancel}
      returning t.*
    ), e as (${insertEvent(db, actor, 'canceled', reason ? { reason: excerpt(reason) } : null)})
    select ${todoColumns(db)} from t`;
  if (todo) return todo;
  const state = await describeState(db, actor, id);
  if (!state) throw notFound(`todo ${displayId(id)} not found`);
  if (actor.kind === 'agent' && !(await askedBy(db, id, actor.name))) {
    throw forbidden(
      'only a human may cancel a todo (an agent may withdraw an approval it asked for)',
    );
  }
  throw conflict(`todo ${displayId(id)} cannot be canceled: it ${state}`);
}

async function askedBy(db: Db, id: number, agent: string): Promise<boolean> {
  const [row] = await db<{ id: number }[]>`
    select id from todos where id = ${id} and kind = 'approval' and requested_by = ${agent}`;
  return row !== undefined;
}
