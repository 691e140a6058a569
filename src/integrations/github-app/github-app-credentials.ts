import type postgres from 'postgres';
import type { Probot, ProbotOctokit } from 'probot';
import type {
  GitHubAppCredentials,
  GitHubOAuthCredentials,
} from '../../platform/config/server-config.js';
import type { Logger } from '../../platform/logger.js';
import type { SecretBox } from '../../platform/secrets/secret-box.js';
import { createGitHubApp } from './create-github-app.js';
import { hasStoredGitHubApp, readGitHubApp, type StoredGitHubApp } from './github-app-store.js';
import type { GitHubHost } from '../../platform/config/github-host.js';
import type { SetUpAppView } from '../../contract/github-app.js';

/** The App `switchboard github setup` stored, as the API shows it (its time not yet text). */
export interface SetUpApp extends Omit<SetUpAppView, 'created_at'> {
  created_at: Date;
}

/**
 * The GitHub App's credentials as this process uses them now, each read at the moment it is
 * needed: the environment's (APP_ID and PRIVATE_KEY, WEBHOOK_SECRET, GITHUB_CLIENT_ID and
 * GITHUB_CLIENT_SECRET), each group winning where it is set, else the App that
 * `switchboard github setup` stored — which every process on the database starts using as soon
 * as it is stored, without a restart.
 */
export interface GitHubCredentials {
  host: GitHubHost;
  /** The App's client (installation tokens, Octokit), or null. */
  app: () => Probot | null;
  /** What GitHub signs deliveries with, or undefined (every delivery is then refused). */
  webhookSecret: () => string | undefined;
  /** The App's OAuth client, for the console's "Sign in with GitHub". */
  oauth: () => GitHubOAuthCredentials | undefined;
  /** The stored App this process opened, or null. */
  stored: () => SetUpApp | null;
  /** APP_ID and PRIVATE_KEY are in the environment: a stored App would not be used. */
  appFromEnvironment: boolean;
  /** Why reconcile cannot run now, or null when it can. */
  reconcileOff: () => string | null;
  /** Resolves at the next change this process takes up, or when `signal` aborts. */
  nextChange(signal: AbortSignal): Promise<void>;
  /** Reads the stored App again (this process has just stored one: it need not wait to hear it). */
  reload: () => Promise<void>;
  close(): Promise<void>;
}

/**
 * Holds the credentials and keeps them current: every change to the stored App NOTIFYs
 * `<schema>.github_app` (migration 0036), and each process reads it again when it hears that —
 * and on every (re)LISTEN, since a NOTIFY sent while the connection was down is lost. Its client
 * is made again only when the App itself changed, so that installation tokens stay cached.
 */
export async function createGitHubCredentials(options: {
  sql: postgres.Sql;
  /** Straight to PostgreSQL (Database.direct): LISTEN does not pass a transaction pooler. */
  direct: postgres.Sql;
  schema: string;
  log: Logger;
  /** Opens the stored App's secrets; null (no server key): a stored App cannot be used. */
  box: SecretBox | null;
  /** What the environment gives; it wins over the stored App. */
  env: {
    app: GitHubAppCredentials | undefined;
    webhookSecret: string | undefined;
    oauth: GitHubOAuthCredentials | undefined;
  };
  host: GitHubHost;
  /** Tests: an Octokit class with retries and throttling off. */
  Octokit?: typeof ProbotOctokit | undefined;
}): Promise<GitHubCredentials> {
  const { sql, log, box, env, host } = options;
  const make = (app: GitHubAppCredentials) =>
    createGitHubApp({ app, baseUrl: host.api, log, Octokit: options.Octokit });
  const envApp = env.app ? make(env.app) : null;
  let stored: StoredGitHubApp | null = null;
  let storedApp: Probot | null = null;
  let warnedLocked = false;
  const waiters = new Set<() => void>();

  const load = async () => {
    let next: StoredGitHubApp | null;
    if (!box) {
      if (!warnedLocked && (await hasStoredGitHubApp(sql))) {
        warnedLocked = true;
        log.warn(
          {},
          'a GitHub App was set up, but this process has no SWITCHBOARD_SECRET_KEY to open its credentials: it is not used here',
        );
      }
      return;
    }
    try {
      next = await readGitHubApp(sql, box);
    } catch (error) {
      // A key that does not open it (GCM refuses it): this process goes on without it.
      if (!(error instanceof Error) || !/authenticate data/.test(error.message)) throw error;
      log.warn(
        {},
        "the stored GitHub App's credentials do not open with this SWITCHBOARD_SECRET_KEY: it is not used here",
      );
      next = null;
    }
    const same =
      next?.appId === stored?.appId && next?.createdAt.getTime() === stored?.createdAt.getTime();
    if (same) return;
    stored = next;
    storedApp = next ? make({ appId: next.appId, privateKey: next.privateKey }) : null;
    if (next) {
      const overridden = [
        env.app && 'APP_ID, PRIVATE_KEY',
        env.webhookSecret && 'WEBHOOK_SECRET',
        env.oauth && 'GITHUB_CLIENT_ID, GITHUB_CLIENT_SECRET',
      ].filter(Boolean);
      log.info(
        { app_id: next.appId, slug: next.slug, ...(overridden.length && { overridden }) },
        overridden.length
          ? `the GitHub App ${next.slug} is set up; the environment's ${overridden.join('; ')} win over its own`
          : `using the GitHub App ${next.slug}, set up by ${next.createdBy}`,
      );
    }
    for (const wake of waiters) wake();
    waiters.clear();
  };

  // One read at a time, in order: the last one heard is the one that holds.
  let loading: Promise<void> = Promise.resolve();
  const reload = () => {
    loading = loading.catch(() => {}).then(load);
    return loading;
  };
  const reloadHeard = () => {
    reload().catch((error: unknown) =>
      log.warn({ err: error }, 'could not read the stored GitHub App; will at the next change'),
    );
  };
  const subscription = await options.direct.listen(
    `${options.schema}.github_app`,
    reloadHeard,
    reloadHeard,
  );
  await reload();

  const app = () => envApp ?? storedApp;
  const webhookSecret = () => env.webhookSecret ?? stored?.webhookSecret ?? undefined;
  return {
    host,
    app,
    webhookSecret,
    oauth: () =>
      env.oauth ??
      (stored ? { clientId: stored.clientId, clientSecret: stored.clientSecret } : undefined),
    stored: () =>
      stored && {
        id: stored.appId,
        slug: stored.slug,
        name: stored.name,
        html_url: stored.htmlUrl,
        owner: stored.ownerLogin,
        install_url: `${stored.htmlUrl}/installations/new`,
        created_by: stored.createdBy,
        created_at: stored.createdAt,
      },
    appFromEnvironment: envApp !== null,
    reconcileOff: () =>
      !app()
        ? "reconcile is off: this server has no GitHub App credentials (APP_ID, PRIVATE_KEY) to read GitHub's delivery log with"
        : !webhookSecret()
          ? 'reconcile is off: without WEBHOOK_SECRET every delivery is refused, so none is asked for again'
          : null,
    nextChange(signal) {
      return new Promise<void>((resolve) => {
        if (signal.aborted) return resolve();
        const done = () => {
          waiters.delete(done);
          signal.removeEventListener('abort', done);
          resolve();
        };
        waiters.add(done);
        signal.addEventListener('abort', done, { once: true });
      });
    },
    reload,
    async close() {
      for (const wake of waiters) wake();
      waiters.clear();
      await subscription.unlisten().catch((error: unknown) => {
        log.debug({ err: error }, 'could not stop listening for the GitHub App');
      });
    },
  };
}
