import type postgres from 'postgres';
import type { WriteBackKind } from './enqueue-write-back.js';

/** A row of github_outbox being attempted. */
export interface OutboxRow {
  id: number;
  todo_id: number;
  kind: WriteBackKind;
  installation_id: number;
  owner: string;
  repo: string;
  issue_number: number;
  comment_id: number | null;
  body: string;
  attempts: number;
}

export interface RetryPolicy {
  /** Delay after the first failure; it doubles with each further one… */
  retryBaseMs: number;
  /** …up to this. */
  retryMaxMs: number;
  /** After this many attempts the write-back is given up (`dead`, with the last error kept). */
  maxAttempts: number;
}

/**
 * Takes the next due write-back for one attempt. Rows another process is taking are skipped, not
 * waited for; the taken row's next attempt moves to the end of a lease, so a process that dies
 * mid-send leaves it to be retried rather than lost. One row at a time, so that each lease starts
 * with its own attempt: rows taken together would wait their turn behind a slow GitHub until
 * their leases ran out, and another process would take them and send them too.
 */
export async function claimDueWriteBack(
  sql: postgres.Sql,
  leaseMs: number,
): Promise<OutboxRow | undefined> {
  const [row] = await sql<OutboxRow[]>`
    with due as (
      select id from github_outbox
      where state = 'pending' and next_attempt_at <= now()
      order by next_attempt_at, id
      limit 1
      for update skip locked
    )
    update github_outbox o set attempts = o.attempts + 1,
                               next_attempt_at = now() + make_interval(secs => ${leaseMs / 1000})
    from due where o.id = due.id
    returning o.id, o.todo_id, o.kind, o.installation_id, o.owner, o.repo, o.issue_number,
              o.comment_id, o.body, o.attempts`;
  return row;
}

export async function markWriteBackSent(sql: postgres.Sql, id: number): Promise<void> {
  await sql`
    update github_outbox set state = 'sent', sent_at = now(), last_error = null
    where id = ${id} and state = 'pending'`;
}

/**
 * Records a failed attempt: back off exponentially (computed in SQL from the attempt count), or
 * give up — after the last attempt, or at once when retrying cannot help (`final`).
 */
export async function markWriteBackFailed(
  sql: postgres.Sql,
  id: number,
  error: string,
  final: boolean,
  policy: RetryPolicy,
): Promise<'pending' | 'dead'> {
  const [row] = await sql<{ state: 'pending' | 'dead' }[]>`
    update github_outbox set
      state = case when ${final} or attempts >= ${policy.maxAttempts} then 'dead' else 'pending' end::github_write_back_state,
      next_attempt_at = now() + make_interval(secs => least(${policy.retryMaxMs / 1000}::float8,
                                                            ${policy.retryBaseMs / 1000}::float8 * power(2, attempts - 1))),
      last_error = ${error.slice(0, 500)}
    where id = ${id} and state = 'pending'
    returning state`;
  return row?.state ?? 'dead';
}
