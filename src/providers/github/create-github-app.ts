import { Probot, type ProbotOctokit } from 'probot';
import type { Logger } from '../../logger.js';
import { probotLogger } from './probot-logger.js';

/**
 * The GitHub App's client: Probot, for what it does well — the App's JWT and its installation
 * tokens (cached), an Octokit with throttling and retries, the repository config loader. It
 * receives no webhook: deliveries come through the one intake (src/intake), like every other
 * provider's.
 */
export function createGitHubApp(options: {
  /** APP_ID and PRIVATE_KEY (src/config/server-config.ts). */
  app: { appId: string; privateKey: string };
  log: Logger;
  /** Tests: an Octokit class with retries and throttling off. */
  Octokit?: typeof ProbotOctokit | undefined;
}): Probot {
  return new Probot({
    appId: options.app.appId,
    privateKey: options.app.privateKey,
    log: probotLogger(options.log),
    Octokit: options.Octokit,
  });
}
