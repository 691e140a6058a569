import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Logger } from '../../src/platform/logger.js';
import { createCliHome, parseJson, runCli, type CliHome } from '../cli/support/run-cli.js';
import { openEventStream, type EventStreamClient } from '../support/event-stream.js';
import { FAKE, fakeJwt } from '../support/fake-credentials.js';
import { connectMcp } from '../support/mcp-client.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { deliver, readFixture } from './deliver.js';

// A credential pasted into a GitHub comment, from the signed delivery to every surface the todo
// reaches: the wake an agent's session hears, the console's page, the API and MCP, the history,
// the delivery's record and the server's log. Only `[secret:ID]` may reach them; the value is
// fetched on purpose, by whoever may read the todo, and each fetch is in the history.

const token = FAKE.githubClassic();
const awsKey = FAKE.awsAccessKeyId();
const jwt = fakeJwt(7);
const CREDENTIALS = [token, awsKey, jwt];
const REFERENCE = /\[secret:([a-z2-9]{12})\]/g;
const referencesIn = (text: string) => [...text.matchAll(REFERENCE)].map((m) => m[1]!);

const logged: string[] = [];
const log: Logger = {
  debug: (fields, message) => logged.push(JSON.stringify({ fields, message })),
  info: (fields, message) => logged.push(JSON.stringify({ fields, message })),
  warn: (fields, message) => logged.push(JSON.stringify({ fields, message })),
  error: (fields, message) => logged.push(JSON.stringify({ fields, message })),
};

/** The command fixture, its comment carrying the credentials (and its first line one of them). */
async function leakyComment(): Promise<string> {
  const payload = JSON.parse(await readFixture('issue_comment.created.command'));
  payload.comment.body = `/switchboard rotate ${token} now\n\nThe key ${awsKey} leaked too, and this session: ${jwt}`;
  return JSON.stringify(payload);
}

const expectNoCredential = (surface: string, text: string) => {
  for (const credential of CREDENTIALS) expect(text, surface).not.toContain(credential);
};

let server: TestServer;
let agentToken: string;
let outsiderToken: string;
let wakes: EventStreamClient;
let home: CliHome;

beforeAll(async () => {
  [server, home] = await Promise.all([startTestServer({ log }), createCliHome()]);
  const added = await server.api(server.adminToken, 'POST', '/agents', {
    name: 'fixer',
    queues: ['issues'],
  });
  agentToken = added.body.token;
  outsiderToken = (
    await server.api(server.adminToken, 'POST', '/agents', { name: 'outsider', queues: ['ci'] })
  ).body.token;
  wakes = await openEventStream(server.url, agentToken);
});
afterAll(async () => {
  wakes?.close();
  await server?.stop();
  await home?.remove();
});

