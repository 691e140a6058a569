import type { RequestHandler, Router } from 'express';
import type postgres from 'postgres';
import type { ProbotOctokit } from 'probot';
import type { GitHubAppCredentials } from '../../config/server-config.js';
import type { TodoHooks } from '../../http/todo-routes.js';
import type { Metrics } from '../../http/metrics.js';
import type { Logger } from '../../logger.js';

export interface GitHubProviderOptions {
  sql: postgres.Sql;
  log: Logger;
  metrics: Metrics;
  /** Without it, every delivery is refused (`webhooks` is null). */
  webhookSecret: string | undefined;
  /** Without them, write-back and repository config are off (said once in the log). */
  app: GitHubAppCredentials | undefined;
  /** Tests: an Octokit class with retries and throttling off. */
  Octokit?: typeof ProbotOctokit;
}

export interface GitHubProvider {
  /** Probot's Node middleware for POST /api/github/webhooks, or null without a webhook secret. */
  webhooks: RequestHandler | null;
  /** Todo hooks (completion write-back). */
  hooks: TodoHooks;
  /** Authenticated routes under /api/v1 (recent deliveries). */
  routes: Router;
  /** Starts background work (the write-back outbox). */
  start(): void;
  /** Stops background work, letting an attempt in flight finish. */
  stop(): Promise<void>;
}

/** Placeholder until ingestion lands: refuses deliveries, writes nothing back. */
export async function createGitHubProvider(
  _options: GitHubProviderOptions,
): Promise<GitHubProvider> {
  const { Router } = await import('express');
  return { webhooks: null, hooks: {}, routes: Router(), start() {}, async stop() {} };
}
