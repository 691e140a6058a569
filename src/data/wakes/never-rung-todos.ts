import type postgres from 'postgres';

/**
 * Claimable todos that have never been rung (their wake was lost while nobody listened), the
 * longest available first, 500 at a time.
 */
export async function neverRungTodos(sql: postgres.Sql): Promise<number[]> {
  const missed = await sql<{ id: number }[]>`
    select t.id from todos t
    where t.state = 'pending' and t.available_at <= now() and t.kind <> 'approval'
      and not exists (select 1 from todo_rings r where r.todo_id = t.id)
    order by t.available_at limit 500`;
  return missed.map((row) => row.id);
}
