import type postgres from 'postgres';

/**
 * Deletes the ring rows of todos that are no longer pending (claimed, finished): their wakes
 * are answered. The dispatcher runs it every second in every process, so its cost must follow
 * the ring rows (the todos waiting now), never the ledger's size: each row's todo is looked up
 * by its primary key. As a join, the planner hashed the ring rows and read every todo ever
 * made — at 10⁶ todos with 10⁵ waiting, most of a second of a core, every second.
 */
export async function forgetFinishedRings(sql: postgres.Sql): Promise<void> {
  await sql`
    delete from todo_rings r
    where (select t.state from todos t where t.id = r.todo_id) <> 'pending'`;
}
