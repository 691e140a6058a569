import type { Db } from '../../db/open-database.js';

export type WriteBackKind = 'issue_reaction' | 'comment_reaction' | 'issue_comment';

export interface WriteBack {
  todoId: number;
  kind: WriteBackKind;
  installationId: number;
  owner: string;
  repo: string;
  issueNumber: number;
  /** comment_reaction only. */
  commentId?: number | null;
  /** The reaction's content (`eyes`), or the comment's text. */
  body: string;
}

/** GitHub refuses longer comments. */
export const COMMENT_MAX = 65_536;

/**
 * Queues a write-back in the caller's transaction, so it exists exactly when the change that
 * asked for it committed. The outbox sender delivers it later, with retries.
 */
export async function enqueueWriteBack(db: Db, writeBack: WriteBack): Promise<void> {
  await db`
    insert into github_outbox (todo_id, kind, installation_id, owner, repo, issue_number, comment_id, body)
    values (${writeBack.todoId}, ${writeBack.kind}, ${writeBack.installationId}, ${writeBack.owner},
            ${writeBack.repo}, ${writeBack.issueNumber}, ${writeBack.commentId ?? null},
            ${writeBack.body.slice(0, COMMENT_MAX)})`;
}
