import type postgres from 'postgres';
import type { Db } from '../../platform/db/open-database.js';
import { assertMayWorkQueue, visibleTo, type Actor } from '../actor.js';
import { batched, inTransaction } from '../batched.js';
import { conflict, forbidden, invalid, notFound } from '../ledger-error.js';
import { describeState } from './lease.js';
import { readQueues } from '../queues/read-queues.js';
import {
  displayId,
  LEASE_MAX_SECONDS,
  LEASE_DEFAULT_SECONDS,
  todoColumns,
  type ClaimedTodo,
} from './todo.js';
import type { HeldBack } from '../../contract/queue.js';
import { assertQueue } from '../validate.js';

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

/** Which todos a claim takes: a condition on `todos t`, their order, and how they are locked. */
interface Selection {
  where: postgres.PendingQuery<postgres.Row[]>;
  order: postgres.PendingQuery<postgres.Row[]>;
  lock: postgres.PendingQuery<postgres.Row[]>;
}

/** One todo by id: its row is waited for if someone holds it, so the answer is about it. */
const byId = (db: Db, actor: Actor, id: number): Selection => ({
  where: db`t.id = ${id} and ${visibleTo(db, actor)} and ${claimable(db, actor)}`,
  order: db``,
  lock: db`for no key update`,
});

/** The oldest of a queue: rows being claimed by someone else are passed over. */
const nextOn = (db: Db, actor: Actor, queue: string): Selection => ({
  where: db`t.queue = ${queue} and t.state <> 'quarantined' and ${claimable(db, actor)}`,
  order: db`order by t.available_at, t.id`,
  lock: db`for no key update skip locked`,
});

/**
 * The limit is written into the statement, not sent as a parameter: with `limit $n` PostgreSQL
 * cannot cost a generic plan, and planned the claim afresh at every execution (0.1–0.4 ms of its
 * CPU each); a batch size of its own is a prepared statement of its own, planned once.
 */
function target(
  db: Db,
  { where, order, lock }: Selection,
  limit: number,
  guard: postgres.PendingQuery<postgres.Row[]> = db`true`,
) {
  return db`select id, state, claimed_by from todos t
            where ${where} and ${guard} ${order} limit ${db.unsafe(String(Math.trunc(limit)))} ${lock}`;
}

/**
 * One statement: lock the row, move it to `claimed` with a fresh lease token, and record who
 * took it (and whose expired lease it took over). The lock is FOR NO KEY UPDATE — what the
 * update takes anyway — so that the key-share locks of foreign-key checks (an event or a ring
 * being recorded for the todo at that moment) do not make SKIP LOCKED pass a claimable todo by.
 * `chargeTo`: a limited queue, whose window counts each claim (queue_claims, by its history row),
 * and which drops its claims older than a day on the way.
 */
