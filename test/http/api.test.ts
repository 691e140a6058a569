import { readFile, stat } from 'node:fs/promises';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestServer, type TestServer } from '../support/test-server.js';

let server: TestServer;
let logged = '';
let admin: string;
let agent: string;
let human: string;

beforeAll(async () => {
  // Everything the server logs, at the chattiest level, to prove no token ever reaches it.
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logged += chunk.toString();
      done();
    },
  });
  server = await startTestServer({ log: pino({ level: 'trace' }, sink) });
  admin = server.adminToken;
  const bob = await server.api(admin, 'POST', '/humans', { name: 'bob' });
  human = bob.body.token;
  const bot = await server.api(human, 'POST', '/agents', { name: 'bot', queues: ['reviews'] });
  agent = bot.body.token;
});
afterAll(() => server.stop());

describe('first start', () => {
  test('writes the CLI credentials, readable by their owner only, for an admin', async () => {
    const credentials = JSON.parse(await readFile(server.credentialsFile, 'utf8'));
    expect(credentials).toEqual({
      current: server.url,
      servers: { [server.url]: { token: expect.stringMatching(/^sbk_/) } },
    });
    expect((await stat(server.credentialsFile)).mode & 0o777).toBe(0o600);
    const { body } = await server.api(credentials.servers[server.url].token, 'GET', '/whoami');
    expect(body.principal).toMatchObject({ kind: 'human', is_admin: true });
    expect(body.principal).not.toHaveProperty('id');
  });

  test('a second process on the same database creates no second admin', async () => {
    const second = await startTestServer({ schema: server.schema });
    try {
      const { body } = await server.api(admin, 'GET', '/humans');
      expect(body.humans.filter((h: { is_admin: boolean }) => h.is_admin)).toHaveLength(1);
    } finally {
      await second.stop();
    }
  });
});

describe('authentication', () => {
  test.each([
    ['no header', undefined],
    ['not bearer', 'Basic abc'],
    ['unknown token', 'Bearer sbk_' + 'x'.repeat(43)],
    ['garbage', 'Bearer ' + '\u00ff'.repeat(10)],
  ])('%s → 401 with a hint', async (_, header) => {
    const response = await fetch(`${server.url}/api/v1/todos`, {
      headers: header ? { authorization: header } : {},
    });
    expect(response.status).toBe(401);
    expect(await response.json()).toEqual({ error: expect.any(String), code: 'unauthenticated' });
  });

  test('a revoked agent is refused at once', async () => {
    const temp = await server.api(human, 'POST', '/agents', { name: 'temp', queues: ['reviews'] });
    expect(temp.status).toBe(201);
    expect((await server.api(temp.body.token, 'GET', '/whoami')).status).toBe(200);
    expect((await server.api(human, 'POST', '/agents/temp/revoke')).status).toBe(200);
    expect((await server.api(temp.body.token, 'GET', '/whoami')).status).toBe(401);
  });
});

