import { Router } from 'express';
import type postgres from 'postgres';
import { z } from 'zod';
import {
  createAgent,
  createHuman,
  listPrincipals,
  revokeAgent,
  vendPrincipal,
  type Principal,
} from '../ledger/index.js';
import { adminOnly } from './admin-only.js';
import { actorOf } from './authenticate.js';
import type { TokenCache } from './token-cache.js';

const AgentBody = z.strictObject({
  name: z.string(),
  queues: z.array(z.string()).min(1, 'an agent needs at least one queue').max(100),
  owner: z.string().optional(),
});
const HumanBody = z.strictObject({
  name: z.string(),
  github_login: z.string().nullish(),
  is_admin: z.boolean().optional(),
});
const Name = z.object({ name: z.string() });

/** A principal as clients see it: no internal id. */
export function publicPrincipal({ id: _id, ...principal }: Principal) {
  return principal;
}

/** whoami, humans and agents. New principals come back once with their token. */
export function principalRoutes(sql: postgres.Sql, tokens: TokenCache): Router {
  const router = Router({ caseSensitive: true });

  router.get('/whoami', (_req, res) => {
    res.json({ principal: publicPrincipal(actorOf(res).principal!) });
  });

  router.get('/humans', async (_req, res) => {
    res.json({ humans: (await listPrincipals(sql, actorOf(res), 'human')).map(publicPrincipal) });
  });

  router.post('/humans', adminOnly('add humans'), async (req, res) => {
    const body = HumanBody.parse(req.body ?? {});
    const actor = actorOf(res);
    const { principal, token } = await vendPrincipal(sql, (tx) => createHuman(tx, actor, body));
    res.status(201).json({ human: publicPrincipal(principal), token });
  });

  router.get('/agents', async (_req, res) => {
    res.json({ agents: (await listPrincipals(sql, actorOf(res), 'agent')).map(publicPrincipal) });
  });

  router.post('/agents', async (req, res) => {
    const body = AgentBody.parse(req.body ?? {});
    const actor = actorOf(res);
    const { principal, token } = await vendPrincipal(sql, (tx) => createAgent(tx, actor, body));
    res.status(201).json({ agent: publicPrincipal(principal), token });
  });

  router.post('/agents/:name/revoke', async (req, res) => {
    const { name } = Name.parse(req.params);
    const agent = await revokeAgent(sql, actorOf(res), name);
    tokens.clear();
    res.json({ agent: publicPrincipal(agent) });
  });

  return router;
}
