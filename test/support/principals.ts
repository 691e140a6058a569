import type postgres from 'postgres';
import {
  actorFor,
  createAgent,
  createHuman,
  systemActor,
  type Actor,
} from '../../src/data/index.js';

export interface Cast {
  /** An admin human. */
  ada: Actor;
  /** A human without admin rights, owner of `bot`. */
  bob: Actor;
  /** Bob's agent, working queues `reviews` and `ci`. */
  bot: Actor;
  /** Ada's agent, working queue `issues`. */
  other: Actor;
  github: Actor;
}

export async function createCast(sql: postgres.Sql): Promise<Cast> {
  const system = systemActor('test');
  const ada = await createHuman(sql, system, {
    name: 'ada',
    github_login: 'ada-gh',
    is_admin: true,
  });
  const bob = await createHuman(sql, system, { name: 'bob' });
  const adaActor = actorFor(ada, 'cli');
  const bobActor = actorFor(bob, 'cli');
  const bot = await createAgent(sql, bobActor, { name: 'bot', queues: ['reviews', 'ci'] });
  const other = await createAgent(sql, adaActor, { name: 'other', queues: ['issues'] });
  return {
    ada: adaActor,
    bob: bobActor,
    bot: actorFor(bot, 'mcp'),
    other: actorFor(other, 'mcp'),
    github: systemActor('github'),
  };
}