describe('bad input gets a clear 4xx and changes nothing', () => {
  const raw = (path: string, init: RequestInit) =>
    fetch(`${server.url}/api/v1${path}`, {
      ...init,
      headers: { authorization: `Bearer ${admin}`, ...(init.headers as Record<string, string>) },
    });

  test.each([
    [
      'malformed JSON',
      { body: '{"queue": "x",', headers: { 'content-type': 'application/json' } },
      400,
      'invalid',
    ],
    [
      'wrong content type',
      { body: 'queue=x', headers: { 'content-type': 'text/plain' } },
      415,
      'unsupported_media_type',
    ],
    [
      'a body over the cap',
      {
        body: JSON.stringify({ queue: 'x', title: 'y'.repeat(3_000_000) }),
        headers: { 'content-type': 'application/json' },
      },
      413,
      'too_large',
    ],
    [
      'unknown fields',
      {
        body: JSON.stringify({ queue: 'x', title: 'y', admin: true }),
        headers: { 'content-type': 'application/json' },
      },
      400,
      'invalid',
    ],
    [
      'wrong types',
      {
        body: JSON.stringify({ queue: 42, title: ['y'] }),
        headers: { 'content-type': 'application/json' },
      },
      400,
      'invalid',
    ],
    [
      'a JSON string instead of an object',
      { body: '"hello"', headers: { 'content-type': 'application/json' } },
      400,
      'invalid',
    ],
    [
      'a bad queue name',
      {
        body: JSON.stringify({ queue: 'Not A Queue', title: 'y' }),
        headers: { 'content-type': 'application/json' },
      },
      400,
      'invalid',
    ],
    [
      'NUL in the key',
      {
        body: JSON.stringify({ queue: 'q', title: 'y', key: 'a\u0000b' }),
        headers: { 'content-type': 'application/json' },
      },
      400,
      'invalid',
    ],
  ])('%s', async (_, init, status, code) => {
    const before = (await server.api(admin, 'GET', '/todos?state=all&limit=500')).body.todos.length;
    const response = await raw('/todos', { method: 'POST', ...init });
    expect(response.status).toBe(status);
    const body = (await response.json()) as { error: string; code: string };
    expect(body).toEqual({ error: expect.any(String), code });
    expect(body.error).not.toMatch(/at .*\.(ts|js):\d+|select|insert/i);
    expect((await server.api(admin, 'GET', '/todos?state=all&limit=500')).body.todos.length).toBe(
      before,
    );
  });

  test.each([
    ['GET', '/todos/abc'],
    ['GET', '/todos/-1'],
    ['GET', '/todos/99999999999999999999'],
    ['GET', '/todos?limit=0'],
    ['GET', '/todos?state=sleeping'],
    ['POST', '/todos/1/complete'],
  ])('%s %s → 400', async (method, path) => {
    const { status, body } = await server.api(
      admin,
      method,
      path,
      method === 'POST' ? {} : undefined,
    );
    expect(status).toBe(400);
    expect(body.code).toBe('invalid');
  });

  test('an unknown route is a JSON 404', async () => {
    const { status, body } = await server.api(admin, 'GET', '/nothing-here');
    expect(status).toBe(404);
    expect(body).toEqual({ error: 'no route for GET /api/v1/nothing-here', code: 'not_found' });
  });
});

describe('JSON bodies', () => {
  test('a body that starts with a byte order mark is read without it', async () => {
    const response = await fetch(`${server.url}/api/v1/todos`, {
      method: 'POST',
      headers: { authorization: `Bearer ${human}`, 'content-type': 'application/json' },
      body: Buffer.concat([
        Buffer.from([0xef, 0xbb, 0xbf]),
        Buffer.from(JSON.stringify({ queue: 'byte-order', title: 'marked' })),
      ]),
    });
    expect(response.status).toBe(201);
    expect(((await response.json()) as { todo: { title: string } }).todo.title).toBe('marked');
  });
});

