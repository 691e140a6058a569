import type postgres from 'postgres';

/**
 * Counts one failure of `key` for `limiter` in a fixed window of `windowMs` (auth_failures), the
 * same count for every server process on the database: a window that ended starts afresh.
 * Returns the failures in the window, this one included, and the seconds left of it.
 */
export async function countAuthFailure(
  sql: postgres.Sql,
  limiter: string,
  key: string,
  windowMs: number,
): Promise<{ failures: number; seconds: number }> {
  const window = sql`now() + make_interval(secs => ${windowMs / 1000})`;
  const [row] = await sql<[{ failures: number; seconds: number }]>`
    insert into auth_failures as f (limiter, key, failures, window_ends_at)
    values (${limiter}, ${key}, 1, ${window})
    on conflict (limiter, key) do update set
      failures = case when f.window_ends_at <= now() then 1 else f.failures + 1 end,
      window_ends_at = case when f.window_ends_at <= now() then ${window} else f.window_ends_at end
    returning failures, ceil(extract(epoch from window_ends_at - now()))::int as seconds`;
  return row;
}
