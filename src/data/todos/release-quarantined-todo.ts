import type { Db } from '../../platform/db/open-database.js';
import { assertHuman, visibleTo, type Actor } from '../actor.js';
import { conflict, notFound } from '../ledger-error.js';
import { describeState } from './lease.js';
import { displayId, insertEvent, todoColumns, type Todo } from './todo.js';

/** A human vouches for an untrusted sender's todo: it becomes pending, visible and claimable. */
export async function releaseQuarantinedTodo(db: Db, actor: Actor, id: number): Promise<Todo> {
  assertHuman(actor, 'release a quarantined todo');
  const [todo] = await db<Todo[]>`
    with t as (
      update todos t set state = 'pending', available_at = now(), updated_at = now()
      where t.id = ${id} and t.state = 'quarantined' and ${visibleTo(db, actor)}
      returning t.*
    ), e as (${insertEvent(db, actor, 'quarantine_released')})
    select ${todoColumns(db)} from t`;
  if (todo) return todo;
  const state = await describeState(db, actor, id);
  if (!state) throw notFound(`todo ${displayId(id)} not found`);
  throw conflict(`todo ${displayId(id)} is not quarantined: it ${state}`);
}
