import type postgres from 'postgres';

/**
 * Deletes the due rings of todos that are no longer pending (claimed, finished): their wakes are
 * answered, and their re-rings must not fill the due ones read next. The dispatcher runs it every
 * second in every process, so its cost must follow the rings that are due, never the todos
 * waiting nor the ledger's size. A finished todo's ring lingers until it is due (its first re-ring,
 * 30 s after the wake, for most), harmless: nothing else reads a ring without its todo, and a
 * released todo's wake starts its ring over.
 *
 * Two readings that cost more, each found by the growth benchmark or a probe of an idle server:
 * as a join, the planner hashed the ring rows and read every todo ever made (most of a second of
 * a core, every second, at 10⁶ todos with 10⁵ waiting); by key over every ring, it read every
 * waiting todo (79 ms a pass at 10⁶ todos with 2 × 10⁴ waiting).
 */
export async function forgetFinishedRings(sql: postgres.Sql): Promise<void> {
  await sql`
    delete from todo_rings r
    where r.next_ring_at <= now()
      and (select t.state from todos t where t.id = r.todo_id) <> 'pending'`;
}
