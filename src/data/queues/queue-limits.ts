import postgres from 'postgres';
import {
  CLAIMS_WINDOWS,
  WINDOW_SECONDS,
  type Queue,
  type QueueLimitsChange,
} from '../../contract/queue.js';
import type { Db } from '../../platform/db/open-database.js';
import { assertMayWorkQueue, isAgent, type Actor } from '../actor.js';
import { inTransaction, isTransaction } from '../batched.js';
import { forbidden, invalid } from '../ledger-error.js';
import { readQueues } from './read-queues.js';
import { assertQueue } from '../validate.js';

export type { ClaimsWindow, HeldBack, Queue, QueueLimitsChange } from '../../contract/queue.js';

export const MAX_IN_FLIGHT_LIMIT = 10_000;
export const MAX_CLAIMS_LIMIT = 1_000_000;

/** How long the first limit of a queue waits for the claims already under way to commit. */
const SETTLE_LOCK_TIMEOUT = '5s';

/**
 * Sets or clears a queue's limits (admins only): a number sets one, null clears it, a field left
 * out is kept. A queue whose limits are all cleared is unlimited again.
 *
 * The first limit of a queue counts the claims of the last day from the history (so "100 an
 * hour" set on a busy queue counts the hour behind it), then waits for the claims that began
 * before it was saved — which could not see it — to commit, and counts those too. From then on
 * every claim of the queue is admitted under the limits.
 */
export async function setQueueLimits(
  db: Db,
  actor: Actor,
  queue: string,
  change: QueueLimitsChange,
): Promise<Queue> {
  if (actor.kind !== 'human' || !actor.principal.is_admin) {
    throw forbidden("only an admin may set a queue's limits");
  }
  assertQueue(queue);
  assertChange(change);
  const first = await inTransaction(db, async (tx) => {
    const [before] = await tx<
      {
        max_in_flight: number | null;
        max_claims: number | null;
        claims_window_seconds: number | null;
      }[]
    >`
      select max_in_flight, max_claims, claims_window_seconds from queue_limits
      where queue = ${queue} for update`;
    const maxInFlight =
      change.max_in_flight === undefined ? (before?.max_in_flight ?? null) : change.max_in_flight;
    const maxClaims =
      change.max_claims === undefined ? (before?.max_claims ?? null) : change.max_claims;
    // A new count keeps the window it had unless one is given.
    const window =
      maxClaims === null
        ? null
        : change.claims_window
          ? WINDOW_SECONDS[change.claims_window]
          : (before?.claims_window_seconds ?? null);
    if (maxClaims !== null && window === null) {
      throw invalid('max_claims needs its window: claims_window hour or day');
    }
    if (maxInFlight === null && maxClaims === null) {
      await tx`delete from queue_limits where queue = ${queue}`;
      await tx`delete from queue_claims where queue = ${queue}`;
      return false;
    }
    await tx`
      insert into queue_limits (queue, max_in_flight, max_claims, claims_window_seconds, updated_by)
      values (${queue}, ${maxInFlight}, ${maxClaims}, ${window}, ${actor.name})
      on conflict (queue) do update set
        max_in_flight = excluded.max_in_flight,
        max_claims = excluded.max_claims,
        claims_window_seconds = excluded.claims_window_seconds,
        updated_by = excluded.updated_by,
        updated_at = now()`;
    if (before) return false;
    await countRecentClaims(tx, queue);
    return true;
  });
  if (first && !isTransaction(db)) await settle(db, queue);
  return showQueue(db, actor, queue);
}

/** The queue's limits and usage; anyone who may work the queue may see them. */
export async function showQueue(db: Db, actor: Actor, queue: string): Promise<Queue> {
  assertQueue(queue);
  assertMayWorkQueue(actor, queue);
  const [shown] = await readQueues(db, [queue]);
  return shown!;
}

/**
 * The queues with limits or with open todos, by name (an agent: its own queues), each with its
 * limits and usage; `limitedOnly`: only those with limits.
 */
export async function listQueues(
  db: Db,
  actor: Actor,
  { limitedOnly = false }: { limitedOnly?: boolean } = {},
): Promise<Queue[]> {
  const rows = await db<{ queue: string }[]>`
    select queue from queue_limits
    ${limitedOnly ? db`` : db`union select distinct queue from todos where available_at is not null`}`;
  const names = isAgent(actor)
    ? (actor.principal.queues ?? []).filter(
        (queue) => !limitedOnly || rows.some((row) => row.queue === queue),
      )
    : rows.map((row) => row.queue);
  return readQueues(db, names);
}

function assertChange(change: QueueLimitsChange): void {
  const { max_in_flight, max_claims, claims_window } = change;
  if (max_in_flight === undefined && max_claims === undefined) {
    throw invalid('give max_in_flight or max_claims (a number to set it, null to clear it)');
  }
  const assertCount = (value: number | null | undefined, name: string, max: number) => {
    if (value === undefined || value === null) return;
    if (!Number.isInteger(value) || value < 1 || value > max) {
      throw invalid(`${name} must be a whole number from 1 to ${max}, or null to clear it`);
    }
  };
  assertCount(max_in_flight, 'max_in_flight', MAX_IN_FLIGHT_LIMIT);
  assertCount(max_claims, 'max_claims', MAX_CLAIMS_LIMIT);
  if (claims_window !== undefined && !CLAIMS_WINDOWS.includes(claims_window)) {
    throw invalid(`claims_window must be ${CLAIMS_WINDOWS.join(' or ')}`);
  }
  if (claims_window !== undefined && (max_claims === undefined || max_claims === null)) {
    throw invalid('claims_window goes with a max_claims number');
  }
}

/**
 * The claims of the last day (the longest window), from the history: the queue's todos still
 * open, and those finished within the day. Each is counted once, however often this runs.
 */
function countRecentClaims(db: Db, queue: string) {
  return db`
    insert into queue_claims (event_id, queue, claimed_at)
    select e.id, ${queue}, e.at
    from (
      select id from todos where queue = ${queue} and available_at is not null
      union all
      select id from todos
      where (state in ('done', 'canceled') or (state = 'failed' and available_at is null))
        and updated_at > now() - interval '1 day' and queue = ${queue}
    ) t
    join todo_events e on e.todo_id = t.id
    where e.action = 'claimed' and e.at > now() - interval '1 day'
    on conflict (event_id) do nothing`;
}

/**
 * A claim that began before the first limit was saved did not see it, and takes no lock of the
 * queue's. A SHARE lock on todos is granted once every transaction writing todos at this moment
 * has ended, so after it those claims have committed: counted now, they are in the window, and
 * in flight for every claim after. (A statement takes its locks before its snapshot, so one that
 * asks after this lock sees the limit.) If some transaction holds todos for longer than the
 * timeout, the limits stand as saved and only those claims' window count may be missed.
 */
async function settle(db: postgres.Sql, queue: string): Promise<void> {
  try {
    await db.begin(async (tx) => {
      await tx`select set_config('lock_timeout', ${SETTLE_LOCK_TIMEOUT}, true)`;
      await tx`lock table todos in share mode`;
    });
  } catch (error) {
    if (error instanceof postgres.PostgresError && error.code === '55P03') return;
    throw error;
  }
  await countRecentClaims(db, queue);
}
