import { Context, type Probot, type ProbotOctokit } from 'probot';
import { describeRulesIssue } from '../rule-schema.js';
import { TimeoutError, withTimeout } from '../../platform/with-timeout.js';
import type { GitHubFacts } from './read-delivery-facts.js';
import { DEFAULT_CONFIG, RepositoryConfig } from './repository-config.js';

export const CONFIG_FILE = 'switchboard.yml';

export interface LoadedConfig {
  config: RepositoryConfig;
  /** Why the defaults were used instead of the repository's file, if they were. */
  warning: string | null;
}

/**
 * The repository's `.github/switchboard.yml` (or its owner's `.github` repository's) merged over
 * the defaults, read with Probot's loader. Whatever goes wrong — GitHub unreachable, slow, rate
 * limited, a file that is not valid — the defaults apply and the reason comes back as a warning:
 * a delivery never fails over its configuration.
 */
export async function loadRepositoryConfig(
  context: Pick<Context, 'config'>,
  timeoutMs: number,
): Promise<LoadedConfig> {
  let merged: unknown;
  try {
    merged = await withTimeout(
      // Arrays replace the default (a file listing `associations: [OWNER]` means only owners).
      context.config(CONFIG_FILE, DEFAULT_CONFIG, {
        arrayMerge: (_default: unknown[], file: unknown[]) => file,
      }),
      timeoutMs,
    );
  } catch (error) {
    return {
      config: DEFAULT_CONFIG,
      warning: `${describeFailure(error, timeoutMs)}; defaults used`,
    };
  }
  const parsed = RepositoryConfig.safeParse(merged);
  if (parsed.success) return { config: parsed.data, warning: null };
  return {
    config: DEFAULT_CONFIG,
    warning: `.github/${CONFIG_FILE} is invalid (${describeRulesIssue(parsed.error)}); defaults used`,
  };
}

/**
 * The rules for a delivery's repository, read through its installation — by the intake, and by
 * `deliveries explain` later — within `timeoutMs`; the defaults (and why) otherwise. A delivery
 * that names no repository has nothing to read: the defaults. One that names no installation
 * (an App's deliveries always do) is read unauthenticated, as Probot's handlers would read it.
 */
export async function readRepositoryRules(
  probot: Probot,
  facts: GitHubFacts,
  timeoutMs: number,
): Promise<{ rules: RepositoryConfig; warning: string | null }> {
  const { repository, installation_id: installationId } = facts;
  if (!repository) return { rules: DEFAULT_CONFIG, warning: null };
  const read = async () => {
    const payload = {
      repository: { owner: { login: repository.owner }, name: repository.name },
      ...(installationId !== null && { installation: { id: installationId } }),
    };
    const event = { id: 'repository-rules', name: facts.event, payload } as never;
    // The client Probot hands a webhook handler for this event: the installation's, or an
    // unauthenticated one where the delivery names no installation.
    const app = await probot.auth();
    const octokit = (await app.auth({ type: 'event-octokit', event })) as ProbotOctokit;
    return loadRepositoryConfig(new Context(event, octokit, probot.log), timeoutMs);
  };
  let loaded: LoadedConfig;
  try {
    // The installation's client comes first, and has no deadline of its own.
    loaded = await withTimeout(read(), timeoutMs + 500);
  } catch {
    loaded = {
      config: DEFAULT_CONFIG,
      warning: `repository config not read: GitHub did not answer within ${timeoutMs} ms; defaults used`,
    };
  }
  return { rules: loaded.config, warning: loaded.warning };
}

function describeFailure(error: unknown, timeoutMs: number): string {
  if (error instanceof TimeoutError) {
    return `repository config not read: GitHub did not answer within ${timeoutMs} ms`;
  }
  const status = (error as { status?: unknown }).status;
  if (typeof status === 'number') return `repository config not read: GitHub answered ${status}`;
  // The config plugin's own messages (invalid YAML, a directory in the file's place) are safe
  // to repeat: they name the file, never a token.
  const message = error instanceof Error ? error.message : String(error);
  return `repository config not read: ${message.replace(/^\[@probot\/octokit-plugin-config\] /, '').slice(0, 300)}`;
}
