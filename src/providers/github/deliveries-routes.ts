import { Router } from 'express';
import type postgres from 'postgres';
import { z } from 'zod';
import { actorOf } from '../../http/authenticate.js';
import { assertHuman } from '../../ledger/index.js';

const Query = z.strictObject({
  limit: z.coerce.number().int().min(1).max(500).default(50),
  /** The next page: deliveries older than this row id. */
  before: z.coerce.number().int().positive().optional(),
});

/**
 * `GET /deliveries`: recent GitHub deliveries, newest first, with what each made or why it made
 * nothing. For operators, so humans only: an agent's view of the world is its queues.
 */
export function deliveriesRoutes(sql: postgres.Sql): Router {
  const router = Router();
  router.get('/deliveries', async (req, res) => {
    assertHuman(actorOf(res), 'read GitHub deliveries');
    const { limit, before } = Query.parse(req.query);
    const deliveries = await sql`
      select id, delivery_id, event, action, repository, sender, installation_id, disposition,
             todo_id, note, received_at
      from github_deliveries
      ${before ? sql`where id < ${before}` : sql``}
      order by id desc
      limit ${limit}`;
    res.json({ deliveries });
  });
  return router;
}