describe('todos over HTTP', () => {
  test('the whole life of a todo, with its history', async () => {
    const created = await server.api(human, 'POST', '/todos', {
      queue: 'reviews',
      title: 'review #1',
      key: 'k1',
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      created: true,
      todo: { state: 'pending', attributed_to: 'bob', source: 'api' },
    });
    const again = await server.api(human, 'POST', '/todos', {
      queue: 'reviews',
      title: 'review #1',
      key: 'k1',
    });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ created: false, todo: { id: created.body.todo.id } });

    const id = created.body.todo.id as number;
    const claimed = await server.api(agent, 'POST', `/todos/${id}/claim`, { lease_seconds: 60 });
    expect(claimed.body.todo).toMatchObject({
      state: 'claimed',
      claimed_by: 'bot',
      lease_token: expect.any(String),
    });
    const token = claimed.body.todo.lease_token as string;
    expect(
      (await server.api(agent, 'POST', `/todos/${id}/heartbeat`, { lease_token: token })).status,
    ).toBe(200);
    const stale = await server.api(agent, 'POST', `/todos/${id}/complete`, {
      lease_token: '00000000-0000-4000-8000-000000000000',
    });
    expect(stale).toMatchObject({ status: 409, body: { code: 'lease_lost' } });
    const done = await server.api(agent, 'POST', `/todos/${id}/complete`, {
      lease_token: token,
      summary: 'looks good',
      result: { approved: true, notes: ['a', 'b'] },
    });
    expect(done.body.todo).toMatchObject({
      state: 'done',
      summary: 'looks good',
      result: { approved: true, notes: ['a', 'b'] },
    });

    const shown = await server.api(agent, 'GET', `/todos/${id}`);
    // (Delivery attempts, via `delivery`, are in the history too; the event stream tests see to them.)
    expect(
      shown.body.history
        .filter((e: { via: string }) => e.via !== 'delivery')
        .map((e: { action: string; via: string }) => [e.action, e.via]),
    ).toEqual([
      ['created', 'api'],
      ['claimed', 'api'],
      ['heartbeat', 'api'],
      ['completed', 'api'],
    ]);
  });

  test('claim-next, fail, release and cancel', async () => {
    const queue = 'reviews';
    const { body } = await server.api(human, 'POST', '/todos', {
      queue,
      title: 'flaky',
      max_attempts: 2,
    });
    const first = await server.api(agent, 'POST', `/queues/${queue}/claim`, {});
    expect(first.body.todo.id).toBe(body.todo.id);
    const failed = await server.api(agent, 'POST', `/todos/${body.todo.id}/fail`, {
      lease_token: first.body.todo.lease_token,
      reason: 'network down',
    });
    expect(failed.body.todo).toMatchObject({
      state: 'failed',
      summary: 'network down',
      retry_at: expect.any(String),
    });
    expect((await server.api(agent, 'POST', `/queues/${queue}/claim`)).body).toEqual({
      todo: null,
    });
    expect((await server.api(agent, 'POST', `/todos/${body.todo.id}/cancel`)).status).toBe(403);
    expect(
      (await server.api(human, 'POST', `/todos/${body.todo.id}/cancel`, { reason: 'moot' })).body
        .todo.state,
    ).toBe('canceled');

    const other = await server.api(human, 'POST', '/todos', { queue, title: 'hand back' });
    const held = await server.api(agent, 'POST', `/todos/${other.body.todo.id}/claim`);
    const released = await server.api(agent, 'POST', `/todos/${other.body.todo.id}/release`, {
      lease_token: held.body.todo.lease_token,
    });
    expect(released.body.todo).toMatchObject({ state: 'pending', claimed_by: null });
  });

  test('an agent sees only its queues: another queue reads exactly like a missing todo', async () => {
    const elsewhere = await server.api(human, 'POST', '/todos', {
      queue: 'issues',
      title: 'not for bot',
    });
    const hidden = await server.api(agent, 'GET', `/todos/${elsewhere.body.todo.id}`);
    const missing = await server.api(agent, 'GET', '/todos/987654321');
    expect(hidden.status).toBe(404);
    expect(hidden.body.error.replace(/\d+/, 'N')).toBe(missing.body.error.replace(/\d+/, 'N'));
    expect(
      (await server.api(agent, 'GET', '/todos?state=all&limit=500')).body.todos.map(
        (t: { queue: string }) => t.queue,
      ),
    ).not.toContain('issues');
    expect((await server.api(agent, 'POST', '/queues/issues/claim')).status).toBe(403);
  });

  test('approvals: only a human decides, the first verdict wins', async () => {
    const asked = await server.api(agent, 'POST', '/approvals', { question: 'may I push?' });
    expect(asked.status).toBe(201);
    const id = asked.body.todo.id as number;
    expect(asked.body.todo).toMatchObject({
      kind: 'approval',
      assignee: 'bob',
      requested_by: 'bot',
    });
    expect((await server.api(agent, 'POST', `/todos/${id}/approve`)).status).toBe(403);
    const approved = await server.api(human, 'POST', `/todos/${id}/approve`, { note: 'go' });
    expect(approved.body.todo).toMatchObject({
      state: 'done',
      verdict: 'allow',
      decided_by: 'bob',
      summary: 'go',
    });
    const late = await server.api(admin, 'POST', `/todos/${id}/deny`);
    expect(late).toMatchObject({ status: 409, body: { code: 'conflict' } });
    expect((await server.api(agent, 'GET', `/todos/${id}`)).body.todo.verdict).toBe('allow');
  });

  test('agents and humans: who may add whom', async () => {
    const created = await server.api(human, 'POST', '/agents', {
      name: 'helper',
      queues: ['ci', 'ci'],
    });
    expect(created.status).toBe(201);
    expect(created.body.agent).toMatchObject({ name: 'helper', owner: 'bob', queues: ['ci'] });
    expect(created.body.token).toMatch(/^sbk_/);
    expect((await server.api(agent, 'POST', '/agents', { name: 'x', queues: ['ci'] })).status).toBe(
      403,
    );
    expect((await server.api(human, 'POST', '/humans', { name: 'eve' })).status).toBe(403);
    expect(
      (await server.api(human, 'POST', '/agents', { name: 'helper', queues: ['ci'] })).status,
    ).toBe(409);
    const list = await server.api(human, 'GET', '/agents');
    expect(list.body.agents.map((a: { name: string }) => a.name)).toEqual(
      expect.arrayContaining(['bot', 'helper']),
    );
    expect(JSON.stringify(list.body)).not.toMatch(/sbk_/);
  });
});

