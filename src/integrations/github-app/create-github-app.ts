import { Probot, type ProbotOctokit } from 'probot';
import type { Logger } from '../../platform/logger.js';
import { probotLogger } from './probot-logger.js';

/**
 * The GitHub App's client: Probot, for what it does well — the App's JWT and its installation
 * tokens (cached), an Octokit with throttling and retries, the repository config loader. It
 * receives no webhook: deliveries come through the one intake (src/intake), like every other
 * provider's.
 */
export function createGitHubApp(options: {
  /** APP_ID and PRIVATE_KEY (src/platform/config/server-config.ts). */
  app: { appId: string; privateKey: string };
  /** The REST API's base: api.github.com, or a GitHub Enterprise Server's /api/v3 (GHE_HOST). */
  baseUrl: string;
  log: Logger;
  /** Tests: an Octokit class with retries and throttling off. */
  Octokit?: typeof ProbotOctokit | undefined;
}): Probot {
  return new Probot({
    appId: options.app.appId,
    privateKey: options.app.privateKey,
    // Probot reads GHE_HOST itself only in `probot run` (createProbot); an App made here is
    // told where GitHub is.
    baseUrl: options.baseUrl,
    log: probotLogger(options.log),
    Octokit: options.Octokit,
  });
}
