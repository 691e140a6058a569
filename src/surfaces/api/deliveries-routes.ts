import { Router } from 'express';
import type postgres from 'postgres';
import { z } from 'zod';
import { adminOnly } from '../../kit/http/admin-only.js';
import { actorOf } from '../../kit/http/authenticate.js';
import { HttpError } from '../../kit/http/http-error.js';
import { assertHuman, notFound } from '../../data/index.js';
import {
  DeliveryLogUnreadable,
  GITHUB_LOG_WINDOW_MS,
} from '../../providers/github/reconcile-deliveries.js';
import type { DeliveryReconciler, ProviderClients } from '../../providers/provider.js';
import { explainDelivery } from '../../intake/explain-delivery.js';
import { listDeliveries, readDelivery } from '../../data/deliveries/read-deliveries.js';

const Query = z.strictObject({
  limit: z.coerce.number().int().min(1).max(500).default(50),
  /** The next page: deliveries older than this row id. */
  before: z.coerce.number().int().positive().optional(),
  /** One source's deliveries: `github`, or a source's name. */
  source: z
    .string()
    .regex(/^[a-z0-9][a-z0-9._-]{0,63}$/)
    .optional(),
});

const Id = z
  .string()
  .regex(/^[1-9][0-9]{0,15}$/, 'a delivery id is plain digits (the id `deliveries list` shows)')
  .transform(Number);

const ReconcileBody = z.strictObject({
  /** How far back to look (default, and at most: GitHub's three days). */
  since_seconds: z
    .number()
    .int()
    .min(60)
    .max(GITHUB_LOG_WINDOW_MS / 1000)
    .optional(),
});

export interface DeliveriesRouteOptions {
  reconciler: DeliveryReconciler | null;
  /** Why reconcile is off now (no App credentials yet, no webhook secret), or null. */
  reconcileOff: () => string | null;
  /** For `explain`: the providers' clients (GitHub's App reads a repository's rules file). */
  clients: ProviderClients;
  /** How long `explain` gives a repository's rules file. */
  configTimeoutMs: number;
}

/**
 * The deliveries of every provider (GitHub's and every source's, one id space), for operators —
 * so humans only: an agent's view of the world is its queues.
 *
 * - `GET /deliveries`: newest first, with what each made or why it made nothing. `repository`
 *   and `sender` are the subject and actor under the names GitHub's deliveries always had.
 * - `GET /deliveries/:id`: one, with the facts the rules read and the body's SHA-256.
 * - `GET /deliveries/:id/explain`: today's rules on those facts, beside what happened (a dry run).
 * - `POST /deliveries/reconcile`: admins; GitHub's delivery log against the record.
 */
export function deliveriesRoutes(sql: postgres.Sql, options: DeliveriesRouteOptions): Router {
  const router = Router({ caseSensitive: true });
  router.get('/deliveries', async (req, res) => {
    assertHuman(actorOf(res), 'read deliveries');
    const { limit, before, source } = Query.parse(req.query);
    res.json({ deliveries: await listDeliveries(sql, { limit, before, source }) });
  });

  router.post(
    '/deliveries/reconcile',
    adminOnly("reconcile GitHub's delivery log"),
    async (req, res) => {
      const body = ReconcileBody.parse(req.body ?? {});
      const off = options.reconcileOff();
      if (!options.reconciler || off)
        throw new HttpError(503, 'reconcile_off', off ?? 'reconcile is off on this server');
      try {
        const report = await options.reconciler.run(
          (body.since_seconds ?? GITHUB_LOG_WINDOW_MS / 1000) * 1000,
        );
        res.json({ reconcile: report });
      } catch (error) {
        if (error instanceof DeliveryLogUnreadable)
          throw new HttpError(502, 'github_unavailable', error.message);
        throw error;
      }
    },
  );

  const found = async (raw: string) => {
    const id = Id.parse(raw);
    const delivery = await readDelivery(sql, id);
    if (!delivery)
      throw notFound(`no delivery ${id} (pruned after the retention period, or never recorded)`);
    return delivery;
  };

  router.get('/deliveries/:id', async (req, res) => {
    assertHuman(actorOf(res), 'read deliveries');
    res.json({ delivery: await found(req.params.id) });
  });

  router.get('/deliveries/:id/explain', async (req, res) => {
    assertHuman(actorOf(res), 'read deliveries');
    const delivery = await found(req.params.id);
    res.json(await explainDelivery(sql, delivery, options));
  });
  return router;
}
