import type { RequestHandler, Router } from 'express';
import type postgres from 'postgres';
import { Probot, type Context, type ProbotOctokit } from 'probot';
import type { GitHubAppCredentials } from '../../config/server-config.js';
import type { Metrics } from '../../http/metrics.js';
import type { TodoHooks } from '../../http/todo-routes.js';
import type { Logger } from '../../logger.js';
import { checkWebhookRequest } from './check-webhook-request.js';
import { createDeliveryReconciler, type DeliveryReconciler } from './create-delivery-reconciler.js';
import { createWriteBackSender, type WriteBackTuning } from './create-write-back-sender.js';
import { deliveriesRoutes } from './deliveries-routes.js';
import { repositoryConfigReader } from './explain-delivery.js';
import { ingestDelivery } from './ingest-delivery.js';
import { loadRepositoryConfig } from './load-repository-config.js';
import { probotLogger } from './probot-logger.js';
import { queueReplyComment } from './queue-reply-comment.js';
import { queueSummaryComment } from './queue-summary-comment.js';
import { DEFAULT_RECONCILE_TUNING, type ReconcileTuning } from './reconcile-deliveries.js';

export interface GitHubTuning {
  /** A delivery is committed or refused within this (GitHub gives up at 10 s; Probot answers 202 at 9 s). */
  ingestTimeoutMs: number;
  /** The part of it the repository config may take. */
  configTimeoutMs: number;
  /** A body already recorded under another delivery id within this is a replay (0: off). */
  replayWindowMs: number;
  writeBack: WriteBackTuning;
  /** Reconcile with GitHub's delivery log (reconcile-deliveries.ts). */
  reconcile: ReconcileTuning;
}

export const DEFAULT_GITHUB_TUNING: GitHubTuning = {
  ingestTimeoutMs: 5000,
  configTimeoutMs: 2500,
  // GitHub's own redelivery keeps the delivery id; only a replay changes it. A day covers any
  // capture an attacker could still hope to pass off as fresh.
  replayWindowMs: 24 * 3_600_000,
  writeBack: {
    pollIntervalMs: 2000,
    leaseMs: 60_000,
    requestTimeoutMs: 20_000,
    retryBaseMs: 10_000,
    retryMaxMs: 3_600_000,
    // 10 s doubling to an hour: about 20 hours of retries before a write-back is given up.
    maxAttempts: 25,
  },
  reconcile: DEFAULT_RECONCILE_TUNING,
};

export interface GitHubProviderOptions {
  sql: postgres.Sql;
  /** Straight to PostgreSQL (Database.direct), for reconcile's advisory lock. */
  direct: postgres.Sql;
  log: Logger;
  metrics: Metrics;
  /** Without it, every delivery is refused (`webhooks` is null). */
  webhookSecret: string | undefined;
  /** Without them, write-back and repository config are off (said once in the log). */
  app: GitHubAppCredentials | undefined;
  /** Tests: an Octokit class with retries and throttling off. */
  Octokit?: typeof ProbotOctokit;
  /** Tests: shorter deadlines and faster retries. */
  tuning?: Partial<Omit<GitHubTuning, 'writeBack' | 'reconcile'>> & {
    writeBack?: Partial<WriteBackTuning>;
    reconcile?: Partial<ReconcileTuning>;
  };
  /** Announces new todos' wakes after their delivery committed (src/delivery/wake-notifier.ts). */
  announce?: TodoHooks['announce'];
}

