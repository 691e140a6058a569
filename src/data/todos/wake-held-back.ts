import type { Db } from '../../platform/db/open-database.js';

/**
 * For the todos that the CTE `t` of a statement just took out of flight (completed, failed): on
 * each of their queues that has an in-flight limit, the wake of the oldest todo waiting there,
 * sent when the statement commits. Nothing else rings when a slot frees — that todo was rung when
 * it arrived, found the queue full, and would wait for its re-ring, minutes away. A queue without
 * limits costs the statement one probe of queue_limits per queue it touched, and no NOTIFY (whose
 * commits PostgreSQL serialises: migration 0012). The payload is the trigger's (`todo_wake`,
 * migrations/0047).
 *
 * Used as `freed as (${wakeHeldBack(db)})`, read by the statement's last select so it runs.
 */
export function wakeHeldBack(db: Db) {
  return db`
    select pg_notify(current_schema() || '.wakes', todo_wake(next.w))
    from (select distinct t.queue from t) q
    join queue_limits l on l.queue = q.queue and l.max_in_flight is not null
    cross join lateral (
      select w from todos w
      where w.queue = q.queue and w.state = 'pending' and w.available_at <= now()
        and w.kind <> 'approval'
      order by w.available_at, w.id
      limit 1
    ) next (w)`;
}