describe('a credential in a GitHub comment', () => {
  let todoId: number;
  let ids: string[];

  beforeAll(async () => {
    const sent = await deliver(server.url, 'issue_comment.created.command', {
      body: await leakyComment(),
    });
    expect(sent.status).toBe(200);
    todoId = JSON.parse(sent.body).delivery.todo_id;
    expect(todoId).toBeGreaterThan(0);
  });

  test('makes a todo whose text has references in its place', async () => {
    const { body } = await server.api(agentToken, 'GET', `/todos/${todoId}`);
    const { todo, history } = body;
    expectNoCredential('the todo', JSON.stringify(body));
    expect(todo.title).toMatch(
      /^comment by @Codertocat on #1 in Codertocat\/Hello-World: \/switchboard rotate \[secret:[a-z2-9]{12}\] now$/,
    );
    ids = referencesIn(todo.body);
    expect(ids).toHaveLength(3);
    expect(referencesIn(todo.title)).toEqual([ids[0]]);
    expect(history[0]).toMatchObject({ action: 'created', data: { withheld: 4 } });
  });

  test('the agent’s wake carries the reference, never the credential', async () => {
    const wake = await wakes.waitFor((e) => e.event === 'wake' && e.data.todo_id === todoId);
    expectNoCredential('the wake', JSON.stringify(wake));
    expect(wake.data.content).toContain(`[secret:${ids[0]}]`);
  });

  test('the console’s pages show the reference, never the credential', async () => {
    const link = await server.api(server.adminToken, 'POST', '/web/sign-in-links');
    const redeemed = await fetch(link.body.url, { redirect: 'manual' });
    const cookie = redeemed.headers.get('set-cookie')!.split(';')[0]!;
    for (const path of [`/todos/${todoId}`, '/todos']) {
      const page = await fetch(`${server.url}${path}`, { headers: { cookie } });
      expect(page.status).toBe(200);
      const html = await page.text();
      expectNoCredential(path, html);
      expect(html, path).toContain(`[secret:${ids[0]}]`);
    }
  });

  test('the delivery’s record keeps no credential either', async () => {
    const [row] = await server.sql<{ id: number }[]>`
      select id from deliveries where todo_id = ${todoId}`;
    const { body } = await server.api(server.adminToken, 'GET', `/deliveries/${row!.id}`);
    expectNoCredential('the delivery', JSON.stringify(body));
    expect(JSON.stringify(body)).toContain('[secret:withheld]');
    const explained = await server.api(server.adminToken, 'GET', `/deliveries/${row!.id}/explain`);
    expectNoCredential('the explanation', JSON.stringify(explained.body));
  });

  test('whoever may read the todo fetches a value over the API, and the fetch is recorded', async () => {
    const shown = await server.api(agentToken, 'GET', `/secrets/${ids[0]}`);
    expect(shown).toMatchObject({
      status: 200,
      body: { secret: { id: ids[0], todo_id: todoId, rule: 'github', value: token } },
    });
    const { body } = await server.api(server.adminToken, 'GET', `/todos/${todoId}`);
    expect(body.history.at(-1)).toMatchObject({
      action: 'secret_shown',
      actor: 'fixer',
      actor_kind: 'agent',
      data: { secret: ids[0], rule: 'github' },
    });
    expectNoCredential('the history', JSON.stringify(body.history));
  });

  test('to anyone else it answers exactly as a secret that does not exist', async () => {
    const foreign = await server.api(outsiderToken, 'GET', `/secrets/${ids[1]}`);
    const missing = await server.api(outsiderToken, 'GET', '/secrets/abcdefghijkm');
    expect(foreign.status).toBe(404);
    expect(JSON.stringify(foreign.body)).toBe(
      JSON.stringify(missing.body).replace('abcdefghijkm', ids[1]!),
    );
    expect((await server.api(agentToken, 'GET', '/secrets/not-an-id')).body).toEqual({
      code: 'invalid',
      error: 'id: must be the id of a [secret:ID] in a todo, e.g. k3j9x2m4q7ab',
    });
  });

  test('over MCP, with get_secret', async () => {
    const agent = await connectMcp(server.url, agentToken);
    try {
      const got = await agent.call('get_secret', { secret_id: ids[1] });
      expect(got.isError).toBeFalsy();
      expect(got.data.secret).toMatchObject({ id: ids[1], rule: 'aws', value: awsKey });
      const refused = await agent.call('get_secret', { secret_id: 'nope' });
      expect(refused.isError).toBe(true);
      expect(refused.text).toMatch(/secret_id must be the 12 characters/);
    } finally {
      await agent.close();
    }
    const outsider = await connectMcp(server.url, outsiderToken);
    try {
      const hidden = await outsider.call('get_secret', { secret_id: ids[1] });
      expect(hidden.isError).toBe(true);
      expect(hidden.text).toContain(`secret ${ids[1]} not found`);
    } finally {
      await outsider.close();
    }
  });

  test('from the CLI, with secret show: the value alone on stdout, or --json', async () => {
    const env = { ...home.env, SWITCHBOARD_URL: server.url, SWITCHBOARD_TOKEN: agentToken };
    const plain = await runCli(['secret', 'show', ids[2]!], env);
    expect(plain).toMatchObject({ code: 0, stdout: `${jwt}\n`, stderr: '' });
    const json = parseJson(await runCli(['secret', 'show', `[secret:${ids[2]}]`, '--json'], env));
    expect(json).toEqual({
      secret: {
        id: ids[2],
        todo_id: todoId,
        rule: 'jwt',
        value: jwt,
        created_at: expect.any(String),
      },
    });
    const missing = await runCli(['secret', 'show', 'abcdefghijkm'], env);
    expect(missing).toMatchObject({ code: 3, stdout: '' });
    expect(missing.stderr.trim()).toBe('secret abcdefghijkm not found');
    const malformed = await runCli(['secret', 'show', 'ghp_x'], env);
    expect(malformed.code).toBe(2);
    expect(malformed.stderr).toMatch(/is not a secret id/);
  });

  test('the server’s log never has the credential', () => {
    expect(logged.length).toBeGreaterThan(0);
    expectNoCredential('the log', logged.join('\n'));
  });
});

describe('without a server key', () => {
  let keyless: TestServer;
  beforeAll(async () => {
    keyless = await startTestServer({ noSecretKey: true });
  });
  afterAll(() => keyless?.stop());

  test('a credential is withheld all the same, kept nowhere, and nothing can be fetched', async () => {
    const sent = await deliver(keyless.url, 'issue_comment.created.command', {
      body: await leakyComment(),
    });
    expect(sent.status).toBe(200);
    const { todo_id: id } = JSON.parse(sent.body).delivery;
    const { body } = await keyless.api(keyless.adminToken, 'GET', `/todos/${id}`);
    expectNoCredential('the todo', JSON.stringify(body));
    expect(body.todo.title).toMatch(/rotate \[secret:withheld\] now$/);
    const [{ count }] = await keyless.sql<[{ count: number }]>`
      select count(*)::int as count from todo_secrets`;
    expect(count).toBe(0);
    const fetched = await keyless.api(keyless.adminToken, 'GET', '/secrets/abcdefghijkm');
    expect(fetched).toMatchObject({ status: 409, body: { code: 'conflict' } });
    expect(fetched.body.error).toMatch(/no SWITCHBOARD_SECRET_KEY/);
  });
});
