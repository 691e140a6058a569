import { getPrivateKey } from '@probot/get-private-key';
import { z } from 'zod';
import { parseAllowList } from '../egress/egress-policy.js';
import { parseSecretKey } from '../secrets/load-secret-key.js';
import { DEFAULT_LIMITS, type LimitSettings } from './limit-settings.js';
import { gitHubHost, type GitHubHost } from './github-host.js';
import { defaultCredentialsFile, defaultDataDir } from './paths.js';

export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;

export interface GitHubAppCredentials {
  appId: string;
  privateKey: string;
}

/** Everything the server reads from its environment, validated once at start. */
export interface ServerConfig {
  host: string;
  port: number;
  databaseUrl: string | undefined;
  /**
   * DATABASE_DIRECT_URL: the PostgreSQL behind DATABASE_URL's transaction pooler, for LISTEN and
   * session advisory locks; set, DATABASE_URL is taken for a pooler (src/platform/db/open-database.ts).
   */
  databaseDirectUrl?: string | undefined;
  dataDir: string;
  credentialsFile: string;
  logLevel: (typeof LOG_LEVELS)[number];
  /** Without it, the webhook endpoint refuses every delivery. */
  webhookSecret: string | undefined;
  /** Without them, GitHub write-back (reactions, comments, repository config) is off. */
  github: GitHubAppCredentials | undefined;
  /** The web console's "Sign in with GitHub" (the App's OAuth client); without it, links only. */
  githubOAuth?: GitHubOAuthCredentials | undefined;
  /** GHE_HOST and GHE_PROTOCOL: a GitHub Enterprise Server instead of github.com. */
  githubHost?: GitHubHost | undefined;
  /**
   * WEBHOOK_PROXY_URL (Probot's name): a smee.io channel the server listens to and forwards to
   * its own /api/github/webhooks, for a machine GitHub cannot reach; also the App's webhook URL
   * in `switchboard github setup`.
   */
  webhookProxyUrl?: string | undefined;
  /**
   * SWITCHBOARD_PUBLIC_URL: the server's address as its clients see it (e.g. https://… behind a
   * proxy). Every URL switchboard prints or sends is built on it (unset: on the address it
   * listens on), and its host is the one name, besides loopback's, that requests may be
   * addressed to (src/kit/http/public-address.ts).
   */
  publicUrl?: string | undefined;
  /**
   * SWITCHBOARD_PUBLISHED_URL: where a container's port is published, as this machine reaches it
   * (compose.yaml: http://127.0.0.1:$SWITCHBOARD_PORT), which the server bound inside cannot see.
   * Without a public URL, the URLs it gives out are built on it; on loopback, plain HTTP reaches
   * this machine only, and is not warned of.
   */
  publishedUrl?: string | undefined;
  /**
   * SWITCHBOARD_DATABASE_WAIT_SECONDS: how long a DATABASE_URL that does not answer yet is
   * waited for at start (a PostgreSQL started beside it, as compose.yaml does); 0: not at all.
   */
  databaseWaitSeconds?: number;
  /** SWITCHBOARD_METRICS_TOKEN: a bearer token for /metrics besides an admin's (Prometheus'). */
  metricsToken?: string | undefined;
  /**
   * SWITCHBOARD_SECRET_KEY, which seals sources' secrets. Without it, the embedded database's
   * data directory gets one of its own; with DATABASE_URL, sources are off.
   */
  secretKey?: string | undefined;
  /** SWITCHBOARD_RETENTION_DAYS: deliveries, sent write-backs, finished todos' history (30). */
  retentionDays?: number;
  /** SWITCHBOARD_RECONCILE_MINUTES: how often GitHub's delivery log is reconciled (5; 0: by hand only). */
  reconcileMinutes?: number;
  /**
   * SWITCHBOARD_OUTBOUND_ALLOW: CIDRs that webhooks, sources' APIs and Web Push may reach though
   * they are not public (loopback, private, …); none by default.
   */
  outboundAllow?: string[];
  /** Limits that hold under abuse (README, Reliability: limits); unset ones take their defaults. */
  limits?: Partial<LimitSettings>;
  /** SWITCHBOARD_SLACK_API_URL: the Slack Web API's base URL (https://slack.com/api/; tests, proxies). */
  slackApiUrl?: string | undefined;
}

/** What one client or one principal may hold or do at once (README, Reliability: limits). */
/** Names proxy-addr (Express's `trust proxy`) knows for ranges of addresses. */
const PROXY_RANGES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/**
 * Retention never goes below this: reconcile looks back over GitHub's 3-day delivery log, and a
 * delivery whose record was pruned inside it would be taken for one never received, asked for
 * again, and make its todo a second time.
 */
export const MIN_RETENTION_DAYS = 4;
export const DEFAULT_RETENTION_DAYS = 30;

export interface GitHubOAuthCredentials {
  clientId: string;
  clientSecret: string;
}

