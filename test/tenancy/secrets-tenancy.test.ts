import { afterAll, beforeAll, expect, test } from 'vitest';
import { parseSecretKey } from '../../src/platform/secrets/load-secret-key.js';
import { createSecretBox } from '../../src/platform/secrets/secret-box.js';
import { startTestServer, testSecretKey, type TestServer } from '../support/test-server.js';
import { connectMcp } from '../support/mcp-client.js';
import {
  buildTenancyWorld,
  CALLERS,
  FOREIGN,
  foreignPairs,
  TARGETS,
  type Caller,
  type Target,
  type TenancyWorld,
} from './support/tenancy-world.js';

// A credential withheld from a todo is the todo's to show: every caller of the matrix fetches
// the secret of every target, and is shown exactly the secrets of the todos it may read.

let server: TestServer;
let world: TenancyWorld;
const secretOf = {} as Record<Target, string>;
const MISSING_SECRET = 'abcdefghijkm';

beforeAll(async () => {
  server = await startTestServer();
  world = await buildTenancyWorld(server);
  const [{ schema }] = await server.sql<[{ schema: string }]>`select current_schema() as schema`;
  const box = createSecretBox(parseSecretKey(testSecretKey(schema)));
  // One secret per target, sealed under the server's key, as its intake keeps them.
  for (const [index, target] of TARGETS.entries()) {
    const id = `secret${'abcdefghijkmnpqrstuvwxyz'[index]}abcde`;
    await server.sql`
      insert into todo_secrets (id, todo_id, rule, sealed)
      values (${id}, ${world.ids[target]}, 'generic', ${box.seal(`value of ${target}`)})`;
    secretOf[target] = id;
  }
});
afterAll(async () => {
  await server?.stop();
});

const fetchSecret = async (caller: Caller, id: string) => {
  const response = await fetch(`${server.url}/api/v1/secrets/${id}`, {
    headers: { authorization: `Bearer ${world.tokens[caller]}` },
  });
  return `${response.status} ${await response.text()}`;
};

test('a secret of a todo the caller may not read answers exactly as a missing one, and records nothing', async () => {
  const before = await world.snapshot();
  const wrong: string[] = [];
  for (const { caller, target } of foreignPairs()) {
    const id = secretOf[target];
    const [foreign, missing] = await Promise.all([
      fetchSecret(caller, id),
      fetchSecret(caller, MISSING_SECRET),
    ]);
    expect(missing).toBe(`404 {"error":"secret ${MISSING_SECRET} not found","code":"not_found"}`);
    if (foreign !== missing.replaceAll(MISSING_SECRET, id))
      wrong.push(`${caller} on ${target}: ${foreign}`);
  }
  expect(wrong).toEqual([]);
  expect(await world.snapshot()).toBe(before);
});

test('a secret of a todo the caller may read is shown, over the API and MCP, and the fetch is recorded', async () => {
  for (const caller of CALLERS) {
    const readable = TARGETS.filter((target) => !FOREIGN[caller].includes(target));
    expect(readable.length).toBeGreaterThan(0);
    for (const target of readable) {
      const answer = await fetchSecret(caller, secretOf[target]);
      expect(answer, `${caller} on ${target}`).toMatch(/^200 /);
      expect(JSON.parse(answer.slice(4)).secret.value).toBe(`value of ${target}`);
    }
  }
  const { body } = await server.api(
    server.adminToken,
    'GET',
    `/todos/${world.ids['alpha-pending']}`,
  );
  expect(
    body.history
      .filter((e: { action: string }) => e.action === 'secret_shown')
      .map((e: { actor: string }) => e.actor),
  ).toEqual(['root', 'alice', 'bob', 'abot']);

  const abot = await connectMcp(server.url, world.tokens.abot);
  try {
    const own = await abot.call('get_secret', { secret_id: secretOf['alpha-claimed'] });
    expect(own.data.secret.value).toBe('value of alpha-claimed');
    const foreign = await abot.call('get_secret', { secret_id: secretOf['beta-pending'] });
    const missing = await abot.call('get_secret', { secret_id: MISSING_SECRET });
    expect(foreign.isError).toBe(true);
    expect(foreign.text).toBe(missing.text.replaceAll(MISSING_SECRET, secretOf['beta-pending']));
  } finally {
    await abot.close();
  }
});
