import type { ProbotOctokit } from 'probot';
import type { OutboxRow } from './write-back-outbox.js';

/** One write-back, as one GitHub API call through the installation's Octokit. */
export async function sendWriteBack(
  octokit: ProbotOctokit,
  row: OutboxRow,
  signal: AbortSignal,
): Promise<void> {
  const target = { owner: row.owner, repo: row.repo, request: { signal } };
  switch (row.kind) {
    case 'issue_reaction':
      await octokit.rest.reactions.createForIssue({
        ...target,
        issue_number: row.issue_number,
        content: 'eyes',
      });
      return;
    case 'comment_reaction':
      await octokit.rest.reactions.createForIssueComment({
        ...target,
        comment_id: row.comment_id!,
        content: 'eyes',
      });
      return;
    case 'issue_comment':
      await octokit.rest.issues.createComment({
        ...target,
        issue_number: row.issue_number,
        body: row.body,
      });
      return;
  }
}
