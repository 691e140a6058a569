import { isOutboundRefused, type Outbound } from '../platform/egress/create-egress.js';
import { FinalSendError } from '../outbox/final-send-error.js';
import type { SourceApi } from './provider.js';

/**
 * One POST to a source's API (a comment on Gitea, GitLab or Linear), sent through the outbound
 * module: the token goes to the source's API URL only, never after a redirect (a 3xx is a final
 * answer here), and never to an address inside unless SWITCHBOARD_OUTBOUND_ALLOW allows it.
 * Resolves with the answer's text; an answer retrying cannot change is a FinalSendError.
 */
export async function postToSourceApi(
  outbound: Outbound,
  request: {
    /** The provider, as its errors name it (`gitea answered 404: …`). */
    kind: string;
    api: SourceApi;
    /** Below the API URL: `/api/v1/repos/…/comments`. */
    path: string;
    /** The token, as this provider takes it. */
    credential: Record<string, string>;
    json: unknown;
    signal: AbortSignal;
  },
): Promise<string> {
  const { kind, api } = request;
  let answer;
  try {
    answer = await outbound.request(`${api.url}${request.path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      credential: { origin: new URL(api.url).origin, headers: request.credential },
      body: JSON.stringify(request.json),
      signal: request.signal,
    });
  } catch (error) {
    // Only an admin reads this (the outbox's last error): the refusal's reason helps them.
    if (isOutboundRefused(error)) throw new FinalSendError((error as Error).message);
    throw error;
  }
  const { status, body: text } = answer;
  if (status >= 300 && status < 400) {
    throw new FinalSendError(
      `${kind} answered ${status}, a redirect: not followed (the API token goes to the source's API URL only; give the URL it points to)`,
    );
  }
  if (status < 200 || status >= 300) {
    // The status and the provider's own message only, never the request (it holds the token).
    const message = `${kind} answered ${status}: ${text.slice(0, 200)}`;
    if ([400, 401, 403, 404, 410, 422].includes(status)) throw new FinalSendError(message);
    throw new Error(message);
  }
  return text;
}

/** A path segment from a target's field, escaped. */
export const pathPart = (value: unknown): string => encodeURIComponent(String(value));
