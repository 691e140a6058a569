import { LogLevel, type Logger as SlackLogger } from '@slack/logger';
import {
  WebAPIHTTPError,
  WebAPIPlatformError,
  WebAPIRateLimitedError,
  WebAPIRequestError,
  WebClient,
} from '@slack/web-api';

export const SLACK_API_URL = 'https://slack.com/api/';

/**
 * Where Sign in with Slack's signing keys are: beside the Web API, as on Slack itself
 * (https://slack.com/api/ → https://slack.com/openid/connect/keys), so that a proxy or a fake
 * given as the API's URL serves them too.
 */
export function slackKeysUrl(apiUrl: string): string {
  return new URL('../openid/connect/keys', apiUrl.endsWith('/') ? apiUrl : `${apiUrl}/`).href;
}

/**
 * The SDK logs request bodies at debug and its own retries at warn; switchboard says what matters
 * itself (without a token, a secret or a message's text), so the SDK's lines go nowhere.
 */
const QUIET: SlackLogger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  setLevel() {},
  getLevel: () => LogLevel.ERROR,
  setName() {},
};

export type SlackClientFactory = (token?: string) => WebClient;

/**
 * Web API clients at `SWITCHBOARD_SLACK_API_URL` (Slack's own by default), with the SDK's
 * retries and its waiting out of rate limits off: a 429 or a 5xx is the outbox's to retry, at the
 * time Slack asked for, within the approval's life — not a call left waiting in a queue.
 */
export function createSlackClients(
  apiUrl = SLACK_API_URL,
  { timeoutMs = 10_000 }: { timeoutMs?: number } = {},
): SlackClientFactory {
  const slackApiUrl = apiUrl.endsWith('/') ? apiUrl : `${apiUrl}/`;
  return (token) =>
    new WebClient(token, {
      slackApiUrl,
      logger: QUIET,
      retryConfig: { retries: 0 },
      rejectRateLimitedCalls: true,
      timeout: timeoutMs,
      // Methods are names under the API URL, never absolute URLs from elsewhere.
      allowAbsoluteUrls: false,
    });
}

/** Slack's answers that mean the bot token is no good any more: reinstall or add a new one. */
const TOKEN_REFUSED = new Set([
  'invalid_auth',
  'not_authed',
  'token_revoked',
  'token_expired',
  'account_inactive',
  'app_uninstalled',
  'team_access_not_granted',
]);
/** Platform errors that say "later", not "no". */
const TRANSIENT = new Set([
  'ratelimited',
  'internal_error',
  'fatal_error',
  'service_unavailable',
  'request_timeout',
]);

/** What a failed call means for whoever retries it. */
export type SlackFailure =
  | { kind: 'retry'; detail: string; retryAfterMs?: number }
  | { kind: 'token_refused'; detail: string }
  | { kind: 'final'; detail: string };

/** Classifies an error from the SDK, in words that hold no token and no message text. */
export function slackFailureOf(error: unknown): SlackFailure {
  if (error instanceof WebAPIRateLimitedError) {
    return {
      kind: 'retry',
      detail: `429 from Slack, Retry-After ${error.retryAfter} s`,
      retryAfterMs: error.retryAfter * 1000,
    };
  }
  if (error instanceof WebAPIHTTPError) {
    const detail = `${error.statusCode} from Slack`;
    return error.statusCode >= 500 || error.statusCode === 408
      ? { kind: 'retry', detail }
      : { kind: 'final', detail };
  }
  if (error instanceof WebAPIPlatformError) {
    const code = String(error.data.error).slice(0, 80);
    if (TOKEN_REFUSED.has(code)) return { kind: 'token_refused', detail: `Slack said ${code}` };
    return TRANSIENT.has(code)
      ? { kind: 'retry', detail: `Slack said ${code}` }
      : { kind: 'final', detail: `Slack said ${code}` };
  }
  if (error instanceof WebAPIRequestError) {
    const cause = error.original as { name?: string; cause?: { code?: unknown } };
    const code = typeof cause.cause?.code === 'string' ? cause.cause.code : cause.name;
    return { kind: 'retry', detail: `no answer from Slack (${code ?? 'network error'})` };
  }
  // A 429 without a Retry-After the SDK could read, and anything else unforeseen: worth a retry.
  return { kind: 'retry', detail: 'no usable answer from Slack' };
}
