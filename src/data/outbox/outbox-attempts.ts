import type postgres from 'postgres';

export interface RetryPolicy {
  /** Delay after the first failure; it doubles with each further one… */
  retryBaseMs: number;
  /** …up to this. */
  retryMaxMs: number;
  /** After this many attempts the write-back is given up (`dead`, with the last error kept). */
  maxAttempts: number;
}

export async function markOutboxSent(sql: postgres.Sql, id: number): Promise<void> {
  await sql`
    update outbox set state = 'sent', sent_at = now(), last_error = null
    where id = ${id} and state = 'pending'`;
}

/**
 * Records a failed attempt: back off exponentially (computed in SQL from the attempt count), or
 * when the service said when to come back (Slack's Retry-After), then; or give up — after the
 * last attempt, or at once when retrying cannot help (`final`).
 */
export async function markOutboxFailed(
  sql: postgres.Sql,
  id: number,
  error: string,
  final: boolean,
  policy: RetryPolicy,
  retryAfterMs?: number,
): Promise<'pending' | 'dead'> {
  const [row] = await sql<{ state: 'pending' | 'dead' }[]>`
    update outbox set
      state = case when ${final} or attempts >= ${policy.maxAttempts} then 'dead' else 'pending' end::write_back_state,
      next_attempt_at = now() + make_interval(secs => coalesce(${retryAfterMs === undefined ? null : retryAfterMs / 1000}::float8,
                                                               least(${policy.retryMaxMs / 1000}::float8,
                                                                     ${policy.retryBaseMs / 1000}::float8 * power(2, attempts - 1)))),
      last_error = ${error.slice(0, 500)}
    where id = ${id} and state = 'pending'
    returning state`;
  return row?.state ?? 'dead';
}
