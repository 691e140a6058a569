import { Router } from 'express';
import type postgres from 'postgres';
import { z } from 'zod';
import { actorOf } from '../../http/authenticate.js';
import { assertHuman } from '../../ledger/index.js';

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

/**
 * `GET /deliveries`: recent deliveries of every provider (GitHub's and every source's, one id
 * space), newest first, with what each made or why it made nothing. For operators, so humans
 * only: an agent's view of the world is its queues. `repository` and `sender` are the subject
 * and actor under the names GitHub's deliveries always had.
 */
export function deliveriesRoutes(sql: postgres.Sql): Router {
  const router = Router();
  router.get('/deliveries', async (req, res) => {
    assertHuman(actorOf(res), 'read deliveries');
    const { limit, before, source } = Query.parse(req.query);
    const deliveries = await sql`
      select id, source, kind, delivery_id, event, action, subject, actor,
             subject as repository, actor as sender, installation_id, disposition, todo_id,
             note, received_at
      from deliveries
      where ${before ? sql`id < ${before}` : sql`true`}
        and ${source ? sql`source = ${source}` : sql`true`}
      order by id desc
      limit ${limit}`;
    res.json({ deliveries });
  });
  return router;
}
