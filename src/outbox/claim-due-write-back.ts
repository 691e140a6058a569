import type postgres from 'postgres';
import type { ProviderKind } from '../providers/provider.js';

/** A row of the outbox being attempted. */
export interface OutboxRow {
  id: number;
  todo_id: number;
  source: string;
  kind: ProviderKind;
  write_back: 'comment' | 'reaction';
  target: Record<string, unknown>;
  body: string;
  attempts: number;
}

/**
 * Takes the next due write-back for one attempt — of the sources this process can send for:
 * the App's (with its credentials), the registry's (with the key that opens their tokens). Rows
 * another process is taking are skipped, not waited for; the taken row's next attempt moves to
 * the end of a lease, so a process that dies mid-send leaves it to be retried rather than lost.
 * One row at a time, so that each lease starts with its own attempt: rows taken together would
 * wait their turn behind a slow provider until their leases ran out, and another process would
 * take them and send them too.
 */
export async function claimDueWriteBack(
  sql: postgres.Sql,
  leaseMs: number,
  sendable: { github: boolean; sources: boolean },
): Promise<OutboxRow | undefined> {
  if (!sendable.github && !sendable.sources) return undefined;
  const which =
    sendable.github && sendable.sources
      ? sql`true`
      : sendable.github
        ? sql`source = 'github'`
        : sql`source <> 'github'`;
  const [row] = await sql<OutboxRow[]>`
    with due as (
      select id from outbox
      where state = 'pending' and next_attempt_at <= now() and ${which}
      order by next_attempt_at, id
      limit 1
      for update skip locked
    )
    update outbox o set attempts = o.attempts + 1,
                        next_attempt_at = now() + make_interval(secs => ${leaseMs / 1000})
    from due where o.id = due.id
    returning o.id, o.todo_id, o.source, o.kind, o.write_back::text, o.target, o.body, o.attempts`;
  return row;
}
