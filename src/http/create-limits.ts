import { Gauge, type Registry } from 'prom-client';
import { DEFAULT_LIMITS, type LimitSettings } from './limit-settings.js';
import { createFailureLimiter, type FailureLimiter } from './failure-limiter.js';
import { createPrincipalSlots, type PrincipalSlots } from './principal-slots.js';
import { createRateLimiter, type RateLimiter } from './principal-rate-limit.js';
import { createWebhookBodyBudget, type WebhookBodyBudget } from './webhook-body-budget.js';

/** Failed authentications are counted per client address over this long. */
const AUTH_FAILURE_WINDOW_MS = 15 * 60_000;

/** The limits of one server process, shared by every surface (README, Reliability: limits). */
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

export function createLimits(settings: Partial<LimitSettings>, registry: Registry): Limits {
  const given = Object.entries(settings).filter(([, value]) => value !== undefined);
  const resolved: LimitSettings = { ...DEFAULT_LIMITS, ...Object.fromEntries(given) };
  const authFailures = createFailureLimiter({
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
  return {
    settings: resolved,
    authFailures,
    webhookBodies,
    rate:
      resolved.ratePerSecond === undefined ? undefined : createRateLimiter(resolved.ratePerSecond),
    mcpSessions: createPrincipalSlots(resolved.mcpSessions),
    streams: createPrincipalSlots(resolved.streams),
    close: () => authFailures.close(),
  };
}
