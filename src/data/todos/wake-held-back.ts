import type { Db } from '../../platform/db/open-database.js';

/**
 * For the todos that the CTE `t` of a statement just took out of flight (completed, failed): on
 * each of their queues that has an in-flight limit, the wake of the oldest todo waiting there,
 * sent when the statement commits. Nothing else rings when a slot frees — that todo was rung when
 * it arrived, found the queue full, and would wait for its re-ring, minutes away. A queue without
 * limits costs the statement one probe of queue_limits per queue it touched, and no NOTIFY (whose
 * commits PostgreSQL serialises: migration 0012).
 *
 * Used as `freed as (${wakeHeldBack(db)})`, read by the statement's last select so it runs.
 */
export function wakeHeldBack(db: Db) {
  return db`
    select pg_notify(current_schema() || '.wakes', json_build_object(
             'todo_id', w.id, 'queue', w.queue, 'assignee', w.assignee, 'requested_by', null,
             'wake_id', pg_current_xact_id()::text, 'event', 'claimable')::text)
    from (select distinct t.queue from t) q
    join queue_limits l on l.queue = q.queue and l.max_in_flight is not null
    cross join lateral (
      select w.id, w.queue, w.assignee from todos w
      where w.queue = q.queue and w.state = 'pending' and w.available_at <= now()
        and w.kind <> 'approval'
      order by w.available_at, w.id
      limit 1
    ) w`;
}
