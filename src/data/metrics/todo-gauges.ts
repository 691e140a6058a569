import type postgres from 'postgres';

/** How many todos each queue holds in each state. */
export async function countTodos(
  sql: postgres.Sql,
): Promise<{ queue: string; state: string; count: number }[]> {
  return sql<{ queue: string; state: string; count: number }[]>`
    select queue, state::text, count(*) as count from todos group by queue, state`;
}

/** How long the oldest todo that may be claimed now has waited, in seconds, by queue. */
export async function oldestPendingAges(
  sql: postgres.Sql,
): Promise<{ queue: string; age: number }[]> {
  return sql<{ queue: string; age: number }[]>`
    select queue, extract(epoch from now() - min(available_at))::float8 as age
    from todos where state = 'pending' and available_at <= now() group by queue`;
}
