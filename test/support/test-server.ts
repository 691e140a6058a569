import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ProbotOctokit } from 'probot';
import { inject } from 'vitest';
import { readCredentialsFile } from '../../src/platform/config/credentials-file.js';
import type {
  GitHubAppCredentials,
  ServerConfig,
} from '../../src/platform/config/server-config.js';
import type { LimitSettings } from '../../src/platform/config/limit-settings.js';
import type { DispatcherTiming } from '../../src/wakes/create-dispatcher.js';
import { silentLogger, type Logger } from '../../src/platform/logger.js';
import { gitHubHost } from '../../src/platform/config/github-host.js';
import {
  startServer,
  type RunningServer,
  type StartServerOptions,
} from '../../src/server/start-server.js';

export const WEBHOOK_SECRET = 'test-webhook-secret';

/** The server key (SWITCHBOARD_SECRET_KEY) of a test server on `schema`, base64. */
export const testSecretKey = (schema: string) =>
  createHash('sha256').update(`switchboard-test:${schema}`).digest('base64');

/** Octokit as Probot builds it, minus retries and throttling, which only slow failing tests down. */
export const TestOctokit = ProbotOctokit.defaults((options: Record<string, unknown>) => ({
  ...options,
  retry: { enabled: false },
  throttle: { enabled: false },
}));

export interface TestServer extends RunningServer {
  /** The admin's token, read from the credentials file the first start wrote. */
  adminToken: string;
  credentialsFile: string;
  /** Calls the JSON API: `api(token, 'POST', '/todos', body)` → status and parsed JSON. */
  api<T = any>(
    token: string,
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; body: T }>;
  stop(): Promise<void>;
}

/**
 * A real server on an ephemeral port, on the run's PostgreSQL in a schema of its own, with a
 * fresh credentials file. Pass `schema` to start a second process on the same database.
 */
export async function startTestServer(
  options: {
    schema?: string;
    /** A port of the test's choosing (default: an ephemeral one). */
    port?: number;
    /** The address to bind (default 127.0.0.1). */
    host?: string;
    /** SWITCHBOARD_METRICS_TOKEN. */
    metricsToken?: string;
    webhookSecret?: string | null;
    github?: GitHubAppCredentials;
    /** Shorter GitHub deadlines and faster write-back retries. */
    githubTuning?: StartServerOptions['githubTuning'];
    /** The same for sources (their replay window stays a day unless given). */
    sourcesTuning?: StartServerOptions['sourcesTuning'];
    sweepIntervalMs?: number;
    log?: Logger;
    deliveryTiming?: Partial<DispatcherTiming>;
    /**
     * Outbound requests (webhooks, sources' APIs, Web Push): the addresses allowed though not
     * public (SWITCHBOARD_OUTBOUND_ALLOW; none unless given, as in production), and the
     * certificate of a fake https service to trust.
     */
    outbound?: { allow?: string[]; ca?: Buffer | string };
    /** Limits of its own (sessions, streams, the webhook body budget, …); the defaults otherwise. */
    limits?: Partial<LimitSettings>;
    /** Shorter header and request timeouts. */
    httpTimeouts?: StartServerOptions['httpTimeouts'];
    /** Slack: the Web API's base URL (a fake's), and a faster sweep for ended approvals. */
    slack?: { apiUrl: string; sweepMs?: number };
    /** GHE_HOST and GHE_PROTOCOL, as src/platform/config reads them (github.com unless given). */
    ghe?: { GHE_HOST: string; GHE_PROTOCOL: 'http' | 'https' };
    /** WEBHOOK_PROXY_URL. */
    webhookProxyUrl?: string;
    /** No server key (SWITCHBOARD_SECRET_KEY unset, with DATABASE_URL): sources and setup off. */
    noSecretKey?: true;
    /** The web console: GitHub sign-in, a public URL, the sign-in attempt limit. */
    web?: Pick<ServerConfig, 'githubOAuth' | 'publicUrl'> & {
      signInAttemptLimit?: number;
      /** Web Push: the agent that trusts a fake push service, shorter sweeps and retries. */
      push?: StartServerOptions['webPush'];
    };
  } = {},
): Promise<TestServer> {
  const dir = await mkdtemp(join(tmpdir(), 'switchboard-server-'));
  const credentialsFile = join(dir, 'credentials.json');
  const config: ServerConfig = {
    host: options.host ?? '127.0.0.1',
    port: options.port ?? 0,
    databaseUrl: inject('databaseUrl'),
    dataDir: dir,
    credentialsFile,
    logLevel: 'silent',
    webhookSecret:
      options.webhookSecret === null ? undefined : (options.webhookSecret ?? WEBHOOK_SECRET),
    github: options.github,
    githubOAuth: options.web?.githubOAuth,
    publicUrl: options.web?.publicUrl,
    githubHost: options.ghe && gitHubHost(options.ghe.GHE_HOST, options.ghe.GHE_PROTOCOL),
    webhookProxyUrl: options.webhookProxyUrl,
    outboundAllow: options.outbound?.allow ?? [],
    metricsToken: options.metricsToken,
    limits: options.limits,
    slackApiUrl: options.slack?.apiUrl,
  };
  const schema = options.schema ?? `s_${randomBytes(6).toString('hex')}`;
  // The key that seals sources' secrets: one per schema, so a second process on it shares it.
  if (!options.noSecretKey) config.secretKey = testSecretKey(schema);
  const server = await startServer({
    config,
    log: options.log ?? silentLogger,
    schema,
    Octokit: TestOctokit,
    // Tests send one fixture as many distinct deliveries, which the replay defence would take
    // for replays of the first: it is off here, and on with its production window in the
    // tests that are about it (test/providers/github/replay.test.ts).
    githubTuning: { replayWindowMs: 0, ...options.githubTuning },
    sourcesTuning: options.sourcesTuning,
    sweepIntervalMs: options.sweepIntervalMs,
    deliveryTiming: options.deliveryTiming,
    signInAttemptLimit: options.web?.signInAttemptLimit,
    webPush: options.web?.push,
    outboundCa: options.outbound?.ca,
    httpTimeouts: options.httpTimeouts,
    slackTuning: options.slack && { sweepMs: options.slack.sweepMs },
    // Tests sign in many clients from one address: the OAuth endpoints' rate limits (the MCP
    // SDK's, per address) are off here.
    oauthRateLimit: false,
    handleSignals: true,
  });
  const adminToken = options.schema
    ? ''
    : (await readCredentialsFile(credentialsFile))!.servers[server.url]!.token;
  return {
    ...server,
    adminToken,
    credentialsFile,
    async api(token, method, path, body) {
      const response = await fetch(`${server.url}/api/v1${path}`, {
        method,
        headers: {
          ...(token ? { authorization: `Bearer ${token}` } : {}),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await response.text();
      return { status: response.status, body: text ? JSON.parse(text) : undefined };
    },
    async stop() {
      await server.close();
      if (!options.schema) {
        // The first process of a schema owns it.
        const { connect } = await import('../../src/platform/db/open-database.js');
        const sql = connect(config.databaseUrl!, { schema, max: 1, log: silentLogger });
        await sql.unsafe(`drop schema if exists ${schema} cascade`);
        await sql.end();
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}
