import * as Flags from '@oclif/core/flags';
import type { GitHubAppInUse } from '../../../src/contract/github-app.js';
import { ApiError } from '../../../src/client/client-errors.js';
import { CommandError, EXIT } from '../../command-error.js';
import { openInBrowser } from '../../open-in-browser.js';
import { SwitchboardCommand } from '../../switchboard-command.js';

/** GitHub gives the whole manifest flow an hour: past it, its code is good for nothing. */
const FLOW_MS = 60 * 60_000;
/** One wait on the server: under the idle timeouts of proxies. */
const WAIT_SECONDS = 50;

export default class GithubSetup extends SwitchboardCommand {
  static override summary =
    "Register switchboard's GitHub App on GitHub from app.yml, wired to this server (admins)";
  static override description = `Prints (and opens, where there is a desktop) a one-time link to the web console's setup page, which posts app.yml to GitHub as an App manifest: its events and permissions, deliveries to this server's /api/github/webhooks on SWITCHBOARD_PUBLIC_URL (or to WEBHOOK_PROXY_URL), and GitHub's way back. On GitHub, name the App and click "Create GitHub App": GitHub sends the browser back, and switchboard takes the App's id, key and secrets, keeps them sealed in its database, and uses them at once, without a restart. The command waits for that (up to GitHub's hour), then prints the App and the link to install it on your repositories.

--org registers the App for an organization you administer rather than your own account. Running it again registers a new App, which replaces the one set up before. GHE_HOST on the server registers it on a GitHub Enterprise Server.

Refused (exit 3) when the server takes its App from APP_ID and PRIVATE_KEY in its environment, or has no SWITCHBOARD_SECRET_KEY to seal the App's credentials with. --json prints {"url"} and does not wait.`;
  static override examples = [
    '<%= config.bin %> github setup',
    '<%= config.bin %> github setup --org acme',
    '<%= config.bin %> github setup --print',
    '<%= config.bin %> github setup --json',
  ];
  static override enableJsonFlag = true;
  static override flags = {
    org: Flags.string({
      description: 'register the App for this organization (its login), not your own account',
      helpValue: 'ORG',
    }),
    print: Flags.boolean({ description: 'only print the link; do not open a browser' }),
  };

  async run() {
    const { flags } = await this.parse(GithubSetup);
    const client = await this.client();
    let link: { url: string; requested_at: string };
    try {
      link = await client.githubSetup(flags.org);
    } catch (error) {
      // Not a failure of the server: it cannot keep an App (no SWITCHBOARD_SECRET_KEY).
      if (error instanceof ApiError && error.code === 'github_setup_off')
        throw new CommandError(error.message, EXIT.refused);
      throw error;
    }
    if (this.jsonEnabled()) return { url: link.url };

    this.log(link.url);
    this.log(
      !flags.print && openInBrowser(link.url)
        ? '(opened in your browser; the link works once, within 5 minutes)'
        : 'open it in your browser (it works once, within 5 minutes)',
    );
    this.log(
      'then click "Create GitHub App" on GitHub; waiting for GitHub to send you back (Ctrl-C stops waiting, not the setup)',
    );
    const deadline = Date.now() + FLOW_MS;
    let app: GitHubAppInUse | null = null;
    while (app?.source !== 'setup' && Date.now() < deadline) {
      ({ app } = await client.githubApp({ wait: WAIT_SECONDS, after: link.requested_at }));
      if (app?.source === 'setup' && !(Date.parse(app.created_at) > Date.parse(link.requested_at)))
        app = null;
    }
    if (app?.source !== 'setup') {
      throw new CommandError(
        "no App was set up within GitHub's hour: run 'switchboard github setup' again",
        EXIT.noVerdict,
      );
    }
    this.log(
      `GitHub App ${app.name} (${app.slug}, id ${app.id}${app.owner ? `, owned by ${app.owner}` : ''}) is set up: switchboard uses it now`,
    );
    this.log(`install it on your repositories: ${app.install_url}`);
    return { url: link.url };
  }
}