describe('the event stream', () => {
  test('an agent is rung for todos of its queues, after a digest and `ready`, and for nothing else', async () => {
    const waiting = await server.api(human, 'POST', '/todos', {
      queue: 'reviews',
      title: 'already waiting',
    });
    const controller = new AbortController();
    const response = await fetch(`${server.url}/api/v1/events`, {
      headers: { authorization: `Bearer ${agent}` },
      signal: controller.signal,
    });
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = '';
    const readUntil = async (pattern: RegExp) => {
      while (!pattern.test(text)) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`stream ended before ${pattern}`);
        text += value;
      }
    };
    await readUntil(/event: ready/);
    const digest = JSON.parse(/event: digest\ndata: (.*)\n\n/.exec(text)![1]!);
    expect(digest.todos.map((t: { todo_id: number }) => t.todo_id)).toContain(waiting.body.todo.id);
    expect(text.indexOf('event: digest')).toBeLessThan(text.indexOf('event: ready'));

    await server.api(human, 'POST', '/todos', { queue: 'issues', title: 'not for bot' });
    const mine = await server.api(human, 'POST', '/todos', { queue: 'reviews', title: 'for bot' });
    const mineIs = new RegExp(`"todo_id":${mine.body.todo.id}[,}]`);
    await readUntil(mineIs);
    const wakes = [...text.matchAll(/event: wake\ndata: (.*)\n\n/g)].map((m) => JSON.parse(m[1]!));
    expect(wakes).toContainEqual({
      type: 'wake',
      event: 'claimable',
      todo_id: mine.body.todo.id,
      queue: 'reviews',
      kind: 'manual',
      title: 'for bot',
      url: null,
      content: `switchboard: todo #${mine.body.todo.id} on reviews — for bot`,
    });
    // Only todos it may claim; the one already waiting may be rung as well as digested if its
    // first ring raced the attach — a doorbell rung twice, never work done twice.
    for (const wake of wakes) expect(wake.queue).toBe('reviews');
    controller.abort();
  });
});

describe('operations', () => {
  test('healthz answers 200 while the database answers', async () => {
    const response = await fetch(`${server.url}/healthz`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'ok' });
  });

  test('metrics: todos by queue and state, oldest pending age, request latencies', async () => {
    await server.api(human, 'POST', '/todos', { queue: 'metrics-q', title: 'counted' });
    const text = await (
      await fetch(`${server.url}/metrics`, {
        headers: { authorization: `Bearer ${server.adminToken}` },
      })
    ).text();
    expect(text).toMatch(/^switchboard_todos\{queue="metrics-q",state="pending"\} 1$/m);
    expect(text).toMatch(/^switchboard_oldest_pending_age_seconds\{queue="metrics-q"\} [\d.e-]+$/m);
    expect(text).toMatch(
      /^switchboard_http_request_duration_seconds_count\{method="POST",route="\/api\/v1\/todos",status="201"\} \d+$/m,
    );
    expect(text).toMatch(/^switchboard_database_up 1$/m);
  });

  test('no token ever reaches the log', () => {
    expect(logged.length).toBeGreaterThan(0);
    for (const token of [admin, human, agent]) {
      expect(logged).not.toContain(token);
      expect(logged).not.toContain(token.slice(4));
    }
  });
});

describe('approvals are their human’s', () => {
  test('regression: any human could read, list and try to decide another human’s approval through the API', async () => {
    const carol = (await server.api(admin, 'POST', '/humans', { name: 'carol' })).body
      .token as string;
    // bob's agent asks bob.
    const asked = await server.api(agent, 'POST', '/approvals', { question: 'may I tag v2?' });
    expect(asked.status).toBe(201);
    const id = asked.body.todo.id as number;
    const read = await server.api(carol, 'GET', `/todos/${id}`);
    expect(read).toMatchObject({ status: 404, body: { code: 'not_found' } });
    const listed = await server.api(carol, 'GET', '/todos?state=all&limit=500');
    expect(listed.body.todos.map((t: { id: number }) => t.id)).not.toContain(id);
    const decided = await server.api(carol, 'POST', `/todos/${id}/approve`, {});
    expect(decided).toMatchObject({ status: 404, body: { code: 'not_found' } });
    // Its human, and an admin, see it as before.
    expect((await server.api(human, 'GET', `/todos/${id}`)).status).toBe(200);
    expect((await server.api(admin, 'GET', `/todos/${id}`)).status).toBe(200);
    expect((await server.api(human, 'GET', `/todos/${id}`)).body.todo.state).toBe('pending');
  });
});
