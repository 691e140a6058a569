import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestServer, type TestServer } from '../support/test-server.js';

// Admission control over the JSON API (issue 25), on two real servers sharing one database:
// what a load balancer would put in front of.

let a: TestServer;
let b: TestServer;
let admin: string;
/** bob: a human, not an admin. */
let human: string;
/** An agent of bob's on `api-q` and `race-q`. */
let agent: string;
/** An agent of bob's on `elsewhere` only. */
let stranger: string;

beforeAll(async () => {
  a = await startTestServer();
  b = await startTestServer({ schema: a.schema });
  admin = a.adminToken;
  human = (await a.api(admin, 'POST', '/humans', { name: 'bob' })).body.token;
  agent = (await a.api(human, 'POST', '/agents', { name: 'bot', queues: ['api-q', 'race-q'] })).body
    .token;
  stranger = (await a.api(human, 'POST', '/agents', { name: 'spy', queues: ['elsewhere'] })).body
    .token;
});
afterAll(async () => {
  await b?.stop();
  await a?.stop();
});

describe('the queues API', () => {
  test('PATCH sets limits (admins); GET shows them to whoever may work the queue; a claim says until when', async () => {
    const set = await a.api(admin, 'PATCH', '/queues/api-q', {
      max_in_flight: 1,
      max_claims: 50,
      claims_window: 'day',
    });
    expect(set).toMatchObject({
      status: 200,
      body: {
        queue: {
          name: 'api-q',
          max_in_flight: 1,
          max_claims: 50,
          claims_window: 'day',
          in_flight: 0,
          claims_in_window: 0,
          held_back: null,
        },
      },
    });
    // Set through one process, obeyed by the other.
    for (let i = 0; i < 2; i++)
      await a.api(human, 'POST', '/todos', { queue: 'api-q', title: 't' });
    const first = await b.api(agent, 'POST', '/queues/api-q/claim');
    expect(first.body.todo).toMatchObject({ state: 'claimed' });
    const held = await a.api(agent, 'POST', '/queues/api-q/claim');
    expect(held).toEqual({
      status: 200,
      body: {
        todo: null,
        held_back: {
          queue: 'api-q',
          reason: 'max_in_flight',
          next_at: first.body.todo.lease_expires_at,
          message: `at its limit of 1 in flight — next at ${first.body.todo.lease_expires_at}`,
        },
      },
    });

    const shown = await b.api(agent, 'GET', '/queues/api-q');
    expect(shown.body.queue).toMatchObject({
      in_flight: 1,
      claims_in_window: 1,
      waiting: 1,
      held_back: held.body.held_back,
    });
    expect((await a.api(agent, 'GET', '/queues')).body.queues.map((q: any) => q.name)).toEqual([
      'api-q',
      'race-q',
    ]);

    const metrics = await (
      await fetch(`${a.url}/metrics`, { headers: { authorization: `Bearer ${admin}` } })
    ).text();
    expect(metrics).toMatch(/^switchboard_queue_limit\{queue="api-q",limit="max_in_flight"\} 1$/m);
    expect(metrics).toMatch(
      /^switchboard_queue_limit\{queue="api-q",limit="max_claims_per_day"\} 50$/m,
    );
    expect(metrics).toMatch(/^switchboard_queue_in_flight\{queue="api-q"\} 1$/m);
    expect(metrics).toMatch(/^switchboard_queue_claims_in_window\{queue="api-q"\} 1$/m);
    expect(metrics).toMatch(
      /^switchboard_queue_held_back_todos\{queue="api-q",reason="max_in_flight"\} 1$/m,
    );
    expect(metrics).toMatch(
      /^switchboard_claims_held_back_total\{queue="api-q",reason="max_in_flight"\} 1$/m,
    );

    // Cleared: the queue is unlimited again, and its claims take the plain path.
    const cleared = await a.api(admin, 'PATCH', '/queues/api-q', {
      max_in_flight: null,
      max_claims: null,
    });
    expect(cleared.body.queue).toMatchObject({ max_in_flight: null, max_claims: null });
    expect((await a.api(agent, 'POST', '/queues/api-q/claim')).body.todo).toMatchObject({
      state: 'claimed',
    });
  });

  test('who may: humans other than admins and agents may not set; an agent sees only its queues', async () => {
    for (const token of [human, agent]) {
      expect(await a.api(token, 'PATCH', '/queues/race-q', { max_in_flight: 2 })).toMatchObject({
        status: 403,
        body: { code: 'forbidden', error: "only an admin may set a queue's limits" },
      });
    }
    expect(await a.api(stranger, 'GET', '/queues/race-q')).toMatchObject({
      status: 403,
      body: { code: 'forbidden' },
    });
    expect((await a.api(human, 'GET', '/queues/race-q')).status).toBe(200);
  });

  test.each([
    [{ max_in_flight: 0 }, 'max_in_flight: max_in_flight must be at least 1'],
    [{ max_in_flight: -3 }, 'max_in_flight: max_in_flight must be at least 1'],
    [{ max_in_flight: 2.5 }, 'max_in_flight: max_in_flight must be a whole number'],
    [
      { max_in_flight: '3' },
      'max_in_flight: max_in_flight must be a whole number, or null to clear it',
    ],
    [{ max_in_flight: 10_001 }, 'max_in_flight: max_in_flight must be at most 10000'],
    [{ max_claims: 10 }, 'max_claims needs its window: claims_window hour or day'],
    [{ max_claims: 10, claims_window: 'week' }, 'claims_window: claims_window must be hour or day'],
    [{ max_claims: 0, claims_window: 'hour' }, 'max_claims: max_claims must be at least 1'],
    [{ max_in_flight: 2, claims_window: 'hour' }, 'claims_window goes with a max_claims number'],
    [{ max_in_flight: 2, burst: 3 }, 'Unrecognized key: "burst"'],
    [{}, 'give max_in_flight or max_claims (a number to set it, null to clear it)'],
  ])('bad limits %j: 400 invalid, nothing changed', async (body, error) => {
    await a.api(admin, 'PATCH', '/queues/bad-q', { max_in_flight: 7 });
    expect(await a.api(admin, 'PATCH', '/queues/bad-q', body)).toEqual({
      status: 400,
      body: { code: 'invalid', error },
    });
    expect((await a.api(admin, 'GET', '/queues/bad-q')).body.queue).toMatchObject({
      max_in_flight: 7,
      max_claims: null,
    });
  });

  test('a queue name that could never be one: 400, nothing stored', async () => {
    expect(
      await a.api(admin, 'PATCH', '/queues/Not%20A%20Queue', { max_in_flight: 1 }),
    ).toMatchObject({
      status: 400,
      body: { code: 'invalid' },
    });
    expect(await a.sql`select from queue_limits where queue = 'Not A Queue'`).toHaveLength(0);
  });
});

