import { isOutboundRefused, type Outbound } from '../outbound/create-outbound.js';
import type { OpenedSource } from './source-store.js';

/** A provider's answer that retrying cannot change (the issue is gone, the token is refused…). */
export class FinalSendError extends Error {}

/**
 * One comment, as one call to the provider's API: Gitea and Forgejo
 * (`POST /api/v1/repos/{owner}/{repo}/issues/{index}/comments`, pull requests included), GitLab
 * (`POST /api/v4/projects/{id}/{issues|merge_requests}/{iid}/notes`), Linear (GraphQL
 * `commentCreate`). A Standard Webhooks sender has no API to answer on. Sent through the outbound
 * module: the token goes to the source's API URL only, never after a redirect (a 3xx is a final
 * answer here), and never to an address inside unless SWITCHBOARD_OUTBOUND_ALLOW allows it.
 */
export async function sendSourceComment(
  outbound: Outbound,
  source: OpenedSource,
  target: Record<string, unknown>,
  body: string,
  signal: AbortSignal,
): Promise<void> {
  const base = source.api_url!;
  const token = source.apiToken!;
  const origin = new URL(base).origin;
  const post = async (url: string, headers: Record<string, string>, json: unknown) => {
    let answer;
    try {
      answer = await outbound.request(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        credential: { origin, headers },
        body: JSON.stringify(json),
        signal,
      });
    } catch (error) {
      // Only an admin reads this (the source's outbox): the refusal's reason helps them.
      if (isOutboundRefused(error)) throw new FinalSendError((error as Error).message);
      throw error;
    }
    const { status, body: text } = answer;
    if (status >= 300 && status < 400) {
      throw new FinalSendError(
        `${source.kind} answered ${status}, a redirect: not followed (the API token goes to the source's API URL only; give the URL it points to)`,
      );
    }
    if (status < 200 || status >= 300) {
      // The status and the provider's own message only, never the request (it holds the token).
      const message = `${source.kind} answered ${status}: ${text.slice(0, 200)}`;
      if ([400, 401, 403, 404, 410, 422].includes(status)) throw new FinalSendError(message);
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
