/**
 * The GitHub App a server uses, as the API shows it (`GET /api/v1/github/app`): shared by the
 * server that answers and the CLI that prints it.
 */

/** The App `switchboard github setup` stored: never a secret. */
export interface SetUpAppView {
  id: string;
  slug: string;
  name: string;
  html_url: string;
  owner: string | null;
  /** Where a human installs it on an account's repositories. */
  install_url: string;
  created_by: string;
  created_at: string;
}

/** The GitHub App a server uses: the environment's (APP_ID), or the one `github setup` stored. */
export type GitHubAppInUse = { source: 'environment' } | ({ source: 'setup' } & SetUpAppView);
