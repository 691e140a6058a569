import type { ClaimsWindow, HeldBack, HeldBackReason, Queue } from '../../contract/queue.js';
import type { Db } from '../../platform/db/open-database.js';

/** A queue with more todos waiting than this says "10000" (a count walks them all). */
export const WAITING_COUNTED_MAX = 10_000;

interface QueueRow {
  name: string;
  max_in_flight: number | null;
  max_claims: number | null;
  claims_window_seconds: number | null;
  updated_by: string | null;
  updated_at: Date | null;
  in_flight: number;
  first_lease_end: Date | null;
  claims_in_window: number | null;
  window_frees_at: Date | null;
  waiting: number;
}

/**
 * The limits and usage of each of `queues`, as they stand at `at` (default: the transaction's
 * `now()`, which is also the clock of every claim). `at` is there so that a window's edge can be
 * tested to the microsecond: a claim counts while `claimed_at > at - window`, so at exactly one
 * window after it, it no longer does.
 *
 * A claim counts from its transaction's `now()` — which, for a claim that waited for the queue's
 * lock, can be later than the `now()` of a claimer counting after it — so there is no upper
 * bound: a claim committed is counted, whenever its clock says it began.
 *
 * Inside a claim's transaction, after the queue's row was locked, the counts are exact: every
 * earlier claim of the queue has committed (src/data/todos/claim-todo.ts). `countWaiting: false`
 * leaves `waiting` at 0 (claims do not need it).
 */
export async function readQueues(
  db: Db,
  queues: string[],
  { at, countWaiting = true }: { at?: Date | undefined; countWaiting?: boolean } = {},
): Promise<Queue[]> {
  const rows = await db<QueueRow[]>`
    with clock as (select coalesce(${at ?? null}::timestamptz, now()) as at)
    select q.name, l.max_in_flight, l.max_claims, l.claims_window_seconds, l.updated_by,
           l.updated_at, f.in_flight, f.first_lease_end, w.claims_in_window,
           frees.at as window_frees_at, p.waiting
    from clock cross join unnest(${queues}::text[]) as q(name)
    left join queue_limits l on l.queue = q.name
    cross join lateral (
      select count(*)::int as in_flight, min(t.available_at) as first_lease_end
      from todos t where t.queue = q.name and t.state = 'claimed' and t.available_at > clock.at
    ) f
    cross join lateral (
      select case when l.max_claims is not null then count(*)::int end as claims_in_window
      from queue_claims c
      where l.max_claims is not null and c.queue = q.name
        and c.claimed_at > clock.at - make_interval(secs => l.claims_window_seconds)
    ) w
    -- At the limit, the next claim is admitted when enough of the oldest claims have left the
    -- window to bring the count under it.
    left join lateral (
      select c.claimed_at + make_interval(secs => l.claims_window_seconds) as at
      from queue_claims c
      where c.queue = q.name
        and c.claimed_at > clock.at - make_interval(secs => l.claims_window_seconds)
      order by c.claimed_at
      offset greatest(w.claims_in_window - l.max_claims, 0)
      limit 1
    ) frees on w.claims_in_window >= l.max_claims
    cross join lateral (
      select count(*)::int as waiting from (
        select from todos t
        where ${countWaiting} and t.queue = q.name and t.available_at <= clock.at
          and t.attempt < t.max_attempts and t.kind <> 'approval' and t.state <> 'quarantined'
        limit ${WAITING_COUNTED_MAX}
      ) claimable
    ) p
    order by q.name`;
  return rows.map(toQueue);
}

function toQueue(row: QueueRow): Queue {
  const claims_window = windowOf(row.claims_window_seconds);
  return {
    name: row.name,
    max_in_flight: row.max_in_flight,
    max_claims: row.max_claims,
    claims_window,
    in_flight: row.in_flight,
    claims_in_window: row.claims_in_window,
    waiting: row.waiting,
    held_back: heldBackOf(row, claims_window),
    updated_by: row.updated_by,
    updated_at: row.updated_at,
  };
}

function windowOf(seconds: number | null): ClaimsWindow | null {
  if (seconds === null) return null;
  return seconds === 3600 ? 'hour' : 'day';
}

/** Null while the queue admits claims; else which limit holds them back, and until when. */
function heldBackOf(row: QueueRow, window: ClaimsWindow | null): HeldBack | null {
  const reached: { reason: HeldBackReason; next_at: Date; text: string }[] = [];
  if (
    row.max_in_flight !== null &&
    row.in_flight >= row.max_in_flight &&
    row.first_lease_end !== null
  ) {
    reached.push({
      reason: 'max_in_flight',
      next_at: row.first_lease_end,
      text: `${row.max_in_flight} in flight`,
    });
  }
  if (
    row.max_claims !== null &&
    row.claims_in_window !== null &&
    row.claims_in_window >= row.max_claims &&
    row.window_frees_at !== null
  ) {
    reached.push({
      reason: 'max_claims',
      next_at: row.window_frees_at,
      text: `${row.max_claims} claims ${window === 'hour' ? 'an hour' : 'a day'}`,
    });
  }
  if (reached.length === 0) return null;
  // Both reached: a claim needs a free slot and room in the window, so the later time decides.
  const decisive = reached.reduce((a, b) => (b.next_at > a.next_at ? b : a));
  return {
    queue: row.name,
    reason: decisive.reason,
    next_at: decisive.next_at,
    message:
      `at its limit${reached.length > 1 ? 's' : ''} of ${reached.map((r) => r.text).join(' and ')}` +
      ` — next at ${decisive.next_at.toISOString()}`,
  };
}

/** Every queue that has limits, with its limits and usage. */
export async function readLimitedQueues(db: Db): Promise<Queue[]> {
  const rows = await db<{ queue: string }[]>`select queue from queue_limits`;
  return readQueues(
    db,
    rows.map((row) => row.queue),
  );
}
