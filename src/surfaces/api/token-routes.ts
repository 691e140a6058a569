import { Router } from 'express';
import type postgres from 'postgres';
import { z } from 'zod';
import { assertMayListTokens, listTokens, revokeToken } from '../../data/index.js';
import { actorOf } from '../../kit/http/authenticate.js';
import type { TokenCache } from '../../kit/http/token-cache.js';

const ListQuery = z.strictObject({
  human: z.string().optional(),
  all: z
    .enum(['true', 'false', '1', '0'])
    .transform((value) => value === 'true' || value === '1')
    .optional(),
});
const Id = z.object({
  id: z
    .string()
    .regex(/^[1-9][0-9]{0,14}$/, 'must be a whole number from 1')
    .transform(Number),
});

/** Every token, however it was vended: listed (never a secret) and revoked one by one. */
export function tokenRoutes(sql: postgres.Sql, tokens: TokenCache): Router {
  const router = Router({ caseSensitive: true });

  router.get('/tokens', async (req, res) => {
    const query = ListQuery.parse(req.query);
    res.json({ tokens: await listTokens(sql, actorOf(res), query) });
  });

  router.post('/tokens/:id/revoke', async (req, res) => {
    assertMayListTokens(actorOf(res));
    const { id } = Id.parse(req.params);
    const token = await revokeToken(sql, actorOf(res), id);
    // This process's next request must not find it in memory before the NOTIFY comes back.
    tokens.clear();
    res.json({ token });
  });

  return router;
}
