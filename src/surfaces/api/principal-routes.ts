import { Router } from 'express';
import type postgres from 'postgres';
import { z } from 'zod';
import {
  assertMaySetHuman,
  createAgent,
  createHuman,
  listPrincipals,
  reactivateHuman,
  revokeAgent,
  setHumanSettings,
  showHuman,
  vendPrincipal,
  type Principal,
} from '../../data/index.js';
import { adminOnly } from '../../kit/http/admin-only.js';
import type { TodoService } from '../../todos/create-todo-service.js';
import { actorOf } from '../../kit/http/authenticate.js';
import type { TokenCache } from '../../kit/http/token-cache.js';

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
/** `human set`: each field a setting; one left out is kept, `null` clears it. */
const HumanSettingsBody = z.strictObject({
  backup: z.string().nullable().optional(),
});

/** A principal as clients see it: no internal id. */
export function publicPrincipal<T extends Principal>({ id: _id, ...principal }: T) {
  return principal;
}

/**
 * whoami, humans and agents. New principals come back once with their token, as does a human
 * reactivated. Deactivating a human ends their credentials and their agents' at once.
 */
export function principalRoutes(sql: postgres.Sql, tokens: TokenCache, todos: TodoService): Router {
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

  router.get('/humans/:name', async (req, res) => {
    const { name } = Name.parse(req.params);
    res.json({ human: publicPrincipal(await showHuman(sql, actorOf(res), name)) });
  });

  // Who may is checked before the body: a caller who may not is refused alike, whatever it sent.
  router.patch('/humans/:name', async (req, res) => {
    const { name } = Name.parse(req.params);
    assertMaySetHuman(actorOf(res), name);
    const body = HumanSettingsBody.parse(req.body ?? {});
    res.json({ human: publicPrincipal(await setHumanSettings(sql, actorOf(res), name, body)) });
  });

  router.post('/humans/:name/deactivate', adminOnly('deactivate humans'), async (req, res) => {
    const { name } = Name.parse(req.params);
    // This process forgets their tokens at once (the service's `revoked`), before the NOTIFY.
    const { human, ...ended } = await todos.deactivateHuman(actorOf(res), name);
    res.json({ human: publicPrincipal(human), ...ended });
  });

  router.post('/humans/:name/reactivate', adminOnly('reactivate humans'), async (req, res) => {
    const { name } = Name.parse(req.params);
    const { human, token } = await reactivateHuman(sql, actorOf(res), name);
    res.json({ human: publicPrincipal(human), token });
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