const Env = z.object({
  HOST: z.string().min(1).default('127.0.0.1'),
  PORT: z.coerce.number().int().min(0).max(65_535).default(3000),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')
    .optional(),
  DATABASE_DIRECT_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')
    .optional(),
  SWITCHBOARD_DATA_DIR: z.string().min(1).optional(),
  SWITCHBOARD_EMBEDDED_POSTGRES: z.enum(['on', 'off']).default('on'),
  LOG_LEVEL: z.enum(LOG_LEVELS).default('info'),
  WEBHOOK_SECRET: z.string().min(1).optional(),
  APP_ID: z.string().regex(/^\d+$/, 'must be the numeric App ID').optional(),
  GITHUB_CLIENT_ID: z.string().min(1).optional(),
  GITHUB_CLIENT_SECRET: z.string().min(1).optional(),
  GHE_HOST: z
    .string()
    .regex(
      /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(:\d{1,5})?$/,
      'must be a host name, with a port if need be (ghe.example.com), not a URL',
    )
    .optional(),
  GHE_PROTOCOL: z.enum(['http', 'https']).default('https'),
  WEBHOOK_PROXY_URL: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).optional(),
  SWITCHBOARD_PUBLIC_URL: z
    .url({ protocol: /^https?$/, error: 'must be an http(s) URL' })
    .transform((url) => url.replace(/\/+$/, ''))
    .optional(),
  SWITCHBOARD_PUBLISHED_URL: z
    .url({ protocol: /^https?$/, error: 'must be an http(s) URL' })
    .transform((url) => url.replace(/\/+$/, ''))
    .optional(),
  SWITCHBOARD_DATABASE_WAIT_SECONDS: z.coerce.number().int().min(0).max(3600).default(0),
  SWITCHBOARD_SECRET_KEY: z.string().min(1).optional(),
  SWITCHBOARD_SLACK_API_URL: z
    .url({ protocol: /^https?$/, error: 'must be an http(s) URL' })
    .optional(),
  SWITCHBOARD_METRICS_TOKEN: z
    .string()
    .min(16, 'must be at least 16 characters (e.g. openssl rand -hex 32)')
    .max(512)
    .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII with no spaces (it travels in a header)')
    .optional(),
  SWITCHBOARD_RETENTION_DAYS: z.coerce
    .number()
    .int()
    .min(
      MIN_RETENTION_DAYS,
      `must be at least ${MIN_RETENTION_DAYS} (days), to outlast GitHub's 3-day delivery log`,
    )
    .max(36_500)
    .default(DEFAULT_RETENTION_DAYS),
  SWITCHBOARD_RECONCILE_MINUTES: z.coerce.number().int().min(0).max(1440).default(5),
  SWITCHBOARD_OUTBOUND_ALLOW: z
    .string()
    .optional()
    .transform((text, context) => {
      try {
        return parseAllowList(text);
      } catch (error) {
        context.addIssue({ code: 'custom', message: (error as Error).message });
        return z.NEVER;
      }
    }),
  SWITCHBOARD_TRUST_PROXY: z
    .string()
    .optional()
    .transform((text, context) => {
      try {
        return parseTrustProxy(text);
      } catch (error) {
        context.addIssue({ code: 'custom', message: (error as Error).message });
        return z.NEVER;
      }
    }),
  SWITCHBOARD_RATE_LIMIT: z.coerce
    .number()
    .positive('must be more than 0 (requests per second per principal); unset turns it off')
    .max(1_000_000)
    .optional(),
  SWITCHBOARD_MAX_MCP_SESSIONS: z.coerce
    .number()
    .int()
    .min(1)
    .max(1_000_000)
    .default(DEFAULT_LIMITS.mcpSessions),
  SWITCHBOARD_MAX_STREAMS: z.coerce
    .number()
    .int()
    .min(1)
    .max(1_000_000)
    .default(DEFAULT_LIMITS.streams),
  SWITCHBOARD_UNVERIFIED_BODY_MB: z.coerce
    .number()
    .int()
    .min(1)
    .max(65_536)
    .default(DEFAULT_LIMITS.unverifiedBodyBytes / (1024 * 1024)),
  SWITCHBOARD_AUTH_FAILURE_LIMIT: z.coerce
    .number()
    .int()
    .min(1)
    .max(1_000_000)
    .default(DEFAULT_LIMITS.authFailures),
});

/**
 * SWITCHBOARD_TRUST_PROXY: `false` or `0` (the default: no proxy), a hop count, or a
 * comma-separated list of proxies' addresses and CIDRs (`loopback`, `linklocal` and `uniquelocal`
 * name ranges). `true` is refused: trusting every peer lets any client name its own address.
 */
export function parseTrustProxy(text: string | undefined): false | number | string[] {
  const value = text?.trim() ?? '';
  if (value === '' || value === 'false') return false;
  if (/^\d+$/.test(value)) return Number(value) || false;
  if (value === 'true') {
    throw new Error(
      "'true' would trust every peer, so any client could name its own address in X-Forwarded-For: give the number of proxies in front (e.g. 1) or their addresses (e.g. 10.0.0.0/8)",
    );
  }
  const entries = value.split(',').map((entry) => entry.trim());
  const ranges = entries.filter((entry) => PROXY_RANGES.has(entry));
  try {
    return [...ranges, ...parseAllowList(entries.filter((e) => !PROXY_RANGES.has(e)).join(','))];
  } catch (error) {
    throw new Error(
      `${(error as Error).message}; or loopback, linklocal, uniquelocal; or a number of proxies`,
      { cause: error },
    );
  }
}