function claimRows(
  db: Db,
  actor: Actor,
  leaseSeconds: number,
  target: postgres.PendingQuery<postgres.Row[]>,
  chargeTo: string | null = null,
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
      ${chargeTo === null ? db`` : db`returning id`}
    )${
      chargeTo === null
        ? db``
        : db`, charged as (
      insert into queue_claims (event_id, queue, claimed_at) select e.id, ${chargeTo}, now() from e
    ), pruned as (
      -- kept a day, the longest window: the queue's own claims keep its table small
      delete from queue_claims where queue = ${chargeTo} and claimed_at <= now() - interval '1 day'
    )`
    }
    select ${todoColumns(db)}, t.lease_token from t`;
}

/**
 * A queue without limits: its claims go the plain way, one statement. A queue with limits is
 * claimed within them (claimWithinLimits) — one probe of queue_limits' key is all the plain
 * path pays for that.
 */
const unlimited = (db: Db, queue: postgres.PendingQuery<postgres.Row[]>) =>
  db`not exists (select from queue_limits l where l.queue = ${queue})`;

/** Claims one todo by id. A todo its queue's limits hold back is refused, saying until when. */
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
    target(db, byId(db, actor, id), 1, unlimited(db, db`t.queue`)),
  );
  if (claimed) return claimed;
  const [limited] = await db<{ queue: string }[]>`
    select t.queue from todos t
    where t.id = ${id} and ${visibleTo(db, actor)}
      and exists (select from queue_limits l where l.queue = t.queue)`;
  if (limited) {
    const { claimed, heldBack } = await claimWithinLimits(
      db,
      actor,
      limited.queue,
      leaseSeconds,
      1,
      (tx) => byId(tx, actor, id),
    );
    if (claimed[0]) return claimed[0];
    if (heldBack) {
      throw conflict(
        `todo ${displayId(id)} is held back: queue ${heldBack.queue} is ${heldBack.message}`,
      );
    }
  }
  return explainUnclaimable(db, actor, id);
}

/** A claim by queue: the todo, or null — with, when the queue's limits hold its todos back, until when. */
export interface ClaimNextAnswer {
  todo: ClaimedTodo | null;
  held_back: HeldBack | null;
}

/** Claims the oldest claimable todo on a queue, or returns null when there is none. */
export async function claimNextTodo(
  db: Db,
  actor: Actor,
  queue: string,
  leaseSeconds = LEASE_DEFAULT_SECONDS,
): Promise<ClaimedTodo | null> {
  return (await claimNextOrHeldBack(db, actor, queue, leaseSeconds)).todo;
}

/**
 * Claims the oldest claimable todo on a queue. With none, says whether that is because the
 * queue's limits hold its todos back, and until when. Concurrent claims of one actor on one
 * queue share a statement (`limit n … skip locked`, a history row for each): eight workers
 * calling at once cost one commit, not eight.
 */
export async function claimNextOrHeldBack(
  db: Db,
  actor: Actor,
  queue: string,
  leaseSeconds = LEASE_DEFAULT_SECONDS,
): Promise<ClaimNextAnswer> {
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
  ): Promise<ClaimNextAnswer[]> => {
    const { actor, queue, leaseSeconds } = requests[0]!;
    const wanted = requests.length;
    let claimed: ClaimedTodo[] = await claimRows(
      db,
      actor,
      leaseSeconds,
      target(db, nextOn(db, actor, queue), wanted, unlimited(db, db`${queue}`)),
    );
    let heldBack: HeldBack | null = null;
    // Callers left without a todo: the queue is empty — or limited, and claimed within limits.
    if (claimed.length < wanted) {
      const [limited] = await db`select from queue_limits where queue = ${queue}`;
      if (limited) {
        const within = await claimWithinLimits(
          db,
          actor,
          queue,
          leaseSeconds,
          wanted - claimed.length,
          (tx) => nextOn(tx, actor, queue),
        );
        claimed = [...claimed, ...within.claimed];
        heldBack = within.heldBack;
      }
    }
    return requests.map((_, index) => {
      const todo = claimed[index] ?? null;
      return { todo, held_back: todo ? null : heldBack };
    });
  },
);

/**
 * Claims up to `wanted` todos of a limited queue, within its limits. First the queue's row is
 * locked: every other claim of the queue, by id or by queue, from any process, waits here until
 * this transaction commits. The usage is then read by a statement of its own, whose snapshot is
 * taken after the lock was granted, so it sees every claim before this one: the counts are
 * exact, and no two claimers can both take the last slot. Each claim is charged to the window in
 * the statement that makes it.
 *
 * Callers left without a todo are told the queue holds its todos back (and until when) if one
 * they could take is waiting and a limit is reached; else the queue simply had none for them.
 */
async function claimWithinLimits(
  db: Db,
  actor: Actor,
  queue: string,
  leaseSeconds: number,
  wanted: number,
  select: (tx: Db) => Selection,
): Promise<{ claimed: ClaimedTodo[]; heldBack: HeldBack | null }> {
  return inTransaction(db, async (tx) => {
    const selection = select(tx);
    const [locked] = await tx`select from queue_limits where queue = ${queue} for update`;
    if (!locked) {
      // Its limits were cleared a moment ago.
      return {
        claimed: await claimRows(tx, actor, leaseSeconds, target(tx, selection, wanted)),
        heldBack: null,
      };
    }
    const [before] = await readQueues(tx, [queue], { countWaiting: false });
    const room = Math.min(
      wanted,
      before!.max_in_flight === null ? wanted : before!.max_in_flight - before!.in_flight,
      before!.max_claims === null ? wanted : before!.max_claims - before!.claims_in_window!,
    );
    const claimed =
      room > 0 ? await claimRows(tx, actor, leaseSeconds, target(tx, selection, room), queue) : [];
    if (claimed.length === wanted) return { claimed, heldBack: null };
    const [after] = await readQueues(tx, [queue], { countWaiting: false });
    if (!after!.held_back) return { claimed, heldBack: null };
    const [waiting] = await tx<{ any: boolean }[]>`
      select exists (select from todos t where ${selection.where}) as any`;
    return { claimed, heldBack: waiting!.any ? after!.held_back : null };
  });
}

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
