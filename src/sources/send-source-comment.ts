import type { OpenedSource } from './source-store.js';

/** A provider's answer that retrying cannot change (the issue is gone, the token is refused…). */
export class FinalSendError extends Error {}

/**
 * One comment, as one call to the provider's API: Gitea and Forgejo
 * (`POST /api/v1/repos/{owner}/{repo}/issues/{index}/comments`, pull requests included), GitLab
 * (`POST /api/v4/projects/{id}/{issues|merge_requests}/{iid}/notes`), Linear (GraphQL
 * `commentCreate`). A Standard Webhooks sender has no API to answer on.
 */
export async function sendSourceComment(
  source: OpenedSource,
  target: Record<string, unknown>,
  body: string,
  signal: AbortSignal,
): Promise<void> {
  const base = source.api_url!;
  const token = source.apiToken!;
  const post = async (url: string, headers: Record<string, string>, json: unknown) => {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json', ...headers },
      body: JSON.stringify(json),
      signal,
    });
    const text = await response.text();
    if (!response.ok) {
      // The status and the provider's own message only, never the request (it holds the token).
      const message = `${source.kind} answered ${response.status}: ${text.slice(0, 200)}`;
      if ([400, 401, 403, 404, 410, 422].includes(response.status))
        throw new FinalSendError(message);
      throw new Error(message);
    }
    return text;
  };
  const part = (value: unknown) => encodeURIComponent(String(value));
  switch (source.kind) {
    case 'gitea':
    case 'forgejo':
      await post(
        `${base}/api/v1/repos/${part(target.owner)}/${part(target.repo)}/issues/${part(target.number)}/comments`,
        { authorization: `token ${token}` },
        { body },
      );
      return;
    case 'gitlab':
      await post(
        `${base}/api/v4/projects/${part(target.project_id)}/${target.noun === 'merge_requests' ? 'merge_requests' : 'issues'}/${part(target.iid)}/notes`,
        { 'private-token': token },
        { body },
      );
      return;
    case 'linear': {
      const text = await post(
        `${base}/graphql`,
        { authorization: token },
        {
          query:
            'mutation CommentCreate($input: CommentCreateInput!) { commentCreate(input: $input) { success } }',
          variables: { input: { issueId: target.issue_id, body } },
        },
      );
      // GraphQL answers 200 with its errors in the body.
      const answer = JSON.parse(text) as {
        data?: { commentCreate?: { success?: boolean } };
        errors?: { message?: string }[];
      };
      if (!answer.data?.commentCreate?.success) {
        throw new FinalSendError(
          `linear refused the comment: ${answer.errors?.[0]?.message?.slice(0, 200) ?? 'no success'}`,
        );
      }
      return;
    }
    case 'standard-webhooks':
      throw new FinalSendError('a Standard Webhooks source has no API to comment on');
  }
}
