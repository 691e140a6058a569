/**
 * The Slack app as the API shows it (`GET /api/v1/slack/app`): shared by the server that
 * answers and the CLI that prints it. Never a token or a secret, only whether there is one.
 */
export interface SlackAppView {
  team_id: string | null;
  team_name: string | null;
  bot_user_id: string | null;
  installed: boolean;
  /** Whether the console's install flow and Sign in with Slack can run (a client id and secret). */
  has_oauth_client: boolean;
  client_id: string | null;
  added_by: string;
  /** Slack refused the bot token: when, and its words for why. */
  token_refused_at: string | null;
  token_refused_reason: string | null;
  created_at: string;
  updated_at: string;
}

/** What `slack add` gives (`PUT /api/v1/slack/app`), before anything is asked of Slack. */
export interface SlackAppInput {
  bot_token?: string | undefined;
  signing_secret?: string | undefined;
  client_id?: string | undefined;
  client_secret?: string | undefined;
}

const BOT_TOKEN = /^xoxb-[A-Za-z0-9-]{10,500}$/;
const SLACK_SECRET = /^[0-9a-f]{32,64}$/;
const CLIENT_ID = /^[0-9.]{3,64}$/;

/**
 * Every way the input is not what Slack hands out, all at once (none: it may go to Slack). The
 * CLI says them before it calls the server, and the server before it calls Slack.
 */
export function slackAppProblems(input: SlackAppInput): string[] {
  const problems: string[] = [];
  if (input.signing_secret === undefined)
    problems.push('no signing secret (--signing-secret, or SLACK_SIGNING_SECRET)');
  else if (!SLACK_SECRET.test(input.signing_secret))
    problems.push(
      "a signing secret is Slack's 32 hexadecimal characters (Basic Information → App Credentials)",
    );
  if (input.bot_token !== undefined && !BOT_TOKEN.test(input.bot_token))
    problems.push('a bot token starts xoxb- (OAuth & Permissions → Bot User OAuth Token)');
  if ((input.client_id === undefined) !== (input.client_secret === undefined))
    problems.push('a client id goes with its client secret: give both, or neither');
  if (input.client_id !== undefined && !CLIENT_ID.test(input.client_id))
    problems.push("a client id is Slack's digits and dots (Basic Information → App Credentials)");
  if (input.client_secret !== undefined && !SLACK_SECRET.test(input.client_secret))
    problems.push("a client secret is Slack's 32 hexadecimal characters");
  if (input.bot_token === undefined && input.client_id === undefined)
    problems.push(
      'give the bot token (--bot-token), or a client id and secret to install from the console',
    );
  return problems;
}