// Sixteen claimers — eight agents on each of two processes, so that no two share a statement —
// work a queue limited to three in flight. Each notes the claims in flight (from the database)
// right after it is granted one, then completes it: the count never passes three.
test('16 concurrent claimers across two processes never hold more than 3', async () => {
  await a.api(admin, 'PATCH', '/queues/race-q', { max_in_flight: 3 });
  const ids: number[] = [];
  for (let i = 0; i < 48; i++) {
    ids.push(
      (await a.api(human, 'POST', '/todos', { queue: 'race-q', title: `race ${i}` })).body.todo.id,
    );
  }
  const claimers = await Promise.all(
    Array.from({ length: 16 }, async (_, n) => ({
      server: n % 2 ? b : a,
      token: (await a.api(human, 'POST', '/agents', { name: `racer-${n}`, queues: ['race-q'] }))
        .body.token as string,
    })),
  );
  const inFlight = async () =>
    (
      await a.sql<[{ n: number }]>`
        select count(*)::int as n from todos
        where queue = 'race-q' and state = 'claimed' and available_at > now()`
    )[0].n;
  let most = 0;
  let heldBack = 0;
  let done = 0;
  await Promise.all(
    claimers.map(async ({ server, token }) => {
      while (done < ids.length) {
        const { body } = await server.api(token, 'POST', '/queues/race-q/claim');
        if (!body.todo) {
          if (body.held_back) heldBack++;
          // Held back: the next slot frees when a holder completes (in milliseconds here).
          await new Promise((resolve) => setTimeout(resolve, 5));
          continue;
        }
        most = Math.max(most, await inFlight());
        // Until one claim has been held back, a holder keeps its claim: the limit is then
        // certainly reached, however the machine orders the claimers (a fast holder could
        // otherwise complete before a fourth claimer ever asked).
        while (heldBack === 0) await new Promise((resolve) => setTimeout(resolve, 5));
        const completed = await server.api(token, 'POST', `/todos/${body.todo.id}/complete`, {
          lease_token: body.todo.lease_token,
        });
        expect(completed.status).toBe(200);
        done++;
      }
    }),
  );
  expect(done).toBe(ids.length);
  expect(most).toBeLessThanOrEqual(3);
  // The limit was really reached (claims were held back at it), so it was really held.
  expect(heldBack).toBeGreaterThan(0);
});
