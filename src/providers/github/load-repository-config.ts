import type { Context } from 'probot';
import { DEFAULT_CONFIG, RepositoryConfig } from './repository-config.js';
import { TimeoutError, withTimeout } from './with-timeout.js';

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
  const issue = parsed.error.issues[0]!;
  const where = issue.path.length ? `${issue.path.join('.')}: ` : '';
  return {
    config: DEFAULT_CONFIG,
    warning: `.github/${CONFIG_FILE} is invalid (${where}${issue.message}); defaults used`,
  };
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
