import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestServer, type TestServer } from '../support/test-server.js';
import {
  asFor,
  buildTenancyWorld,
  CALLERS,
  checkVerb,
  FOREIGN,
  foreignPairs,
  MISSING_ID,
  TARGETS,
  type Caller,
  type TenancyWorld,
} from './support/tenancy-world.js';

let server: TestServer;
let world: TenancyWorld;

beforeAll(async () => {
  server = await startTestServer();
  world = await buildTenancyWorld(server);
});
afterAll(async () => {
  await server?.stop();
});

/** Every verb of /api/v1 that takes a todo id, as the request it sends for `id`. */
const VERBS: Record<
  string,
  (id: number, lease: string) => { method: string; path: string; body?: unknown }
> = {
  get: (id) => ({ method: 'GET', path: `/todos/${id}` }),
  claim: (id) => ({ method: 'POST', path: `/todos/${id}/claim`, body: { lease_seconds: 60 } }),
  heartbeat: (id, lease) => ({
    method: 'POST',
    path: `/todos/${id}/heartbeat`,
    body: { lease_token: lease, lease_seconds: 60 },
  }),
  complete: (id, lease) => ({
    method: 'POST',
    path: `/todos/${id}/complete`,
    body: { lease_token: lease, summary: 'done', result: { ok: true } },
  }),
  fail: (id, lease) => ({
    method: 'POST',
    path: `/todos/${id}/fail`,
    body: { lease_token: lease, reason: 'no' },
  }),
  release: (id, lease) => ({
    method: 'POST',
    path: `/todos/${id}/release`,
    body: { lease_token: lease },
  }),
  cancel: (id) => ({ method: 'POST', path: `/todos/${id}/cancel`, body: { reason: 'mine now' } }),
  'release-quarantine': (id) => ({ method: 'POST', path: `/todos/${id}/release-quarantine` }),
  approve: (id) => ({ method: 'POST', path: `/todos/${id}/approve`, body: { note: 'yes' } }),
  deny: (id) => ({ method: 'POST', path: `/todos/${id}/deny`, body: { note: 'no' } }),
  reply: (id) => ({ method: 'POST', path: `/todos/${id}/reply`, body: { text: 'hello' } }),
  'request-approval': (id) => ({
    method: 'POST',
    path: '/approvals',
    body: { question: 'May I?', about_todo_id: id },
  }),
};

/**
 * Verbs an agent is refused whatever the id (only humans do them): 403, the same for every id.
 * (Not cancel: an agent may withdraw an approval it asked for, so what it cannot read answers as
 * a missing id, as for every other verb.)
 */
const HUMANS_ONLY = new Set(['release-quarantine', 'approve', 'deny']);
const isAgent = (caller: Caller) => caller === 'abot' || caller === 'bbot';

/** Status and body exactly as sent, the body as text. */
async function send(caller: Caller, verb: string, id: number, lease: string) {
  const { method, path, body } = VERBS[verb]!(id, lease);
  const response = await fetch(`${server.url}/api/v1${path}`, {
    method,
    headers: {
      authorization: `Bearer ${world.tokens[caller]}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return `${response.status} ${response.headers.get('content-type')} ${await response.text()}`;
}

test('regression: a human without admin rights cannot cancel another human’s approval: it answers as a missing id and stays pending', async () => {
  const bobs = (
    await server.api(world.tokens.bob, 'POST', '/approvals', {
      question: 'bob asks again',
      body: 'private',
    })
  ).body.todo;
  const foreign = await server.api(world.tokens.alice, 'POST', `/todos/${bobs.id}/cancel`, {});
  const missing = await server.api(world.tokens.alice, 'POST', `/todos/${MISSING_ID}/cancel`, {});
  expect(missing.status).toBe(404);
  expect(foreign.status).toBe(404);
  expect(JSON.stringify(foreign.body)).toBe(asFor(JSON.stringify(missing.body), bobs.id));
  expect(JSON.stringify(foreign.body)).not.toContain('private');
  const after = await server.api(world.tokens.bob, 'GET', `/todos/${bobs.id}`);
  expect(after.body.todo.state).toBe('pending');
  // The dispatcher's note of the doorbell it rang (via 'delivery') may come at any time.
  const changes = after.body.history.filter((event: { via: string }) => event.via !== 'delivery');
  expect(changes.map((event: { action: string }) => event.action)).toEqual(['approval_requested']);
});

test('regression: releasing another human’s approval from quarantine answers as a missing id, not 409 with its state', async () => {
  const bobs = (await server.api(world.tokens.bob, 'POST', '/approvals', { question: 'bob asks' }))
    .body.todo;
  const path = (id: number) => `/todos/${id}/release-quarantine`;
  const foreign = await server.api(world.tokens.alice, 'POST', path(bobs.id));
  const missing = await server.api(world.tokens.alice, 'POST', path(MISSING_ID));
  expect(missing).toEqual({
    status: 404,
    body: { error: `todo #${MISSING_ID} not found`, code: 'not_found' },
  });
  expect(foreign).toEqual({
    status: 404,
    body: { error: `todo #${bobs.id} not found`, code: 'not_found' },
  });
});

test('the read scope is the matrix’s table: GET finds exactly the todos each caller may read', async () => {
  const status = new Map<string, number>();
  await Promise.all(
    CALLERS.flatMap((caller) =>
      TARGETS.map(async (target) => {
        const { status: got } = await server.api(
          world.tokens[caller],
          'GET',
          `/todos/${world.ids[target]}`,
        );
        status.set(`${caller} ${target}`, got);
      }),
    ),
  );
  for (const caller of CALLERS) {
    expect(
      TARGETS.map((target) => `${target} ${status.get(`${caller} ${target}`)}`),
      caller,
    ).toEqual(TARGETS.map((target) => `${target} ${FOREIGN[caller].includes(target) ? 404 : 200}`));
  }
});

test.each(Object.keys(VERBS))(
  'tenancy matrix (HTTP API): %s on a todo the caller cannot read answers as a missing id and changes nothing',
  async (verb) => {
    const wrong = await checkVerb(
      world,
      foreignPairs(),
      (caller, id, lease) => send(caller, verb, id, lease),
      // An agent asking for a verb only humans have is refused so for every id alike.
      (caller) =>
        isAgent(caller) && HUMANS_ONLY.has(verb) ? /^403 .*"code":"forbidden"/ : /^404 /,
    );
    expect(wrong).toEqual([]);
  },
);
