import { expect } from 'vitest';
import { createTodo, systemActor } from '../../../src/data/index.js';
import type { TestServer } from '../../support/test-server.js';

/** The callers of the matrix: an admin, two humans without admin rights, an agent of each. */
export const CALLERS = ['admin', 'alice', 'bob', 'abot', 'bbot'] as const;
export type Caller = (typeof CALLERS)[number];
export const HUMANS = ['admin', 'alice', 'bob'] as const;

/**
 * The todos every caller is pointed at: a todo on each agent's queue in each state a verb acts
 * on, and an approval of each principal that can ask for one.
 */
export const TARGETS = [
  'alpha-pending',
  'alpha-claimed',
  'alpha-quarantined',
  'beta-pending',
  'beta-claimed',
  'beta-quarantined',
  'abot-approval',
  'bbot-approval',
  'alice-approval',
  'bob-approval',
  'admin-approval',
] as const;
export type Target = (typeof TARGETS)[number];

/**
 * What each caller may not read, written out by hand (README, Reliability): an agent sees its own
 * queues, never a quarantined todo, and the approvals it asked for; a human sees everything but
 * other humans' approvals (an agent's approval is its owner's); an admin sees all. The matrix
 * first checks that GET agrees with this table in both directions, so the table cannot drift
 * from the read scope, and then that every other verb refuses exactly these.
 */
export const FOREIGN: Record<Caller, readonly Target[]> = {
  admin: [],
  alice: ['bob-approval', 'bbot-approval', 'admin-approval'],
  bob: ['alice-approval', 'abot-approval', 'admin-approval'],
  abot: [
    'alpha-quarantined',
    'beta-pending',
    'beta-claimed',
    'beta-quarantined',
    'bbot-approval',
    'alice-approval',
    'bob-approval',
    'admin-approval',
  ],
  bbot: [
    'beta-quarantined',
    'alpha-pending',
    'alpha-claimed',
    'alpha-quarantined',
    'abot-approval',
    'alice-approval',
    'bob-approval',
    'admin-approval',
  ],
};

/** An id no todo has: its answer is the one every foreign id must give, digit for digit. */
export const MISSING_ID = 987_654_321;

/** A well-formed lease token that is nobody's, for todos nobody holds. */
export const NOBODYS_LEASE = '00000000-0000-4000-8000-000000000000';

export interface TenancyWorld {
  server: TestServer;
  tokens: Record<Caller, string>;
  ids: Record<Target, number>;
  /** The current lease token of each claimed target: the matrix hands the real one to callers. */
  leaseOf(target: Target): string;
  /** Every todo and every event of its history, as text: equal before and after means untouched. */
  snapshot(): Promise<string>;
}

/** The principals and todos of the matrix, made through the API as their owners would. */
export async function buildTenancyWorld(server: TestServer): Promise<TenancyWorld> {
  const api = async (token: string, method: string, path: string, body?: unknown) => {
    const response = await server.api(token, method, path, body);
    expect(response.status, `${method} ${path}: ${JSON.stringify(response.body)}`).toBeLessThan(
      300,
    );
    return response.body;
  };
  const admin = server.adminToken;
  const human = async (name: string) => (await api(admin, 'POST', '/humans', { name })).token;
  const tokens = { admin, alice: await human('alice'), bob: await human('bob') } as Record<
    Caller,
    string
  >;
  tokens.abot = (
    await api(tokens.alice, 'POST', '/agents', { name: 'abot', queues: ['alpha'] })
  ).token;
  tokens.bbot = (
    await api(tokens.bob, 'POST', '/agents', { name: 'bbot', queues: ['beta'] })
  ).token;

  const ids = {} as Record<Target, number>;
  const leases = new Map<Target, string>();
  for (const [agent, queue] of [
    ['abot', 'alpha'],
    ['bbot', 'beta'],
  ] as const) {
    const create = async (title: string) =>
      (await api(tokens[agent], 'POST', '/todos', { queue, title, body: 'private' })).todo.id;
    ids[`${queue}-pending`] = await create(`${queue} waits`);
    ids[`${queue}-claimed`] = await create(`${queue} is worked`);
    const { todo } = await api(tokens[agent], 'POST', `/todos/${ids[`${queue}-claimed`]}/claim`, {
      lease_seconds: 3600,
    });
    leases.set(`${queue}-claimed`, todo.lease_token);
    // Only switchboard itself quarantines (an untrusted sender's event).
    const quarantined = await createTodo(server.sql, systemActor('test'), {
      queue,
      title: `${queue} from a stranger`,
      body: 'private',
      source: 'github',
      attributed_to: agent === 'abot' ? 'alice' : 'bob',
      quarantined: true,
      quarantine_reason: 'the sender is not trusted',
    });
    ids[`${queue}-quarantined`] = quarantined.todo.id;
  }
  for (const asker of ['abot', 'bbot', 'alice', 'bob', 'admin'] as const) {
    const { todo } = await api(tokens[asker], 'POST', '/approvals', {
      question: `${asker} asks`,
      body: 'private',
      ttl_seconds: 86_400,
    });
    ids[`${asker}-approval`] = todo.id;
  }
  expect(Object.keys(ids).sort()).toEqual([...TARGETS].sort());

  return {
    server,
    tokens,
    ids,
    leaseOf: (target) => leases.get(target) ?? NOBODYS_LEASE,
    async snapshot() {
      // The dispatcher's notes of doorbells it rang (via 'delivery') are not changes to a todo.
      const rows = await server.sql<{ todos: unknown; events: unknown }[]>`
        select (select coalesce(json_agg(t order by t.id), '[]') from todos t) as todos,
               (select coalesce(json_agg(e order by e.id), '[]')
                  from todo_events e where e.via <> 'delivery') as events`;
      return JSON.stringify(rows[0]);
    },
  };
}

/** The foreign pairs of the matrix, each caller's targets it may not read. */
export function foreignPairs(): { caller: Caller; target: Target }[] {
  return CALLERS.flatMap((caller) => FOREIGN[caller].map((target) => ({ caller, target })));
}

/** A missing id's answer as it would read for `id`: the only difference allowed. */
export function asFor(missingAnswer: string, id: number): string {
  return missingAnswer.replaceAll(String(MISSING_ID), String(id));
}

/**
 * Sends one verb, through `send`, for every pair and for a missing id in each pair's place (with
 * the same lease token), all at once. Returns what is wrong: an answer that differs from the
 * missing id's, a missing id's answer that is not the refusal `refusal` expects of that caller
 * (so that a malformed request, refused alike for every id, cannot pass), a changed ledger.
 */
export async function checkVerb(
  world: TenancyWorld,
  pairs: { caller: Caller; target: Target }[],
  send: (caller: Caller, id: number, lease: string) => Promise<string>,
  refusal: (caller: Caller) => RegExp,
): Promise<string[]> {
  const before = await world.snapshot();
  const wrong = await Promise.all(
    pairs.map(async ({ caller, target }) => {
      const id = world.ids[target];
      const lease = world.leaseOf(target);
      const [foreign, missing] = await Promise.all([
        send(caller, id, lease),
        send(caller, MISSING_ID, lease),
      ]);
      if (!refusal(caller).test(missing)) return `${caller} on a missing id: ${missing}`;
      if (foreign === asFor(missing, id)) return null;
      return `${caller} on ${target}:\n  got     ${foreign}\n  missing ${missing}`;
    }),
  );
  if ((await world.snapshot()) !== before) wrong.push('the ledger changed');
  return wrong.filter((line) => line !== null);
}
