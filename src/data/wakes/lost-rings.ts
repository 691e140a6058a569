import type postgres from 'postgres';
import { eventRecorded } from '../index.js';

/**
 * The pending todos whose last ring went to one of `sessionIds` with no `rung` recorded for it:
 * another process took the ring for them and its NOTIFY went nowhere.
 */
export async function lostRings(sql: postgres.Sql, sessionIds: string[]): Promise<number[]> {
  const lost = await sql<{ todo_id: number }[]>`
    select r.todo_id from todo_rings r
    join todos t on t.id = r.todo_id and t.state = 'pending'
    where r.last_session = any(${sessionIds}::uuid[])
      and not ${eventRecorded(sql, {
        todo: sql`r.todo_id`,
        actions: ['rung'],
        key: 'ring',
        equals: sql`r.rings::text`,
      })}`;
  return lost.map((row) => row.todo_id);
}
