import type postgres from 'postgres';
import type { Db } from '../../platform/db/open-database.js';
import type { ProviderKind } from '../../contract/todo.js';

/** The longest comment the outbox holds: GitHub's cap (GitLab's and Gitea's are higher). */
export const COMMENT_MAX = 65_536;

export interface QueuedWriteBack {
  todoId: number;
  /** `github`, or the source's name. */
  source: string;
  kind: ProviderKind;
  write_back: 'comment' | 'reaction';
  /** Where it goes, in the provider's own terms. */
  target: Record<string, unknown>;
  /** The comment's text, or the reaction (`eyes`). */
  body: string;
}

/**
 * Queues a write-back in the caller's transaction, so it exists exactly when the change that
 * asked for it committed; the outbox sender delivers it later, with retries. A source's is
 * queued only while the source has an API token to post it with (else nothing is queued): the
 * App's write-backs are asked for only when the server has the App's credentials.
 */
export async function enqueueWriteBack(db: Db, writeBack: QueuedWriteBack): Promise<void> {
  await db`${writeBacksInsert(db, [writeBack])}`;
}

/**
 * The insert of write-backs, as enqueueWriteBack queues them, for a statement of the caller's:
 * their `todoId` may be an SQL expression (the todo the same statement makes), and `when` gates them.
 */
export function writeBacksInsert(
  db: Db,
  writeBacks: (Omit<QueuedWriteBack, 'todoId'> & { todoId: number | postgres.Fragment })[],
  when: postgres.Fragment = db`true`,
) {
  const rows = writeBacks.map(
    (writeBack) => db`
      select ${writeBack.todoId}::bigint, ${writeBack.source}::text, ${writeBack.kind}::text,
             ${writeBack.write_back}::write_back_kind, ${db.json(writeBack.target as never)}::jsonb,
             ${writeBack.body.slice(0, COMMENT_MAX)}::text
      where ${
        writeBack.source === 'github'
          ? db`true`
          : db`exists (select 1 from sources where name = ${writeBack.source} and api_token is not null)`
      }`,
  );
  return db`
    insert into outbox (todo_id, source, kind, write_back, target, body)
    select * from (${rows.reduce((all, row) => db`${all} union all ${row}`)}) queued where ${when}`;
}