/** Reads the server's settings from the environment; `overrides` come from command-line flags. */
export function loadServerConfig(
  env: Record<string, string | undefined> = process.env,
  overrides: { port?: number | undefined; dataDir?: string | undefined } = {},
): ServerConfig {
  // Empty variables count as unset, as in most shells' `VAR= cmd`.
  const present = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ''));
  const parsed = Env.safeParse(present);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`${issue.path.join('.')}: ${issue.message}`);
  }
  const vars = parsed.data;
  // The container image sets it: a cluster inside a container's layer would be lost with it.
  if (!vars.DATABASE_URL && vars.SWITCHBOARD_EMBEDDED_POSTGRES === 'off') {
    throw new Error(
      'DATABASE_URL is not set, and SWITCHBOARD_EMBEDDED_POSTGRES=off starts no embedded PostgreSQL: set DATABASE_URL=postgres://user:password@host:5432/database',
    );
  }
  if (vars.DATABASE_DIRECT_URL && !vars.DATABASE_URL) {
    throw new Error(
      "DATABASE_DIRECT_URL is set without DATABASE_URL: it is the direct address of the PostgreSQL behind DATABASE_URL's pooler — set DATABASE_URL to the pooler, or unset both",
    );
  }
  let privateKey: string | null;
  try {
    privateKey = getPrivateKey({ env: present });
  } catch (error) {
    throw new Error(`PRIVATE_KEY/PRIVATE_KEY_PATH: ${(error as Error).message}`, { cause: error });
  }
  if (Boolean(vars.APP_ID) !== Boolean(privateKey)) {
    throw new Error(
      'APP_ID and PRIVATE_KEY (or PRIVATE_KEY_PATH) go together: set both, or neither',
    );
  }
  if (Boolean(vars.GITHUB_CLIENT_ID) !== Boolean(vars.GITHUB_CLIENT_SECRET)) {
    throw new Error('GITHUB_CLIENT_ID and GITHUB_CLIENT_SECRET go together: set both, or neither');
  }
  // Checked now, so that a bad key stops the start rather than the first source.
  if (vars.SWITCHBOARD_SECRET_KEY !== undefined) parseSecretKey(vars.SWITCHBOARD_SECRET_KEY);
  return {
    host: vars.HOST,
    port: overrides.port ?? vars.PORT,
    databaseUrl: vars.DATABASE_URL,
    databaseDirectUrl: vars.DATABASE_DIRECT_URL,
    dataDir: overrides.dataDir ?? vars.SWITCHBOARD_DATA_DIR ?? defaultDataDir(present),
    credentialsFile: defaultCredentialsFile(present),
    logLevel: vars.LOG_LEVEL,
    webhookSecret: vars.WEBHOOK_SECRET,
    github: vars.APP_ID && privateKey ? { appId: vars.APP_ID, privateKey } : undefined,
    githubOAuth:
      vars.GITHUB_CLIENT_ID && vars.GITHUB_CLIENT_SECRET
        ? { clientId: vars.GITHUB_CLIENT_ID, clientSecret: vars.GITHUB_CLIENT_SECRET }
        : undefined,
    githubHost: gitHubHost(vars.GHE_HOST, vars.GHE_PROTOCOL),
    webhookProxyUrl: vars.WEBHOOK_PROXY_URL,
    publicUrl: vars.SWITCHBOARD_PUBLIC_URL,
    publishedUrl: vars.SWITCHBOARD_PUBLISHED_URL,
    databaseWaitSeconds: vars.SWITCHBOARD_DATABASE_WAIT_SECONDS,
    metricsToken: vars.SWITCHBOARD_METRICS_TOKEN,
    secretKey: vars.SWITCHBOARD_SECRET_KEY,
    retentionDays: vars.SWITCHBOARD_RETENTION_DAYS,
    reconcileMinutes: vars.SWITCHBOARD_RECONCILE_MINUTES,
    outboundAllow: vars.SWITCHBOARD_OUTBOUND_ALLOW,
    slackApiUrl: vars.SWITCHBOARD_SLACK_API_URL,
    limits: {
      trustProxy: vars.SWITCHBOARD_TRUST_PROXY,
      ratePerSecond: vars.SWITCHBOARD_RATE_LIMIT,
      mcpSessions: vars.SWITCHBOARD_MAX_MCP_SESSIONS,
      streams: vars.SWITCHBOARD_MAX_STREAMS,
      unverifiedBodyBytes: vars.SWITCHBOARD_UNVERIFIED_BODY_MB * 1024 * 1024,
      authFailures: vars.SWITCHBOARD_AUTH_FAILURE_LIMIT,
    },
  };
}
