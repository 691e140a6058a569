import type postgres from 'postgres';
import type { ProviderKind } from '../../contract/todo.js';

/** A row of the outbox being attempted: a provider's write-back, or a Slack message. */
export type OutboxRow = ProviderWriteBackRow | SlackMessageRow;

interface QueuedRow {
  id: number;
  todo_id: number;
  source: string;
  target: Record<string, unknown>;
  body: string;
  attempts: number;
}

export interface ProviderWriteBackRow extends QueuedRow {
  kind: ProviderKind;
  write_back: 'comment' | 'reaction';
}

/** An approval's message posted (`message`), or brought up to date once it ended (src/integrations/slack). */
export interface SlackMessageRow extends QueuedRow {
  kind: 'slack';
  write_back: 'message' | 'message_update';
}

/**
 * Takes the next due write-back for one attempt — of the sources this process can send for:
 * the App's (with its credentials), the registry's and Slack's (with the key that opens their
 * tokens). Rows another process is taking are skipped, not waited for; the taken row's next
 * attempt moves to the end of a lease, so a process that dies mid-send leaves it to be retried
 * rather than lost.
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
