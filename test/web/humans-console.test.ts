import { afterAll, beforeAll, expect, test } from 'vitest';
import { consoleSession, type ConsoleSession } from '../oauth/support/oauth-client.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { addHuman } from './support/console.js';

// The console's Deactivate and Reactivate buttons on the agents page: real POST forms, each with
// the session's CSRF token and the console's Origin, as the other forms.
let server: TestServer;
let admin: ConsoleSession;

beforeAll(async () => {
  server = await startTestServer();
  admin = await consoleSession(server, server.adminToken);
});
afterAll(async () => {
  await server?.stop();
});

const whoami = async (token: string) => (await server.api(token, 'GET', '/whoami')).status;

test('an admin sees every human on the agents page and deactivates one with its form', async () => {
  const ida = await addHuman(server, 'ida');
  const bot = (await server.api(ida, 'POST', '/agents', { name: 'ida-bot', queues: ['q'] })).body
    .token as string;
  const page = await (await admin.request('/agents')).text();
  expect(page).toContain('<h2 id="humans-title">Humans</h2>');
  expect(page).toMatch(/<form method="post" action="\/agents\/humans\/ida\/deactivate">/);

  const answer = await admin.request('/agents/humans/ida/deactivate', {});
  expect(answer.status).toBe(303);
  expect(answer.headers.get('location')).toBe('/agents');
  for (const token of [ida, bot]) expect(await whoami(token)).toBe(401);
  const after = await (await admin.request('/agents')).text();
  expect(after).toMatch(/<form method="post" action="\/agents\/humans\/ida\/reactivate">/);
  expect(after).not.toMatch(/action="\/agents\/humans\/ida\/deactivate"/);
});

test('Reactivate shows the new token once, and it works', async () => {
  await addHuman(server, 'jan');
  expect((await admin.request('/agents/humans/jan/deactivate', {})).status).toBe(303);
  const answer = await admin.request('/agents/humans/jan/reactivate', {});
  expect(answer.status).toBe(200);
  const token = /aria-label="Token of jan">(sbk_[A-Za-z0-9_-]{43})</.exec(await answer.text())?.[1];
  expect(token).toBeDefined();
  expect(await whoami(token!)).toBe(200);
});

test('refused, with nothing changed: a form without the CSRF token, a human who is not an admin, the last admin', async () => {
  const kai = await addHuman(server, 'kai');
  const noCsrf = await fetch(`${server.url}/agents/humans/kai/deactivate`, {
    method: 'POST',
    redirect: 'manual',
    headers: {
      cookie: admin.cookie,
      origin: server.url,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: '',
  });
  expect(noCsrf.status).toBe(403);
  expect(await whoami(kai)).toBe(200);

  const own = await consoleSession(server, kai);
  expect(await (await own.request('/agents')).text()).not.toContain('humans-title');
  const refused = await own.request('/agents/humans/ida/reactivate', {});
  expect(refused.status).toBe(403);
  expect(await refused.text()).toContain('only an admin may reactivate humans');
  expect(
    (await server.api(server.adminToken, 'GET', '/humans/ida')).body.human.revoked_at,
  ).not.toBeNull();

  const { body } = await server.api(server.adminToken, 'GET', '/whoami');
  const last = await admin.request(`/agents/humans/${body.principal.name}/deactivate`, {});
  expect(last.status).toBe(409);
  expect(await last.text()).toContain('is the last admin');
  expect(await whoami(server.adminToken)).toBe(200);
});
