import type { RequestHandler, Router } from 'express';
import type postgres from 'postgres';
import { createNodeMiddleware, Probot, type Context, type ProbotOctokit } from 'probot';
import type { GitHubAppCredentials } from '../../config/server-config.js';
import { WEBHOOK_PATH } from '../../http/create-http-app.js';
import type { Metrics } from '../../http/metrics.js';
import type { TodoHooks } from '../../http/todo-routes.js';
import type { Logger } from '../../logger.js';
import { checkWebhookRequest } from './check-webhook-request.js';
import { createWriteBackSender, type WriteBackTuning } from './create-write-back-sender.js';
import { deliveriesRoutes } from './deliveries-routes.js';
import { ingestDelivery } from './ingest-delivery.js';
import { loadRepositoryConfig } from './load-repository-config.js';
import { probotLogger } from './probot-logger.js';
import { queueReplyComment } from './queue-reply-comment.js';
import { queueSummaryComment } from './queue-summary-comment.js';

export interface GitHubTuning {
  /** A delivery is committed or refused within this (GitHub gives up at 10 s; Probot answers 202 at 9 s). */
  ingestTimeoutMs: number;
  /** The part of it the repository config may take. */
  configTimeoutMs: number;
  writeBack: WriteBackTuning;
}

export const DEFAULT_GITHUB_TUNING: GitHubTuning = {
  ingestTimeoutMs: 5000,
  configTimeoutMs: 2500,
  writeBack: {
    pollIntervalMs: 2000,
    leaseMs: 60_000,
    requestTimeoutMs: 20_000,
    retryBaseMs: 10_000,
    retryMaxMs: 3_600_000,
    // 10 s doubling to an hour: about 20 hours of retries before a write-back is given up.
    maxAttempts: 25,
  },
};

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
  /** Tests: shorter deadlines and faster retries. */
  tuning?: Partial<Omit<GitHubTuning, 'writeBack'>> & { writeBack?: Partial<WriteBackTuning> };
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

/**
 * Without App credentials Probot still verifies signatures, but its constructor wants a token:
 * it gets this placeholder, and a fetch that refuses every call, so that in this mode nothing
 * ever reaches GitHub even by mistake.
 */
const NO_APP_TOKEN = 'switchboard-has-no-app-credentials';
const refuseGitHubCalls = () =>
  Promise.reject(new Error('GitHub API calls are off: APP_ID and PRIVATE_KEY are not set'));

/**
 * The GitHub App: Probot verifies each delivery, ingestDelivery turns it into a recorded
 * delivery and maybe a todo, and the write-back sender reacts and comments through an outbox.
 */
export async function createGitHubProvider(
  options: GitHubProviderOptions,
): Promise<GitHubProvider> {
  const { sql, log, metrics, webhookSecret, app } = options;
  const tuning: GitHubTuning = {
    ...DEFAULT_GITHUB_TUNING,
    ...options.tuning,
    writeBack: { ...DEFAULT_GITHUB_TUNING.writeBack, ...options.tuning?.writeBack },
  };
  const routes = deliveriesRoutes(sql);
  if (!webhookSecret && !app) {
    return { webhooks: null, hooks: {}, routes, start() {}, async stop() {} };
  }

  const probot = new Probot({
    ...(app
      ? { appId: app.appId, privateKey: app.privateKey }
      : { githubToken: NO_APP_TOKEN, request: { fetch: refuseGitHubCalls } }),
    secret: webhookSecret,
    log: probotLogger(log),
    Octokit: options.Octokit,
  });
  const sender = app
    ? createWriteBackSender({
        sql,
        log,
        auth: (installationId) => probot.auth(installationId),
        tuning: tuning.writeBack,
      })
    : undefined;

  let webhooks: RequestHandler | null = null;
  if (webhookSecret) {
    const middleware = await createNodeMiddleware(
      (probotApp) => {
        // Probot's transform turns every event into a Context; onAny's typing does not say so.
        probotApp.onAny(async (event) => {
          const context = event as unknown as Context;
          const recorded = await ingestDelivery(
            {
              sql,
              log,
              metrics,
              timeoutMs: tuning.ingestTimeoutMs,
              configTimeoutMs: tuning.configTimeoutMs,
              writeBack: app !== undefined,
            },
            {
              id: context.id,
              name: context.name,
              payload: context.payload,
              readConfig: app ? (timeoutMs) => loadRepositoryConfig(context, timeoutMs) : null,
            },
          );
          if (recorded.queuedWriteBacks) sender?.kick();
        });
      },
      { probot, webhooksPath: WEBHOOK_PATH },
    );
    const secret = webhookSecret;
    webhooks = async (req, res, next) => {
      if (await checkWebhookRequest(req, res, { secret, log })) await middleware(req, res, next);
    };
  }

  return {
    webhooks,
    hooks: app ? { afterComplete: queueSummaryComment, afterReply: queueReplyComment } : {},
    routes,
    start: () => sender?.start(),
    stop: async () => sender?.stop(),
  };
}
