import type postgres from 'postgres';
import { Gauge, type Registry } from 'prom-client';
import { DEFAULT_LIMITS, type LimitSettings } from '../../platform/config/limit-settings.js';
import { createFailureLimiter, type FailureLimiter } from './failure-limiter.js';
import { createPrincipalSlots, type PrincipalSlots } from './principal-slots.js';
import { createRateLimiter, type RateLimiter } from './principal-rate-limit.js';
import { createWebhookBodyBudget, type WebhookBodyBudget } from './webhook-body-budget.js';

/** Failed authentications are counted per client address over this long. */
const AUTH_FAILURE_WINDOW_MS = 15 * 60_000;

/** The limits, shared by every surface (README, Reliability: limits). */
export interface Limits {
  settings: LimitSettings;
  /** Failed bearer tokens and webhook signatures, per client address (each counted apart). */
  authFailures: FailureLimiter;
  /** Webhook bodies held before their signature is checked. */
  webhookBodies: WebhookBodyBudget;
  /** Requests per second per principal on the API and MCP; undefined: off. */
  rate: RateLimiter | undefined;
  /** Live MCP sessions per principal. */
  mcpSessions: PrincipalSlots;
  /** Open event streams per principal: the API's /events, MCP notification streams, console pages. */
  streams: PrincipalSlots;
  close(): void;
}

/**
 * Every process on one database holds these limits together (README, Limits): failed
 * authentications are counted in PostgreSQL; the rate and the slots, held in memory, are each
 * process's share of the setting, divided among the `processes()` alive.
 */
export function createLimits(
  settings: Partial<LimitSettings>,
  registry: Registry,
  { sql, processes }: { sql: postgres.Sql; processes: () => number },
): Limits {
  const given = Object.entries(settings).filter(([, value]) => value !== undefined);
  const resolved: LimitSettings = { ...DEFAULT_LIMITS, ...Object.fromEntries(given) };
  const authFailures = createFailureLimiter({
    sql,
    name: 'auth',
    limit: resolved.authFailures,
    windowMs: AUTH_FAILURE_WINDOW_MS,
  });
  const webhookBodies = createWebhookBodyBudget({
    budgetBytes: resolved.unverifiedBodyBytes,
    failures: authFailures,
  });
  new Gauge({
    name: 'switchboard_unverified_webhook_bytes',
    help: 'Bytes of webhook bodies held before their signature is checked (SWITCHBOARD_UNVERIFIED_BODY_MB bounds it).',
    registers: [registry],
    collect() {
      this.set(webhookBodies.reservedBytes());
    },
  });
  new Gauge({
    name: 'switchboard_live_processes',
    help: 'Server processes alive on this database at the last heartbeat, this one included: the rate and slot limits are shared out among them.',
    registers: [registry],
    collect() {
      this.set(processes());
    },
  });
  return {
    settings: resolved,
    authFailures,
    webhookBodies,
    rate:
      resolved.ratePerSecond === undefined
        ? undefined
        : createRateLimiter(resolved.ratePerSecond, processes),
    mcpSessions: createPrincipalSlots(resolved.mcpSessions, processes),
    streams: createPrincipalSlots(resolved.streams, processes),
    close: () => authFailures.close(),
  };
}
