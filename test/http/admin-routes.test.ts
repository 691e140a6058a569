import type { Express, RequestHandler } from 'express';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { isAdminOnly } from '../../src/kit/http/admin-only.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { signInByFetch } from '../web/support/push.js';

// Only admins may use these routes. A non-admin learns nothing of what one takes: the role is
// checked before the body or the query is, so a malformed request is 403, never a 400 naming
// fields. The routes come from the API's router itself (those whose first handler is
// adminOnly), and these at least must be among them.
const KNOWN = [
  'POST /humans',
  'POST /humans/:name/deactivate',
  'POST /humans/:name/reactivate',
  'PATCH /queues/:queue',
  'GET /sources',
  'POST /sources',
  'GET /sources/:name',
  'DELETE /sources/:name',
  'POST /sources/:name/rotate',
  'PUT /sources/:name/rules',
  'PUT /slack/app',
  'DELETE /slack/app',
  'POST /github/setup',
  'GET /github/app',
  'POST /deliveries/reconcile',
];

interface Layer {
  rawPath?: string;
  route?: { path: string; methods: Record<string, boolean>; stack: { handle: RequestHandler }[] };
  handle: { stack?: Layer[] };
}

/** Every route under /api/v1: `METHOD /path`, with its handlers in order. */
function apiRoutes(app: Express): Map<string, RequestHandler[]> {
  const routes = new Map<string, RequestHandler[]>();
  const walk = (stack: Layer[], prefix: string) => {
    for (const layer of stack) {
      if (layer.route) {
        for (const method of Object.keys(layer.route.methods))
          routes.set(
            `${method.toUpperCase()} ${prefix}${layer.route.path}`,
            layer.route.stack.map((inner) => inner.handle),
          );
      } else if (layer.handle.stack) {
        walk(layer.handle.stack, prefix + (layer.rawPath === '/' ? '' : (layer.rawPath ?? '')));
      }
    }
  };
  walk((app.router as unknown as { stack: Layer[] }).stack, '');
  return new Map(
    [...routes]
      .filter(([route]) => route.includes(' /api/v1/'))
      .map(([route, handlers]) => [route.replace(' /api/v1/', ' /'), handlers]),
  );
}

let server: TestServer;
let human: string;
let agent: string;
let adminRoutes: string[];

beforeAll(async () => {
  server = await startTestServer();
  human = (await server.api(server.adminToken, 'POST', '/humans', { name: 'nora' })).body.token;
  agent = (await server.api(human, 'POST', '/agents', { name: 'norabot', queues: ['q'] })).body
    .token;
  const routes = apiRoutes(server.app);
  expect(routes.size).toBeGreaterThan(30);
  adminRoutes = [...routes].filter(([, handlers]) => handlers.some(isAdminOnly)).map(([r]) => r);
});
afterAll(async () => {
  await server?.stop();
});

test('regression: admin routes are found in the API’s router, each with the role checked first (before its body is read or validated)', () => {
  const routes = apiRoutes(server.app);
  expect(KNOWN.filter((route) => !adminRoutes.includes(route))).toEqual([]);
  for (const route of adminRoutes) expect(isAdminOnly(routes.get(route)![0]), route).toBe(true);
});

/** A request no route takes: an unknown field, the required ones missing, a query mistyped. */
function malformed(token: string, route: string) {
  const [method, path] = route.split(' ') as [string, string];
  const url = `${server.url}/api/v1${path.replace(/:[a-z_]+/g, 'x')}?wait=soon&limit=-1`;
  const body = method === 'GET' ? undefined : JSON.stringify({ bogus: true, name: 5 });
  return fetch(url, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body && { 'content-type': 'application/json' }),
    },
    body,
  });
}

describe('regression: a non-admin’s malformed request to an admin route was a 400 naming its fields; it is 403', () => {
  test.each(KNOWN)('%s', async (route) => {
    for (const [who, token] of [
      ['a human', human],
      ['an agent', agent],
    ] as const) {
      const answer = await malformed(token, route);
      const body = (await answer.json()) as { error: string; code: string };
      expect({ who, status: answer.status, code: body.code }).toEqual({
        who,
        status: 403,
        code: 'forbidden',
      });
      expect(body.error).toMatch(/^only an admin may /);
      expect(body.error).not.toMatch(/bogus|name/);
    }
  });

  test('every admin route the router has, including any added after this list', async () => {
    for (const route of adminRoutes) {
      const answer = await malformed(human, route);
      expect(answer.status, route).toBe(403);
      await answer.body?.cancel();
    }
  });
});

test('an admin’s malformed request is told what is wrong (400), as before', async () => {
  const answer = await malformed(server.adminToken, 'POST /sources');
  expect(answer.status).toBe(400);
  expect(((await answer.json()) as { code: string }).code).toBe('invalid');
});

test('regression: the console’s queue limits form answered a non-admin’s malformed form with a 400 naming its fields; it is 403', async () => {
  const { cookie, csrf } = await signInByFetch(server, human);
  const post = (session: { cookie: string; csrf: string }) =>
    fetch(`${server.url}/queues/limits`, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        cookie: session.cookie,
        origin: server.url,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ _csrf: session.csrf, queue: 'q', max_in_flight: 'many' }),
    }).then(async (answer) => ({ status: answer.status, text: await answer.text() }));
  const refused = await post({ cookie, csrf });
  expect(refused.status).toBe(403);
  expect(refused.text).toContain('only an admin may set a queue');
  expect(refused.text).not.toContain('max_in_flight');
  // An admin is told what is wrong.
  const admin = await post(await signInByFetch(server, server.adminToken));
  expect(admin.status).toBe(400);
});
