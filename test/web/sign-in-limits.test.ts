import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { addHuman, signInLink } from './support/console.js';

// Failed sign-ins are limited per client address, as the trusted proxy reports it
// (SWITCHBOARD_TRUST_PROXY): only failures count, and a valid link always works.

let server: TestServer;
let ada: string;

beforeAll(async () => {
  // Behind a proxy on this machine: X-Forwarded-For names the client.
  server = await startTestServer({
    limits: { trustProxy: ['loopback'] },
    web: {
      signInAttemptLimit: 3,
      githubOAuth: { clientId: 'Iv1.limits', clientSecret: 'limits-secret' },
    },
  });
  ada = await addHuman(server, 'ada');
});
afterAll(() => server.stop());

const open = (url: string, client: string) =>
  fetch(url, { redirect: 'manual', headers: { 'x-forwarded-for': client } });
const badLink = () => `${server.url}/sign-in/sbl_${'A'.repeat(43)}`;

test('regression: the sign-in limit was keyed on the socket address, so behind a proxy one attacker locked everyone out, and a valid link was refused once it tripped', async () => {
  const attacker = '203.0.113.7';
  const statuses: number[] = [];
  for (let i = 0; i < 5; i++) statuses.push((await open(badLink(), attacker)).status);
  expect(statuses).toEqual([401, 401, 401, 429, 429]);
  const refused = await open(badLink(), attacker);
  expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
  expect(await refused.text()).toContain('A valid sign-in link still works.');

  // Another client behind the same proxy: its own count, and its failures are still only 401s.
  expect((await open(badLink(), '198.51.100.9')).status).toBe(401);
  // A valid link is never refused: not for another's failures, nor for the attacker's own.
  const colleague = await open(await signInLink(server, ada), '198.51.100.9');
  expect(colleague.status).toBe(303);
  expect(colleague.headers.get('location')).toBe('/');
  const own = await open(await signInLink(server, ada), attacker);
  expect(own.status).toBe(303);
  expect(own.headers.get('set-cookie')).toMatch(/^switchboard_session=/);
});

test("GitHub sign-in's refusals count alike, on the same allowance", async () => {
  const client = '192.0.2.44';
  // No attempt cookie, so the state cannot match: refused before GitHub is asked anything.
  const callback = `${server.url}/auth/github/callback?code=x&state=y`;
  const statuses: number[] = [];
  for (let i = 0; i < 3; i++) statuses.push((await open(callback, client)).status);
  expect(statuses).toEqual([400, 400, 400]);
  expect((await open(badLink(), client)).status).toBe(429);
  // Starting an attempt is never refused.
  expect((await open(`${server.url}/auth/github`, client)).status).toBe(303);
  expect((await open(await signInLink(server, ada), client)).status).toBe(303);
});
