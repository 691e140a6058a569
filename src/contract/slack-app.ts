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