export interface GitHubProvider {
  /** The handler of POST /api/github/webhooks, or null without a webhook secret. */
  webhooks: RequestHandler | null;
  /** Todo hooks (completion write-back). */
  hooks: TodoHooks;
  /** Authenticated routes under /api/v1 (deliveries: list, show, explain, reconcile). */
  routes: Router;
  /** Starts background work (the write-back outbox, reconcile with GitHub's delivery log). */
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
 * The GitHub App, in the steps every provider takes (src/sources/source-provider.ts):
 * verify the raw body in constant time before parsing it (check-webhook-request.ts); read the
 * delivery id (X-GitHub-Delivery) and the facts (read-delivery-facts.ts, read-rule-fields.ts);
 * name the sender and whether it is a bot, and weigh trust (evaluate-trust.ts); apply the rules
 * (route-event.ts, with the repository's config); record it all in one transaction
 * (record-delivery.ts). Probot supplies the installation's Octokit for the config and for the
 * write-back sender, which reacts and comments through an outbox.
 */
export async function createGitHubProvider(
  options: GitHubProviderOptions,
): Promise<GitHubProvider> {
  const { sql, log, metrics, webhookSecret, app } = options;
  const tuning: GitHubTuning = {
    ...DEFAULT_GITHUB_TUNING,
    ...options.tuning,
    writeBack: { ...DEFAULT_GITHUB_TUNING.writeBack, ...options.tuning?.writeBack },
    reconcile: { ...DEFAULT_GITHUB_TUNING.reconcile, ...options.tuning?.reconcile },
  };
  const reconcileOff = !app
    ? "reconcile is off: this server has no GitHub App credentials (APP_ID, PRIVATE_KEY) to read GitHub's delivery log with"
    : 'reconcile is off: without WEBHOOK_SECRET every delivery is refused, so none is asked for again';
  if (!webhookSecret && !app) {
    const routes = deliveriesRoutes(sql, { reconciler: null, reconcileOff, readConfig: null });
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
  // Asking GitHub for a delivery again needs the App (its JWT) and a secret to verify it with.
  const reconciler: DeliveryReconciler | null =
    app && webhookSecret
      ? createDeliveryReconciler({
          sql,
          direct: options.direct,
          log,
          auth: () => probot.auth(),
          tuning: tuning.reconcile,
        })
      : null;
  const routes = deliveriesRoutes(sql, {
    reconciler,
    reconcileOff,
    readConfig: app ? repositoryConfigReader(probot, tuning.configTimeoutMs) : null,
  });

  let webhooks: RequestHandler | null = null;
  if (webhookSecret) {
    // The body's hash rides with its payload object, which Probot hands to the handler as is.
    const bodyHashes = new WeakMap<object, Buffer>();
    await probot.load((probotApp) => {
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
            replayWindowMs: tuning.replayWindowMs,
            writeBack: app !== undefined,
            announce: options.announce,
          },
          {
            id: context.id,
            name: context.name,
            payload: context.payload,
            bodySha256: bodyHashes.get(context.payload)!,
            readConfig: app ? (timeoutMs) => loadRepositoryConfig(context, timeoutMs) : null,
          },
        );
        if (recorded.queuedWriteBacks) sender?.kick();
      });
    });
    const secret = webhookSecret;
    webhooks = async (req, res) => {
      const delivery = await checkWebhookRequest(req, res, { secret, log });
      if (!delivery) return;
      bodyHashes.set(delivery.payload, delivery.bodySha256);
      try {
        // Verified above, so handed straight to the handlers: the signature is checked once.
        await probot.webhooks.receive({
          id: delivery.id,
          name: delivery.name as never,
          payload: delivery.payload as never,
        });
        res.status(200).type('text/plain').send('ok\n');
      } catch (error) {
        // As Probot's middleware answered: the first handler error's name and message, with its
        // status (DeliveryNotRecorded says 500 or 503, and nothing was stored). Probot's error
        // handler has logged it, without the payload.
        const first = (error instanceof AggregateError ? error.errors[0] : error) as Error & {
          status?: number;
        };
        res
          .status(typeof first.status === 'number' ? first.status : 500)
          .json({ error: `${first.name}: ${first.message}` });
      }
    };
  }

  return {
    webhooks,
    hooks: app ? { afterComplete: queueSummaryComment, afterReply: queueReplyComment } : {},
    routes,
    start: () => {
      sender?.start();
      if (tuning.reconcile.intervalMs > 0) reconciler?.start();
    },
    stop: async () => {
      await Promise.all([sender?.stop(), reconciler?.stop()]);
    },
  };
}
