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
      select id from outbox
      where source = 'github' and state = 'pending' and next_attempt_at <= now()
      order by next_attempt_at, id
      limit 1
      for update skip locked
    )
    update outbox o set attempts = o.attempts + 1,
                        next_attempt_at = now() + make_interval(secs => ${leaseMs / 1000})
    from due where o.id = due.id
    returning o.id, o.todo_id,
              case when o.write_back = 'comment' then 'issue_comment'
                   when o.target ? 'comment_id' then 'comment_reaction'
                   else 'issue_reaction' end as kind,
              (o.target->>'installation_id')::bigint as installation_id, o.target->>'owner' as owner,
              o.target->>'repo' as repo, (o.target->>'issue_number')::bigint as issue_number,
              (o.target->>'comment_id')::bigint as comment_id, o.body, o.attempts`;
  return row;
}
