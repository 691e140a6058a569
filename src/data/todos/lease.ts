import type postgres from 'postgres';
import type { Db } from '../../platform/db/open-database.js';
import { visibleTo, type Actor } from '../actor.js';
import { invalid, leaseLost, notFound } from '../ledger-error.js';
import { displayId, insertEvent, todoColumns, type Todo } from './todo.js';
import { wakeHeldBack } from './wake-held-back.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function assertLeaseToken(leaseToken: string): void {
  if (!UUID.test(leaseToken)) throw invalid('lease token must be the UUID returned by claim');
}

/**
 * Heartbeat, complete, fail and release are the lease holder's: each is one guarded update that
 * matches only while the presented token is the current lease and the lease has not ended, so a
 * holder that lost its lease — even one already taken over by another worker — is refused.
 */
export async function updateLeasedTodo(
  db: Db,
  actor: Actor,
  id: number,
  leaseToken: string,
  change: {
    set: postgres.PendingQuery<postgres.Row[]>;
    action: string;
    data?: Record<string, unknown> | null;
    /** It takes the todo out of flight (done, failed): a limited queue's next todo is woken. */
    freesSlot?: boolean;
  },
): Promise<Todo> {
  assertLeaseToken(leaseToken);
  const [todo] = await db<Todo[]>`
    with t as (
      update todos t set ${change.set}, updated_at = now()
      where t.id = ${id} and t.state = 'claimed' and t.lease_token = ${leaseToken}::uuid
        and t.available_at > now() and ${visibleTo(db, actor)}
      returning t.*
    ), e as (${insertEvent(db, actor, change.action, change.data ?? null)})${
      change.freesSlot
        ? db`, freed as (${wakeHeldBack(db)})
    select ${todoColumns(db)} from t where (select count(*) from freed) >= 0`
        : db`
    select ${todoColumns(db)} from t`
    }`;
  if (todo) return todo;

  const [current] = await db<{ holds: boolean }[]>`
    select t.lease_token is not distinct from ${leaseToken}::uuid as holds from todos t
    where t.id = ${id} and ${visibleTo(db, actor)}`;
  const state = current ? await describeState(db, actor, id) : null;
  if (!current || !state) throw notFound(`todo ${displayId(id)} not found`);
  throw leaseLost(
    `lease on todo ${displayId(id)} is lost: it ${current.holds ? 'ran out; the todo ' : ''}${state}`,
  );
}

/**
 * How a todo stands, as the end of a sentence: "is claimed by ada until …"; null when the actor
 * may not see it (or it is gone), which the caller answers exactly as a missing id: a refusal
 * must not tell anyone how a todo they cannot read stands.
 */
export async function describeState(db: Db, actor: Actor, id: number): Promise<string | null> {
  const [t] = await db<
    {
      state: string;
      claimed_by: string | null;
      available_at: Date | null;
      attempt: number;
      expired: boolean;
    }[]
  >`
    select state, claimed_by, available_at, attempt, available_at <= now() as expired
    from todos t where t.id = ${id} and ${visibleTo(db, actor)}`;
  if (!t) return null;
  switch (t.state) {
    case 'claimed':
      return t.expired
        ? `is claimed by ${t.claimed_by}, whose lease ended at ${t.available_at?.toISOString()}`
        : `is claimed by ${t.claimed_by} until ${t.available_at?.toISOString()}`;
    case 'failed':
      return t.available_at
        ? `failed; its next attempt may start at ${t.available_at.toISOString()}`
        : `failed for good after ${t.attempt} attempts`;
    case 'quarantined':
      return 'is quarantined until a human releases it';
    default:
      return `is ${t.state}`;
  }
}
