import express, { type RequestHandler } from 'express';
import type postgres from 'postgres';
import type { Logger } from '../platform/logger.js';
import { pingDatabase } from '../platform/db/ping-database.js';
import { authenticate } from '../kit/http/authenticate.js';
import type { Limits } from '../kit/http/create-limits.js';
import { createErrorHandler, HttpError, sendError } from '../kit/http/http-error.js';
import { hostGuard } from '../kit/http/host-guard.js';
import type { Metrics } from '../kit/http/metrics.js';
import { metricsAccess } from '../kit/http/metrics-access.js';
import type { PublicAddress } from '../kit/http/public-address.js';
import type { TokenCache } from '../kit/http/token-cache.js';
import { limitPrincipalRate } from '../kit/http/principal-rate-limit.js';
import { principalRoutes } from '../surfaces/api/principal-routes.js';
import { queueRoutes } from '../surfaces/api/queue-routes.js';
import { readJsonBody } from '../kit/http/read-json-body.js';
import type { TodoService } from '../todos/create-todo-service.js';
import { todoRoutes } from '../surfaces/api/todo-routes.js';
import { tokenRoutes } from '../surfaces/api/token-routes.js';
import { warnOfUntrustedProxy } from '../kit/http/untrusted-proxy-warning.js';
import type { Router } from 'express';

export const WEBHOOK_PATH = '/api/github/webhooks';
export const SOURCE_WEBHOOK_PATH = '/api/sources/:name/webhooks';
/** Slack's interactions (button presses, modals) and its Events API: signed bodies too. */
const SLACK_PATHS = ['/api/slack/interactions', '/api/slack/events'] as const;

export interface HttpAppOptions {
  sql: postgres.Sql;
  log: Logger;
  metrics: Metrics;
  /** Resolves bearer tokens (kept in memory until a revocation). */
  tokens: TokenCache;
  /** Limits that hold under abuse: webhook bodies, failed authentication, rates, the proxy trusted. */
  limits: Limits;
  /** POST /api/github/webhooks: the GitHub App's deliveries, through the intake (src/intake). */
  webhooks: RequestHandler;
  /** POST /api/sources/:name/webhooks: every other provider's, through the same intake. */
  sourceWebhooks: RequestHandler;
  /** POST /api/slack/interactions and /api/slack/events: Slack's presses and events (src/integrations/slack). */
  slack?: { interactions: RequestHandler; events: RequestHandler } | undefined;
  /** The todo changes with side effects (announced wakes, write-backs). */
  todos: TodoService;
  /** More routes under /api/v1, behind authentication (e.g. deliveries, the event stream). */
  apiRoutes?: Router[];
  /** /mcp, doing its own authentication: mounted first, since agents call it most. */
  mcp?: Router;
  /** Routes of their own at the top level, each doing its own authentication (e.g. OAuth's). */
  routes?: Router[];
  /** The hosts requests may be addressed to (src/kit/http/public-address.ts). */
  address: PublicAddress;
  /** SWITCHBOARD_METRICS_TOKEN: /metrics takes it, or an admin's token. */
  metricsToken?: string | undefined;
}

export function createHttpApp({
  sql,
  log,
  metrics,
  tokens,
  limits,
  webhooks,
  sourceWebhooks,
  slack,
  todos,
  apiRoutes = [],
  mcp,
  routes = [],
  address,
  metricsToken,
}: HttpAppOptions): {
  app: express.Express;
} {
  const app = express();
  // A path is answered in its own spelling only (every Router is made case-sensitive too), so
  // that no check on a path (the host guard's on /mcp) can be walked round by another case.
  app.set('case sensitive routing', true);
  app.disable('x-powered-by');
  app.set('query parser', 'simple');
  // req.ip: the client's address as the proxies trusted report it, which limits are keyed on.
  app.set('trust proxy', limits.settings.trustProxy);
  if (limits.settings.trustProxy === false) app.use(warnOfUntrustedProxy(log));
  app.use(metrics.observeRequests);
  app.use(hostGuard(address));
  if (mcp) app.use(mcp);

  app.get('/healthz', async (_req, res) => {
    try {
      await withTimeout(pingDatabase(sql), 2000);
      res.json({ status: 'ok' });
    } catch {
      sendError(res, 503, 'unavailable', 'the database is not answering');
    }
  });

  app.get('/metrics', metricsAccess(tokens, metricsToken), async (_req, res) => {
    res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });

  // Webhooks read their raw body themselves (the signature covers the exact bytes), so they are
  // mounted before any body parser; it is read only once admitted within the budget.
  app.post([WEBHOOK_PATH, SOURCE_WEBHOOK_PATH, ...SLACK_PATHS], limits.webhookBodies.admit);
  app.post(WEBHOOK_PATH, webhooks);
  app.post(SOURCE_WEBHOOK_PATH, sourceWebhooks);
  if (slack) {
    app.post(SLACK_PATHS[0], slack.interactions);
    app.post(SLACK_PATHS[1], slack.events);
  }

  const api = express.Router({ caseSensitive: true });
  // Authenticated first: no body is read for a caller without a valid token.
  api.use(authenticate(tokens, limits.authFailures));
  api.use(
    limitPrincipalRate(limits.rate, (res, message) => sendError(res, 429, 'rate_limited', message)),
  );
  api.use(readJsonBody());
  api.use(todoRoutes(sql, todos));
  api.use(principalRoutes(sql, tokens, todos));
  api.use(tokenRoutes(sql, tokens));
  api.use(queueRoutes(sql));
  for (const routes of apiRoutes) api.use(routes);
  app.use('/api/v1', api);
  for (const router of routes) app.use(router);

  app.use((req, _res, next) =>
    next(new HttpError(404, 'not_found', `no route for ${req.method} ${req.path}`)),
  );
  app.use(createErrorHandler(log));
  return { app };
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
