import type { RequestHandler } from 'express';
import type postgres from 'postgres';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { HeldBack, Queue } from '../../data/index.js';
import { countTodos, oldestPendingAges } from '../../data/metrics/todo-gauges.js';
import { readLimitedQueues } from '../../data/queues/read-queues.js';
import { pingDatabase } from '../../platform/db/ping-database.js';

export interface Metrics {
  registry: Registry;
  /** GitHub deliveries by event and disposition (created, quarantined, no_rule, bot_sender, duplicate, …). */
  deliveries: Counter<'event' | 'disposition'>;
  /** Every provider's deliveries (GitHub's and each source's) by provider, source and disposition. */
  providerDeliveries: Counter<'provider' | 'source' | 'disposition'>;
  /** Times every HTTP request, labelled by route pattern (never the raw path, which holds ids). */
  observeRequests: RequestHandler;
  /** Counts a claim that found its queue at a limit. */
  heldBack: (heldBack: HeldBack) => void;
}

/**
 * Prometheus metrics, in a registry of this server's own (two servers in one process — as in
 * tests — do not collide). Todo gauges are read from the database at scrape time, so every
 * process reports the same shared truth.
 */
/** Paths without a route pattern (the webhook middleware, health, metrics) keep their own label. */
const STATIC_PATHS = new Set(['/api/github/webhooks', '/healthz', '/metrics']);

export function createMetrics(sql: postgres.Sql): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'switchboard_' });

  // Each gauge reads the database in its own collect(): the registry collects them concurrently.
  // A scrape while the database is down reports switchboard_database_up 0 and no todo figures.
  const todos: Gauge<'queue' | 'state'> = new Gauge({
    name: 'switchboard_todos',
    help: 'Todos by queue and state.',
    labelNames: ['queue', 'state'] as const,
    registers: [registry],
    async collect() {
      todos.reset();
      const rows = await countTodos(sql).catch(() => []);
      for (const row of rows) todos.set({ queue: row.queue, state: row.state }, row.count);
    },
  });
  const oldest: Gauge<'queue'> = new Gauge({
    name: 'switchboard_oldest_pending_age_seconds',
    help: 'Age of the oldest todo waiting to be claimed, by queue.',
    labelNames: ['queue'] as const,
    registers: [registry],
    async collect() {
      oldest.reset();
      const rows = await oldestPendingAges(sql).catch(() => []);
      for (const row of rows) oldest.set({ queue: row.queue }, row.age);
    },
  });
  // Limited queues: one read per scrape, shared by their gauges (collected at the same moment).
  let reading: Promise<Queue[]> | null = null;
  const limitedQueues = () =>
    (reading ??= readLimitedQueues(sql)
      .catch(() => [])
      .finally(() => (reading = null)));
  const queueGauge = (
    name: string,
    help: string,
    labelNames: readonly ('queue' | 'limit' | 'reason')[],
    set: (gauge: Gauge<'queue' | 'limit' | 'reason'>, queue: Queue) => void,
  ): Gauge<'queue' | 'limit' | 'reason'> => {
    const gauge: Gauge<'queue' | 'limit' | 'reason'> = new Gauge({
      name,
      help,
      labelNames,
      registers: [registry],
      async collect() {
        gauge.reset();
        for (const queue of await limitedQueues()) set(gauge, queue);
      },
    });
    return gauge;
  };
  queueGauge(
    'switchboard_queue_limit',
    'Limits of the queues that have some: max_in_flight, and max_claims per its window.',
    ['queue', 'limit'],
    (gauge, queue) => {
      if (queue.max_in_flight !== null)
        gauge.set({ queue: queue.name, limit: 'max_in_flight' }, queue.max_in_flight);
      if (queue.max_claims !== null)
        gauge.set(
          { queue: queue.name, limit: `max_claims_per_${queue.claims_window}` },
          queue.max_claims,
        );
    },
  );
  queueGauge(
    'switchboard_queue_in_flight',
    'Todos of a limited queue claimed with a lease still running.',
    ['queue'],
    (gauge, queue) => gauge.set({ queue: queue.name }, queue.in_flight),
  );
  queueGauge(
    'switchboard_queue_claims_in_window',
    'Claims of a queue with a claims limit within its window (the last hour or day).',
    ['queue'],
    (gauge, queue) => {
      if (queue.claims_in_window !== null) gauge.set({ queue: queue.name }, queue.claims_in_window);
    },
  );
  queueGauge(
    'switchboard_queue_held_back_todos',
    'Todos that could be claimed now but wait for their queue to come under its limit, by the limit reached.',
    ['queue', 'reason'],
    (gauge, queue) => {
      if (queue.held_back)
        gauge.set({ queue: queue.name, reason: queue.held_back.reason }, queue.waiting);
    },
  );
  const heldBackClaims = new Counter({
    name: 'switchboard_claims_held_back_total',
    help: 'Claims by queue that found claimable todos held back by a limit, by queue and limit (this process).',
    labelNames: ['queue', 'reason'] as const,
    registers: [registry],
  });
  const databaseUp: Gauge = new Gauge({
    name: 'switchboard_database_up',
    help: 'Whether the database answered this scrape (1) or not (0).',
    registers: [registry],
    async collect() {
      databaseUp.set(
        await pingDatabase(sql).then(
          () => 1,
          () => 0,
        ),
      );
    },
  });
  const deliveries = new Counter({
    name: 'switchboard_github_deliveries_total',
    help: 'Verified GitHub deliveries by event and disposition.',
    labelNames: ['event', 'disposition'] as const,
    registers: [registry],
  });
  const providerDeliveries = new Counter({
    name: 'switchboard_deliveries_total',
    help: 'Verified deliveries of every provider, by provider (github, gitea, …), source and disposition.',
    labelNames: ['provider', 'source', 'disposition'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'switchboard_http_request_duration_seconds',
    help: 'HTTP request latency by method, route and status.',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });

  const observeRequests: RequestHandler = (req, res, next) => {
    const end = duration.startTimer();
    res.once('finish', () => {
      const pattern = (req.route as { path?: string } | undefined)?.path;
      const route = pattern
        ? req.baseUrl + pattern
        : STATIC_PATHS.has(req.path)
          ? req.path
          : 'unmatched';
      end({ method: req.method, route, status: String(res.statusCode) });
    });
    next();
  };

  return {
    registry,
    deliveries,
    providerDeliveries,
    observeRequests,
    heldBack: ({ queue, reason }) => heldBackClaims.inc({ queue, reason }),
  };
}
