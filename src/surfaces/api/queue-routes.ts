import { Router } from 'express';
import type postgres from 'postgres';
import { z } from 'zod';
import { CLAIMS_WINDOWS } from '../../contract/queue.js';
import {
  listQueues,
  MAX_CLAIMS_LIMIT,
  MAX_IN_FLIGHT_LIMIT,
  setQueueLimits,
  showQueue,
} from '../../data/index.js';
import { adminOnly } from '../../kit/http/admin-only.js';
import { actorOf } from '../../kit/http/authenticate.js';

const Limit = (name: string, max: number) =>
  z
    .number({ error: `${name} must be a whole number, or null to clear it` })
    .int({ error: `${name} must be a whole number` })
    .min(1, { error: `${name} must be at least 1` })
    .max(max, { error: `${name} must be at most ${max}` })
    .nullable()
    .optional();

const LimitsBody = z.strictObject({
  max_in_flight: Limit('max_in_flight', MAX_IN_FLIGHT_LIMIT),
  max_claims: Limit('max_claims', MAX_CLAIMS_LIMIT),
  claims_window: z
    .enum(CLAIMS_WINDOWS, { error: `claims_window must be ${CLAIMS_WINDOWS.join(' or ')}` })
    .optional(),
});

/** Queues' admission control: anyone who may work a queue sees its limits; admins set them. */
export function queueRoutes(sql: postgres.Sql): Router {
  const router = Router({ caseSensitive: true });

  router.get('/queues', async (_req, res) => {
    res.json({ queues: await listQueues(sql, actorOf(res)) });
  });

  router.get('/queues/:queue', async (req, res) => {
    res.json({ queue: await showQueue(sql, actorOf(res), String(req.params.queue)) });
  });

  router.patch('/queues/:queue', adminOnly("set a queue's limits"), async (req, res) => {
    const body = LimitsBody.parse(req.body ?? {});
    res.json({ queue: await setQueueLimits(sql, actorOf(res), String(req.params.queue), body) });
  });

  return router;
}
