import type postgres from 'postgres';
import type { Db } from '../db/open-database.js';
import { assertMayWorkQueue, visibleTo, type Actor } from './actor.js';
import { batched } from './batched.js';
import { conflict, forbidden, invalid, notFound } from './ledger-error.js';
import { describeState } from './lease.js';
import { displayId, todoColumns, type ClaimedTodo } from './todo.js';
import { assertQueue } from './validate.js';

export const LEASE_DEFAULT_SECONDS = 300;
export const LEASE_MAX_SECONDS = 86_400;

export function assertLeaseSeconds(seconds: number): void {
  if (!Number.isInteger(seconds) || seconds < 1 || seconds > LEASE_MAX_SECONDS) {
    throw invalid(`lease must be a whole number of seconds from 1 to ${LEASE_MAX_SECONDS}`);
  }
}

/**
 * Claimable: available now (waiting, lease ended, or retry due), attempts left, not an approval,
 * and not assigned to someone else. `available_at <= now()` is the claimable index's range.
 */
function claimable(db: Db, actor: Actor) {
  return db`t.available_at <= now() and t.attempt < t.max_attempts and t.kind <> 'approval'
    and (t.assignee is null or t.assignee = ${actor.name})`;
}

/**
 * One statement: lock the row, move it to `claimed` with a fresh lease token, and record who
 * took it (and whose expired lease it took over). The lock is FOR NO KEY UPDATE — what the
 * update takes anyway — so that the key-share locks of foreign-key checks (an event or a ring
 * being recorded for the todo at that moment) do not make SKIP LOCKED pass a claimable todo by.
 */
function claimRows(
  db: Db,
  actor: Actor,
  leaseSeconds: number,
  target: postgres.PendingQuery<postgres.Row[]>,
) {
  return db<ClaimedTodo[]>`
    with target as (${target}),
    t as (
      update todos t set
        state = 'claimed',
        claimed_by = ${actor.name},
        lease_token = gen_random_uuid(),
        available_at = now() + make_interval(secs => ${leaseSeconds}),
        attempt = t.attempt + 1,
        updated_at = now()
      from target where t.id = target.id
      returning t.*, target.state as previous_state, target.claimed_by as previous_holder
    ),
    e as (
      insert into todo_events (todo_id, actor_kind, actor, via, action, data)
      select t.id, ${actor.kind}, ${actor.name}, ${actor.via}, 'claimed',
             jsonb_build_object('lease_seconds', ${leaseSeconds}::int, 'attempt', t.attempt)
             || case when t.previous_state = 'claimed'
                     then jsonb_build_object('lease_expired_for', t.previous_holder) else '{}' end
      from t
    )
    select ${todoColumns(db)}, t.lease_token from t`;
}

/** Claims one todo by id. */
export async function claimTodo(
  db: Db,
  actor: Actor,
  id: number,
  leaseSeconds = LEASE_DEFAULT_SECONDS,
): Promise<ClaimedTodo> {
  assertLeaseSeconds(leaseSeconds);
  const [claimed] = await claimRows(
    db,
    actor,
    leaseSeconds,
    db`select id, state, claimed_by from todos t
       where t.id = ${id} and ${visibleTo(db, actor)} and ${claimable(db, actor)}
       for no key update`,
  );
  if (claimed) return claimed;
  return explainUnclaimable(db, actor, id);
}

/**
 * Claims the oldest claimable todo on a queue, or returns null when there is none. Concurrent
 * claims of one actor on one queue share a statement (`limit n … skip locked`, a history row
 * for each): eight workers calling at once cost one commit, not eight.
 */
export async function claimNextTodo(
  db: Db,
  actor: Actor,
  queue: string,
  leaseSeconds = LEASE_DEFAULT_SECONDS,
): Promise<ClaimedTodo | null> {
  assertQueue(queue);
  assertMayWorkQueue(actor, queue);
  assertLeaseSeconds(leaseSeconds);
  const key = JSON.stringify([actor.kind, actor.name, actor.via, queue, leaseSeconds]);
  return claimNextBatched(db, key, { actor, queue, leaseSeconds });
}

const claimNextBatched = batched(
  async (
    db: Db,
    _key: string,
    requests: { actor: Actor; queue: string; leaseSeconds: number }[],
  ): Promise<(ClaimedTodo | null)[]> => {
    const { actor, queue, leaseSeconds } = requests[0]!;
    const claimed = await claimRows(
      db,
      actor,
      leaseSeconds,
      db`select id, state, claimed_by from todos t
         where t.queue = ${queue} and t.state <> 'quarantined' and ${claimable(db, actor)}
         order by t.available_at, t.id
         limit ${requests.length}
         for no key update skip locked`,
    );
    return requests.map((_, index) => claimed[index] ?? null);
  },
);

async function explainUnclaimable(db: Db, actor: Actor, id: number): Promise<never> {
  const [todo] = await db<
    {
      kind: string;
      assignee: string | null;
      state: string;
      attempt: number;
      max_attempts: number;
      available_now: boolean;
    }[]
  >`
    select t.kind, t.assignee, t.state, t.attempt, t.max_attempts, t.available_at <= now() as available_now
    from todos t where t.id = ${id} and ${visibleTo(db, actor)}`;
  const ref = `todo ${displayId(id)}`;
  if (!todo) throw notFound(`${ref} not found`);
  if (todo.kind === 'approval')
    throw conflict(`${ref} is an approval: a human approves or denies it, nobody claims it`);
  if (todo.assignee !== null && todo.assignee !== actor.name)
    throw forbidden(`${ref} is assigned to ${todo.assignee}`);
  if (todo.available_now && todo.attempt >= todo.max_attempts) {
    throw conflict(
      `${ref} has used all ${todo.max_attempts} attempts; its last lease is about to be closed`,
    );
  }
  const state = await describeState(db, actor, id);
  if (!state) throw notFound(`${ref} not found`);
  throw conflict(`${ref} ${state}`);
}
