import type postgres from 'postgres';

/** The todos whose re-ring is due, the longest due first, a hundred at a time. */
export async function dueRings(sql: postgres.Sql): Promise<number[]> {
  const due = await sql<{ todo_id: number }[]>`
    select todo_id from todo_rings where next_ring_at <= now() order by next_ring_at limit 100`;
  return due.map((row) => row.todo_id);
}
