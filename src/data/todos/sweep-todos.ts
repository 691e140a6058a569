import type { Db } from '../../platform/db/open-database.js';
import { systemActor } from '../actor.js';
import { insertEvent } from './todo.js';

export interface SweepCounts {
  leases_expired: number;
  dead: number;
  retries_due: number;
  approvals_expired: number;
}

const SWEEPER = systemActor('sweeper');

/**
 * Tidies what time changed. Claims never wait for this (an ended lease or a due retry is
 * claimable as it stands), but moving those todos back to `pending` is what makes them show as
 * waiting and fires their wake. Rows being claimed right now are skipped, not waited for.
 */
export async function sweepTodos(db: Db, batch = 1000): Promise<SweepCounts> {
  const expired = await db<{ dead: boolean }[]>`
    with due as (
      select id from todos where state = 'claimed' and available_at <= now()
      order by available_at limit ${batch} for no key update skip locked
    ), t as (
      update todos t set
        lease_token = null,
        updated_at = now(),
        state = case when t.attempt < t.max_attempts then 'pending' else 'failed' end::todo_state,
        available_at = case when t.attempt < t.max_attempts then now() end,
        claimed_by = case when t.attempt < t.max_attempts then null else t.claimed_by end,
        summary = case when t.attempt < t.max_attempts then t.summary
                       else 'lease expired on the last attempt' end
      from due where t.id = due.id
      returning t.*
    ), e as (
      insert into todo_events (todo_id, actor_kind, actor, via, action, data)
      select t.id, 'system', ${SWEEPER.name}, ${SWEEPER.via}, 'lease_expired',
             jsonb_build_object('dead', t.state = 'failed')
      from t
    )
    select t.state = 'failed' as dead from t`;

  const retries = await db`
    with due as (
      select id from todos where state = 'failed' and available_at <= now()
      order by available_at limit ${batch} for no key update skip locked
    ), t as (
      update todos t set state = 'pending', updated_at = now()
      from due where t.id = due.id
      returning t.*
    ), e as (${insertEvent(db, SWEEPER, 'retry_due')})
    select t.id from t`;

  const approvals = await db`
    with due as (
      select id from todos where kind = 'approval' and state = 'pending' and expires_at <= now()
      order by expires_at limit ${batch} for no key update skip locked
    ), t as (
      update todos t set state = 'canceled', updated_at = now(), summary = 'expired without a verdict'
      from due where t.id = due.id
      returning t.*
    ), e as (${insertEvent(db, SWEEPER, 'expired')})
    select t.id from t`;

  const dead = expired.filter((row) => row.dead).length;
  return {
    leases_expired: expired.length - dead,
    dead,
    retries_due: retries.length,
    approvals_expired: approvals.length,
  };
}
