import { FinalSendError } from '../../outbox/final-send-error.js';
import type { ProviderClients, WriteBackRequest } from '../provider.js';

/** GitHub answers these for a target that is gone or a request it will never take. */
const FINAL_STATUSES = new Set([404, 410, 422]);

/**
 * One write-back, as one GitHub API call through the installation's Octokit (with Probot's
 * throttling in production, so rate limits are waited out rather than hammered): 👀 on the
 * issue or the comment, or a comment on the issue or pull request.
 */
export async function sendWriteBack(
  request: WriteBackRequest,
  clients: ProviderClients,
): Promise<void> {
  const { target, signal } = request;
  if (!clients.github) {
    throw new Error('GitHub write-back is off: APP_ID and PRIVATE_KEY are not set');
  }
  try {
    const octokit = await clients.github.auth(Number(target.installation_id));
    const at = { owner: String(target.owner), repo: String(target.repo), request: { signal } };
    if (request.write_back === 'comment') {
      await octokit.rest.issues.createComment({
        ...at,
        issue_number: Number(target.issue_number),
        body: request.body,
      });
    } else if (target.comment_id != null) {
      await octokit.rest.reactions.createForIssueComment({
        ...at,
        comment_id: Number(target.comment_id),
        content: 'eyes',
      });
    } else {
      await octokit.rest.reactions.createForIssue({
        ...at,
        issue_number: Number(target.issue_number),
        content: 'eyes',
      });
    }
  } catch (error) {
    // The status and GitHub's message only, and no cause: an Octokit error also carries the
    // request, whose headers hold the installation token.
    const status = (error as { status?: unknown }).status;
    const message = error instanceof Error ? error.message : String(error);
    const reason = typeof status === 'number' ? `GitHub answered ${status}: ${message}` : message;
    const final = typeof status === 'number' && FINAL_STATUSES.has(status);
    throw final ? new FinalSendError(reason) : new Error(reason);
  }
}
