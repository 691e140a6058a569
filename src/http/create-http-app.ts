import express, { type RequestHandler } from 'express';
import type postgres from 'postgres';
import type { Logger } from '../logger.js';
import { authenticate } from './authenticate.js';
import { createErrorHandler, HttpError, sendError } from './http-error.js';
import type { Metrics } from './metrics.js';
import type { TokenCache } from './token-cache.js';
import { principalRoutes } from './principal-routes.js';
import { readJsonBody } from './read-json-body.js';
import type { TodoService } from '../todos/create-todo-service.js';
import { todoRoutes } from './todo-routes.js';
import type { Router } from 'express';

export const WEBHOOK_PATH = '/api/github/webhooks';
export const SOURCE_WEBHOOK_PATH = '/api/sources/:name/webhooks';
/** GitHub caps webhook payloads at 25 MB; nothing larger is a real delivery. */
export const WEBHOOK_MAX_BYTES = 25 * 1024 * 1024;

export interface HttpAppOptions {
  sql: postgres.Sql;
  log: Logger;
  metrics: Metrics;
  /** Resolves bearer tokens (kept in memory until a revocation). */
  tokens: TokenCache;
  /** Probot's middleware, or null when WEBHOOK_SECRET is unset: then every delivery is refused. */
  webhooks: RequestHandler | null;
  /** POST /api/sources/:name/webhooks: every other provider's deliveries. */
  sourceWebhooks?: RequestHandler;
  /** The todo changes with side effects (announced wakes, write-backs). */
  todos: TodoService;
  /** More routes under /api/v1, behind authentication (e.g. deliveries, the event stream). */
  apiRoutes?: Router[];
  /** Routes of their own at the top level, each doing its own authentication (e.g. /mcp). */
  routes?: Router[];
}

export function createHttpApp({
  sql,
  log,
  metrics,
  tokens,
  webhooks,
  sourceWebhooks,
  todos,
  apiRoutes = [],
  routes = [],
}: HttpAppOptions): {
  app: express.Express;
} {
  const app = express();
  app.disable('x-powered-by');
  app.set('query parser', 'simple');
  app.use(metrics.observeRequests);

  app.get('/healthz', async (_req, res) => {
    try {
      await withTimeout(sql`select 1`, 2000);
      res.json({ status: 'ok' });
    } catch {
      sendError(res, 503, 'unavailable', 'the database is not answering');
    }
  });

  app.get('/metrics', async (_req, res) => {
    res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });

  // Webhooks read their raw body themselves (the signature covers the exact bytes), so they are
  // mounted before any body parser.
  app.post(WEBHOOK_PATH, (req, res, next) => {
    if (Number(req.get('content-length') ?? 0) > WEBHOOK_MAX_BYTES) {
      return sendError(res, 413, 'too_large', 'webhook payload is larger than GitHub ever sends');
    }
    if (!webhooks) {
      return sendError(
        res,
        503,
        'webhooks_disabled',
        'webhooks are off: WEBHOOK_SECRET is not set on this server',
      );
    }
    return webhooks(req, res, next);
  });
  if (sourceWebhooks) app.post(SOURCE_WEBHOOK_PATH, sourceWebhooks);

  const api = express.Router();
  api.use(readJsonBody());
  api.use(authenticate(tokens));
  api.use(todoRoutes(sql, todos));
  api.use(principalRoutes(sql, tokens));
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
