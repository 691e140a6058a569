import type { Db } from '../../db/open-database.js';
import { excerpt } from '../../contract/neutralise-text.js';
import type { GitHubTodoMeta } from './github-todo-meta.js';

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
  const target = {
    installation_id: writeBack.installationId,
    owner: writeBack.owner,
    repo: writeBack.repo,
    issue_number: writeBack.issueNumber,
    ...(writeBack.commentId != null && { comment_id: writeBack.commentId }),
  };
  await db`
    insert into outbox (todo_id, source, kind, write_back, target, body)
    values (${writeBack.todoId}, 'github', 'github',
            ${writeBack.kind === 'issue_comment' ? 'comment' : 'reaction'},
            ${db.json(target)}, ${writeBack.body.slice(0, COMMENT_MAX)})`;
}

/**
 * Queues a comment on the issue or pull request a GitHub todo came from: `text`, cut between
 * characters to leave room for `footer`. Nothing when the todo cannot be written back to.
 */
export async function enqueueComment(
  db: Db,
  todoId: number,
  github: GitHubTodoMeta,
  text: string,
  footer: string,
): Promise<void> {
  if (github.installation_id === null || github.issue_number === null) return;
  await enqueueWriteBack(db, {
    todoId,
    kind: 'issue_comment',
    installationId: github.installation_id,
    owner: github.owner,
    repo: github.repo,
    issueNumber: github.issue_number,
    body: excerpt(text, COMMENT_MAX - footer.length) + footer,
  });
}
