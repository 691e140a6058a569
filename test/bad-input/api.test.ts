import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  BAD_BODIES,
  chunked,
  postDeclaringLength,
  countRows,
  expectNothingLeaked,
  readBad,
  STRINGS,
  type HostileString,
} from '../support/bad-input.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

// The bad-input corpus thrown at the JSON API under /api/v1: every refusal is a 4xx
// `{error, code}` that stores nothing and leaks nothing; free text is stored and read back byte
// for byte, titles and bodies neutralised exactly as documented; the server keeps answering.

let server: TestServer;
/** The admin (a human). */
let admin: string;
/** bob: a human, not an admin. */
let human: string;
/** bot: an agent of bob's on `reviews`. */
let agent: string;
/** spy: an agent of bob's on `other` only. */
let otherAgent: string;
/** gone: an agent of bob's on `reviews`, revoked. */
let revoked: string;
/** A pending todo on `reviews` that bodies refused before the ledger would otherwise change. */
let pending: number;

beforeAll(async () => {
  server = await startTestServer();
  admin = server.adminToken;
  human = (await server.api(admin, 'POST', '/humans', { name: 'bob' })).body.token;
  const add = async (name: string, queues: string[]) =>
    (await server.api(human, 'POST', '/agents', { name, queues })).body.token as string;
  agent = await add('bot', ['reviews']);
  otherAgent = await add('spy', ['other']);
  revoked = await add('gone', ['reviews']);
  expect((await server.api(human, 'POST', '/agents/gone/revoke')).status).toBe(200);
  pending = await createTodo({ title: 'stays pending' });
});
afterAll(() => server.stop());

interface Answer {
  status: number;
  text: string;
}

/** Sends raw bytes to /api/v1 with the headers given (`null` leaves one out): JSON by default. */
async function send(
  method: string,
  path: string,
  body?: Buffer | string,
  headers: Record<string, string | null> = {},
): Promise<Answer> {
  const all: Record<string, string | null> = {
    authorization: `Bearer ${admin}`,
    ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    ...headers,
  };
  const response = await fetch(`${server.url}/api/v1${path}`, {
    method,
    headers: Object.fromEntries(Object.entries(all).filter(([, v]) => v !== null)) as Record<
      string,
      string
    >,
    body,
  });
  return { status: response.status, text: await response.text() };
}

/** Sends a value as JSON (JSON.stringify escapes lone surrogates, so they arrive as sent). */
const sendJson = (token: string, method: string, path: string, body?: unknown) =>
  send(method, path, body === undefined ? undefined : JSON.stringify(body), {
    authorization: `Bearer ${token}`,
  });

/**
 * A refusal: the status and code given, `{error, code}` and nothing else, nothing stored or
 * leaked (`echoed`: input the message may quote back), and the server still answering.
 */
async function expectRefused(
  sent: () => Promise<Answer>,
  status: number,
  code: string,
  echoed: string[] = [],
): Promise<string> {
  const before = await stored();
  const answer = await sent();
  expect(answer.status, answer.text).toBe(status);
  const body = JSON.parse(answer.text) as { error: string; code: string };
  expect(body).toEqual({ error: expect.any(String), code });
  expectNothingLeaked(answer.text, echoed);
  expect(await stored()).toEqual(before);
  expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  return body.error;
}

const stored = () => countRows(server.sql);

async function createTodo(fields: Record<string, unknown> = {}): Promise<number> {
  const { status, body } = await server.api(admin, 'POST', '/todos', {
    queue: 'reviews',
    title: 'a todo',
    ...fields,
  });
  expect(status, JSON.stringify(body)).toBe(201);
  return body.todo.id as number;
}

/** A todo on `reviews` claimed by bot: its id and lease token. */
async function claimed(): Promise<{ id: number; lease_token: string }> {
  const id = await createTodo();
  const { status, body } = await server.api(agent, 'POST', `/todos/${id}/claim`);
  expect(status).toBe(200);
  return { id, lease_token: body.todo.lease_token };
}

/** A pending approval bob asked for through bot, which the admin may decide. */
async function approval(): Promise<number> {
  const { status, body } = await server.api(agent, 'POST', '/approvals', { question: 'may I?' });
  expect(status, JSON.stringify(body)).toBe(201);
  return body.todo.id as number;
}

async function getTodo(id: number) {
  const { status, body } = await server.api(admin, 'GET', `/todos/${id}`);
  expect(status).toBe(200);
  return body as { todo: Record<string, unknown>; history: { action: string; data: any }[] };
}

/** The POST endpoints, with a path that exists (a body refused must not reach the ledger). */
const WITH_REQUIRED_FIELDS = [
  'POST /todos',
  'POST /todos/:id/heartbeat',
  'POST /todos/:id/complete',
  'POST /todos/:id/fail',
  'POST /todos/:id/release',
  'POST /todos/:id/reply',
  'POST /approvals',
  'POST /agents',
  'POST /humans',
];
/** Every field optional: an empty body reads as `{}` (README: optional-only bodies may be left out). */
const ALL_OPTIONAL = [
  'POST /todos/:id/claim',
  'POST /queues/reviews/claim',
  'POST /todos/:id/cancel',
  'POST /todos/:id/approve',
  'POST /todos/:id/deny',
];
const pathOf = (endpoint: string) => endpoint.slice(5).replace(':id', String(pending));

describe('the corpus bodies: 400 invalid, nothing stored', () => {
  test.each(WITH_REQUIRED_FIELDS.flatMap((e) => BAD_BODIES.map((name) => [e, name])))(
    '%s with %s',
    async (endpoint, name) => {
      await expectRefused(
        () => send('POST', pathOf(endpoint), readBad(`bodies/${name}`)),
        400,
        'invalid',
      );
    },
  );

  test.each(
    ALL_OPTIONAL.flatMap((e) =>
      BAD_BODIES.filter((name) => name !== 'empty.json').map((name) => [e, name]),
    ),
  )('%s with %s', async (endpoint, name) => {
    await expectRefused(
      () => send('POST', pathOf(endpoint), readBad(`bodies/${name}`)),
      400,
      'invalid',
    );
  });

  test('no body at all where every field is optional reads as {}: the claim is made', async () => {
    // Unlike empty.json sent to an endpoint with a required field (above): 400 there.
    const id = await createTodo();
    const answer = await send('POST', `/todos/${id}/claim`, readBad('bodies/empty.json'), {
      authorization: `Bearer ${agent}`,
    });
    expect(answer.status, answer.text).toBe(200);
    expect(JSON.parse(answer.text).todo).toMatchObject({ id, state: 'claimed', claimed_by: 'bot' });
  });

  test('regression: a body that is not UTF-8 was decoded with U+FFFD and its todo stored', async () => {
    for (const name of ['invalid-utf8.bin', 'overlong-utf8.bin', 'surrogate-utf8.bin']) {
      const error = await expectRefused(
        () => send('POST', '/todos', readBad(`bodies/${name}`)),
        400,
        'invalid',
      );
      expect(error).toMatch(/UTF-8/);
    }
  });
});

describe('content types, encodings and sizes', () => {
  const valid = JSON.stringify({ queue: 'reviews', title: 'sent some other way' });

  test.each([
    ['no content type', { 'content-type': null }],
    ['text/plain', { 'content-type': 'text/plain' }],
    ['a form', { 'content-type': 'application/x-www-form-urlencoded' }],
    ['multipart', { 'content-type': 'multipart/form-data; boundary=x' }],
    ['another JSON-ish type', { 'content-type': 'application/vnd.api+json' }],
    ['Latin-1', { 'content-type': 'application/json; charset=iso-8859-1' }],
  ])('%s: 415', async (_, headers) => {
    await expectRefused(
      () => send('POST', '/todos', valid, headers),
      415,
      'unsupported_media_type',
    );
  });

  test('regression: JSON declared as UTF-16 was decoded as UTF-16 and stored', async () => {
    const utf16 = Buffer.from(valid, 'utf16le');
    for (const charset of ['utf-16', 'utf-16le', 'UTF-16']) {
      await expectRefused(
        () =>
          send('POST', '/todos', utf16, { 'content-type': `application/json; charset=${charset}` }),
        415,
        'unsupported_media_type',
      );
    }
  });

  test('regression: a gzip body was inflated, unlike webhooks, which refuse it', async () => {
    for (const encoding of ['gzip', 'deflate', 'br', 'identity, gzip']) {
      await expectRefused(
        () => send('POST', '/todos', gzipSync(valid), { 'content-encoding': encoding }),
        415,
        'unsupported_media_type',
      );
    }
  });

  test('UTF-8 declared in any spelling is accepted', async () => {
    for (const type of [
      'application/json; charset=utf-8',
      'application/json;charset="UTF-8"',
      'Application/JSON',
    ]) {
      const answer = await send('POST', '/todos', valid, { 'content-type': type });
      expect(answer.status, `${type}: ${answer.text}`).toBe(201);
    }
  });

  test('3 MB of JSON: 413 (the cap is 2 MB)', async () => {
    const body = JSON.stringify({ queue: 'reviews', title: 't', body: 'b'.repeat(3_000_000) });
    await expectRefused(() => send('POST', '/todos', body), 413, 'too_large');
  });

  test('3 MB sent chunked, with no Content-Length: 413 as the bytes arrive', async () => {
    const bytes = Buffer.from(JSON.stringify({ queue: 'reviews', title: 'x'.repeat(3_000_000) }));
    await expectRefused(
      async () => {
        const response = await fetch(`${server.url}/api/v1/todos`, {
          method: 'POST',
          headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
          body: chunked(bytes, 1 << 18),
          duplex: 'half',
        });
        return { status: response.status, text: await response.text() };
      },
      413,
      'too_large',
    );
  });

  test('regression: a Content-Length over the cap hung: all its bytes were awaited before the 413', async () => {
    await expectRefused(
      () =>
        postDeclaringLength(new URL('/api/v1/todos', server.url), {
          authorization: `Bearer ${admin}`,
          'content-type': 'application/json',
          'content-length': String(3 * 1024 * 1024),
        }),
      413,
      'too_large',
    );
  });
});

describe('deep nesting in a result', () => {
  const nested = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;
  const completeWith = async (result: string) => {
    const { id, lease_token } = await claimed();
    const body = `{"lease_token": ${JSON.stringify(lease_token)}, "result": ${result}}`;
    return {
      id,
      sent: () => send('POST', `/todos/${id}/complete`, body, { authorization: `Bearer ${agent}` }),
    };
  };

  test('regression: a result nested 5,000 levels deep was stored (the cap is 64)', async () => {
    const { id, sent } = await completeWith(nested(5_000));
    const error = await expectRefused(sent, 400, 'invalid');
    expect(error).toMatch(/64/);
    expect((await getTodo(id)).todo.state).toBe('claimed');
  });

  test('regression: a result nested 500,000 levels deep was answered 500', async () => {
    const { id, sent } = await completeWith(nested(500_000));
    await expectRefused(sent, 400, 'invalid');
    expect((await getTodo(id)).todo.state).toBe('claimed');
  });

  test('65 levels of objects: refused; 64 levels: stored and read back', async () => {
    const objects = (levels: number): unknown =>
      levels === 0 ? 'leaf' : { a: objects(levels - 1) };
    const over = await completeWith(JSON.stringify(objects(65)));
    await expectRefused(over.sent, 400, 'invalid');
    const at = await completeWith(JSON.stringify(objects(64)));
    expect((await at.sent()).status).toBe(200);
    expect((await getTodo(at.id)).todo.result).toEqual(objects(64));
  });
});

describe('sizes: one over the documented maximum is refused, the maximum is taken', () => {
  const over = (n: number) => 'x'.repeat(n + 1);

  test.each([
    ['title', { title: over(10_000) }],
    ['body', { body: over(65_536) }],
    ['url', { url: over(2048) }],
    ['key', { key: over(200) }],
    ['queue', { queue: over(64) }],
    ['kind', { kind: `a${'.b'.repeat(50)}` }],
    ['max_attempts', { max_attempts: 101 }],
    ['a 1.9 MB title', { title: 't'.repeat(1_900_000) }],
  ])('create: %s', async (_, fields) => {
    await expectRefused(
      () => sendJson(admin, 'POST', '/todos', { queue: 'reviews', title: 'x', ...fields }),
      400,
      'invalid',
    );
  });

  test('create at the maximum: title cut to 200 characters, body to 16,384', async () => {
    const { body } = await server.api(admin, 'POST', '/todos', {
      queue: 'q'.repeat(64),
      title: 't'.repeat(10_000),
      body: 'b'.repeat(65_536),
      url: 'u'.repeat(2048),
      key: 'k'.repeat(200),
      max_attempts: 100,
    });
    expect(body.todo).toMatchObject({
      title: `${'t'.repeat(199)}…`,
      body: `${'b'.repeat(16_383)}…`,
      url: 'u'.repeat(2048),
      idempotency_key: 'k'.repeat(200),
      max_attempts: 100,
    });
  });

  test('the lease: 86,401 seconds refused on claim, claim-next and heartbeat', async () => {
    const { id, lease_token } = await claimed();
    await expectRefused(
      () => sendJson(agent, 'POST', `/todos/${pending}/claim`, { lease_seconds: 86_401 }),
      400,
      'invalid',
    );
    await expectRefused(
      () => sendJson(agent, 'POST', '/queues/reviews/claim', { lease_seconds: 86_401 }),
      400,
      'invalid',
    );
    await expectRefused(
      () =>
        sendJson(agent, 'POST', `/todos/${id}/heartbeat`, { lease_token, lease_seconds: 86_401 }),
      400,
      'invalid',
    );
  });

  test('free text: summary, reason, note 65,537 characters; a reply 16,385', async () => {
    const { id, lease_token } = await claimed();
    const text = over(65_536);
    await expectRefused(
      () => sendJson(agent, 'POST', `/todos/${id}/complete`, { lease_token, summary: text }),
      400,
      'invalid',
    );
    await expectRefused(
      () => sendJson(agent, 'POST', `/todos/${id}/fail`, { lease_token, reason: text }),
      400,
      'invalid',
    );
    await expectRefused(
      () => sendJson(admin, 'POST', `/todos/${pending}/cancel`, { reason: text }),
      400,
      'invalid',
    );
    const asked = await approval();
    await expectRefused(
      () => sendJson(admin, 'POST', `/todos/${asked}/approve`, { note: text }),
      400,
      'invalid',
    );
    await expectRefused(
      () => sendJson(agent, 'POST', `/todos/${id}/reply`, { text: over(16_384) }),
      400,
      'invalid',
    );
    expect(
      (await server.api(agent, 'POST', `/todos/${id}/reply`, { text: 'r'.repeat(16_384) })).status,
    ).toBe(200);
  });

  test('a result over 1 MB (1,048,576 bytes) is refused', async () => {
    const { id, lease_token } = await claimed();
    await expectRefused(
      () =>
        sendJson(agent, 'POST', `/todos/${id}/complete`, {
          lease_token,
          result: 'r'.repeat(1_048_576),
        }),
      400,
      'invalid',
    );
  });

  test('principals: a name of 65 characters, a GitHub login of 40, 101 queues', async () => {
    await expectRefused(
      () => sendJson(admin, 'POST', '/humans', { name: over(64) }),
      400,
      'invalid',
    );
    await expectRefused(
      () => sendJson(admin, 'POST', '/humans', { name: 'carol', github_login: over(39) }),
      400,
      'invalid',
    );
    await expectRefused(
      () => sendJson(human, 'POST', '/agents', { name: over(64), queues: ['reviews'] }),
      400,
      'invalid',
    );
    const queues = Array.from({ length: 101 }, (_, i) => `q${i}`);
    await expectRefused(
      () => sendJson(human, 'POST', '/agents', { name: 'many', queues }),
      400,
      'invalid',
    );
  });

  test('list: limit 501 is refused', async () => {
    await expectRefused(() => send('GET', '/todos?limit=501'), 400, 'invalid');
  });
});

const ALL = [...STRINGS.stored_as_sent, ...STRINGS.not_storable].map((s) => [s.name, s] as const);
const STORED = STRINGS.stored_as_sent.map((s) => [s.name, s] as const);
const NOT_STORABLE = STRINGS.not_storable.map((s) => [s.name, s] as const);

describe('hostile text in titles and bodies: neutralised exactly as documented', () => {
  test.each(ALL)('%s in a todo', async (_, s) => {
    const { status, body } = await server.api(admin, 'POST', '/todos', {
      queue: 'reviews',
      title: `t ${s.text}`,
      body: s.text,
    });
    expect(status).toBe(201);
    expect(body.todo).toMatchObject({ title: `t ${s.title}`, body: s.body });
    expect((await getTodo(body.todo.id)).todo).toMatchObject({
      title: `t ${s.title}`,
      body: s.body,
    });
  });

  test.each(ALL)('%s in an approval question and body', async (_, s) => {
    const { status, body } = await server.api(agent, 'POST', '/approvals', {
      question: `q ${s.text}`,
      body: s.text,
    });
    expect(status, JSON.stringify(body)).toBe(201);
    expect((await getTodo(body.todo.id)).todo).toMatchObject({
      title: `q ${s.title}`,
      body: s.body,
    });
  });
});

describe('hostile text in fields stored as sent: given back byte for byte', () => {
  test.each(STORED)('%s as a key and a URL', async (_, s) => {
    const first = await server.api(admin, 'POST', '/todos', {
      queue: 'keys',
      title: 'k',
      key: s.text,
      url: s.text,
    });
    expect(first.status).toBe(201);
    expect((await getTodo(first.body.todo.id)).todo).toMatchObject({
      idempotency_key: s.text,
      url: s.text,
    });
    // The key matches itself exactly, and nothing else.
    const again = await server.api(admin, 'POST', '/todos', {
      queue: 'keys',
      title: 'k',
      key: s.text,
    });
    expect(again.body).toMatchObject({ created: false, todo: { id: first.body.todo.id } });
    const other = await server.api(admin, 'POST', '/todos', {
      queue: 'keys',
      title: 'k',
      key: `${s.text}.`,
    });
    expect(other.body.created).toBe(true);
  });

  test.each(STORED)('%s as a summary and inside a result', async (_, s) => {
    const { id, lease_token } = await claimed();
    const result = { text: s.text, [s.text]: [s.text] };
    const done = await server.api(agent, 'POST', `/todos/${id}/complete`, {
      lease_token,
      summary: s.text,
      result,
    });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect((await getTodo(id)).todo).toMatchObject({ summary: s.text, result });
  });

  test.each(STORED)('%s as a failure reason', async (_, s) => {
    const { id, lease_token } = await claimed();
    expect(
      (await server.api(agent, 'POST', `/todos/${id}/fail`, { lease_token, reason: s.text }))
        .status,
    ).toBe(200);
    expect((await getTodo(id)).todo.summary).toBe(s.text);
  });

  test.each(STORED)('%s as a reason to cancel', async (_, s) => {
    const id = await createTodo();
    expect(
      (await server.api(admin, 'POST', `/todos/${id}/cancel`, { reason: s.text })).status,
    ).toBe(200);
    expect((await getTodo(id)).todo.summary).toBe(s.text);
  });

  test.each(STORED)('%s as a note on a verdict', async (_, s) => {
    const id = await approval();
    expect((await server.api(admin, 'POST', `/todos/${id}/deny`, { note: s.text })).status).toBe(
      200,
    );
    expect((await getTodo(id)).todo).toMatchObject({ verdict: 'deny', summary: s.text });
  });

  test.each(STORED)('%s as a reply', async (_, s) => {
    const { id } = await claimed();
    const text = `re: ${s.text}`;
    const reply = await server.api(agent, 'POST', `/todos/${id}/reply`, { text });
    expect(reply).toMatchObject({ status: 200, body: { text } });
    const { history } = await getTodo(id);
    expect(history.find((e) => e.action === 'replied')?.data).toEqual({ text });
  });
});

describe('not storable as sent (NUL, unpaired surrogates): refused, never a 500', () => {
  const fields = (s: HostileString) =>
    [
      [
        'key',
        () => sendJson(admin, 'POST', '/todos', { queue: 'reviews', title: 't', key: s.text }),
      ],
      [
        'url',
        () => sendJson(admin, 'POST', '/todos', { queue: 'reviews', title: 't', url: s.text }),
      ],
      [
        'cancel reason',
        () => sendJson(admin, 'POST', `/todos/${pending}/cancel`, { reason: s.text }),
      ],
    ] as const;

  test.each(NOT_STORABLE)('%s as a key, a URL, a reason to cancel', async (_, s) => {
    for (const [field, sent] of fields(s)) {
      const error = await expectRefused(sent, 400, 'invalid');
      expect(error, field).toMatch(/NUL|surrogate|UTF/);
    }
    expect((await getTodo(pending)).todo.state).toBe('pending');
  });

  test.each(NOT_STORABLE)('%s as a summary, in a result, as a reason, a reply', async (_, s) => {
    const { id, lease_token } = await claimed();
    for (const body of [
      { lease_token, summary: s.text },
      { lease_token, result: { text: s.text } },
      { lease_token, result: { [s.text]: 1 } },
      { lease_token, result: s.text },
    ]) {
      await expectRefused(
        () => sendJson(agent, 'POST', `/todos/${id}/complete`, body),
        400,
        'invalid',
      );
    }
    await expectRefused(
      () => sendJson(agent, 'POST', `/todos/${id}/fail`, { lease_token, reason: s.text }),
      400,
      'invalid',
    );
    await expectRefused(
      () => sendJson(agent, 'POST', `/todos/${id}/reply`, { text: s.text }),
      400,
      'invalid',
    );
    expect((await getTodo(id)).todo.state).toBe('claimed');
  });

  test.each(NOT_STORABLE)('%s as a note on a verdict', async (_, s) => {
    const id = await approval();
    await expectRefused(
      () => sendJson(admin, 'POST', `/todos/${id}/approve`, { note: s.text }),
      400,
      'invalid',
    );
    expect((await getTodo(id)).todo.state).toBe('pending');
  });

  test('regression: NUL in a reason to cancel was answered 500', async () => {
    await expectRefused(
      () => sendJson(admin, 'POST', `/todos/${pending}/cancel`, { reason: 'a\u0000b' }),
      400,
      'invalid',
    );
  });

  test('regression: an unpaired surrogate in a summary was stored as U+FFFD', async () => {
    const { id, lease_token } = await claimed();
    await expectRefused(
      () => sendJson(agent, 'POST', `/todos/${id}/complete`, { lease_token, summary: 'a\ud800b' }),
      400,
      'invalid',
    );
  });

  test('regression: a result holding the text \\u0000 (six characters, not NUL) was refused', async () => {
    const { id, lease_token } = await claimed();
    const result = { text: 'a \\u0000 b' };
    const done = await server.api(agent, 'POST', `/todos/${id}/complete`, { lease_token, result });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect((await getTodo(id)).todo.result).toEqual(result);
  });

  // The history kept the first 500 UTF-16 units of a summary, reason or note, and a cut through
  // a surrogate pair is JSON PostgreSQL refuses.
  test('regression: a summary whose 500th character starts an emoji was answered 500', async () => {
    const { id, lease_token } = await claimed();
    const summary = `${'a'.repeat(499)}😀 and more`;
    const done = await server.api(agent, 'POST', `/todos/${id}/complete`, {
      lease_token,
      summary,
    });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect((await getTodo(id)).todo.summary).toBe(summary);
  });
});

describe('hostile text in names: 400 invalid', () => {
  test.each(ALL)('%s as a queue, kind, assignee', async (_, s) => {
    for (const fields of [{ queue: s.text }, { kind: s.text }, { assignee: s.text }]) {
      await expectRefused(
        () => sendJson(admin, 'POST', '/todos', { queue: 'reviews', title: 't', ...fields }),
        400,
        'invalid',
        [s.text],
      );
    }
  });

  test.each(ALL)('%s as the request_id of an approval', async (_, s) => {
    await expectRefused(
      () => sendJson(agent, 'POST', '/approvals', { question: 'q', request_id: s.text }),
      400,
      'invalid',
      [s.text],
    );
  });

  test.each(ALL)('%s as a name, login, owner or queue of a principal', async (_, s) => {
    for (const [token, path, body] of [
      [admin, '/humans', { name: s.text }],
      [admin, '/humans', { name: 'carol', github_login: s.text }],
      [human, '/agents', { name: s.text, queues: ['reviews'] }],
      [human, '/agents', { name: 'agent-x', queues: [s.text] }],
      [admin, '/agents', { name: 'agent-x', queues: ['reviews'], owner: s.text }],
    ] as const) {
      await expectRefused(() => sendJson(token, 'POST', path, body), 400, 'invalid', [s.text]);
    }
  });

  test.each(ALL)('%s in a path or a list filter', async (_, s) => {
    // A lone surrogate cannot be percent-encoded as UTF-8: it goes as the bytes of one (ED A0 80).
    const part = s.text
      .split(/([\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff])/)
      .map((piece, i) => (i % 2 ? '%ED%A0%80' : encodeURIComponent(piece)))
      .join('');
    for (const [method, path] of [
      ['POST', `/queues/${part}/claim`],
      ['POST', `/agents/${part}/revoke`],
      ['GET', `/todos?queue=${part}`],
    ]) {
      await expectRefused(() => send(method!, path!), 400, 'invalid', [s.text]);
    }
  });

  test('regression: a queue filter that cannot be a queue answered 200 and an empty list', async () => {
    const error = await expectRefused(
      () => send('GET', '/todos?queue=Reviews%20Team'),
      400,
      'invalid',
      ['Reviews Team'],
    );
    expect(error).toMatch(/^queue must be/);
  });

  test('regression: revoking a name that cannot be a name answered 404, as if it might exist', async () => {
    const error = await expectRefused(
      () => send('POST', '/agents/Bad%20Name/revoke'),
      400,
      'invalid',
      ['Bad Name'],
    );
    expect(error).toMatch(/^name must be/);
  });

  test('regression: a lone surrogate percent-encoded in a path was answered 500', async () => {
    await expectRefused(() => send('POST', '/agents/a%ED%A0%80/revoke'), 400, 'invalid');
    await expectRefused(() => send('POST', '/queues/%FF/claim'), 400, 'invalid');
    await expectRefused(() => send('GET', '/todos/%C0%AF'), 400, 'invalid');
  });

  test('regression: NUL in an assignee, an owner or a name to revoke was answered 500', async () => {
    await expectRefused(
      () =>
        sendJson(admin, 'POST', '/todos', { queue: 'reviews', title: 't', assignee: 'a\u0000' }),
      400,
      'invalid',
    );
    await expectRefused(
      () =>
        sendJson(admin, 'POST', '/agents', { name: 'x', queues: ['reviews'], owner: 'a\u0000' }),
      400,
      'invalid',
    );
    await expectRefused(() => send('POST', '/agents/a%00/revoke'), 400, 'invalid');
    await expectRefused(() => send('GET', '/todos?queue=a%00'), 400, 'invalid');
  });
});

describe('unknown fields: 400 invalid, naming the field', () => {
  test.each([
    ['POST /todos', { queue: 'reviews', title: 't' }],
    ['POST /todos/:id/claim', {}],
    ['POST /queues/reviews/claim', {}],
    ['POST /todos/:id/cancel', {}],
    ['POST /todos/:id/approve', {}],
    ['POST /todos/:id/reply', { text: 'hi' }],
    ['POST /approvals', { question: 'q' }],
    ['POST /agents', { name: 'extra', queues: ['reviews'] }],
    ['POST /humans', { name: 'extra' }],
  ])('%s', async (endpoint, body) => {
    for (const extra of ['is_admin_too', 'state', 'attributed_to', 'constructor']) {
      const error = await expectRefused(
        () => sendJson(admin, 'POST', pathOf(endpoint), { ...body, [extra]: true }),
        400,
        'invalid',
      );
      expect(error).toContain(extra);
    }
  });

  test('__proto__ in a body changes nothing and is refused', async () => {
    const body = '{"name": "proto", "__proto__": {"is_admin": true}}';
    await expectRefused(() => send('POST', '/humans', body), 400, 'invalid');
    const list = await server.api(admin, 'GET', '/todos?state=all&limit=1');
    expect(list.status).toBe(200);
    expect(({} as Record<string, unknown>).is_admin).toBeUndefined();
  });

  test('unknown query parameters on the list', async () => {
    await expectRefused(() => send('GET', '/todos?queu=reviews'), 400, 'invalid');
  });
});

describe('wrong types: 400 invalid', () => {
  const UUID = '00000000-0000-4000-8000-000000000000';
  test.each([
    ['POST /todos', { queue: 1, title: 't' }],
    ['POST /todos', { queue: null, title: 't' }],
    ['POST /todos', { queue: ['reviews'], title: 't' }],
    ['POST /todos', { queue: 'reviews' }],
    ['POST /todos', { queue: 'reviews', title: 1 }],
    ['POST /todos', { queue: 'reviews', title: null }],
    ['POST /todos', { queue: 'reviews', title: { text: 't' } }],
    ['POST /todos', { queue: 'reviews', title: '   ' }],
    ['POST /todos', { queue: 'reviews', title: 't', body: 1 }],
    ['POST /todos', { queue: 'reviews', title: 't', kind: 1 }],
    ['POST /todos', { queue: 'reviews', title: 't', kind: null }],
    ['POST /todos', { queue: 'reviews', title: 't', kind: 'approval' }],
    ['POST /todos', { queue: 'reviews', title: 't', key: 1 }],
    ['POST /todos', { queue: 'reviews', title: 't', key: '' }],
    ['POST /todos', { queue: 'reviews', title: 't', assignee: 1 }],
    ['POST /todos', { queue: 'reviews', title: 't', assignee: 'nobody' }],
    ['POST /todos', { queue: 'reviews', title: 't', assignee: 'spy' }],
    ['POST /todos', { queue: 'reviews', title: 't', url: true }],
    ['POST /todos', { queue: 'reviews', title: 't', max_attempts: '3' }],
    ['POST /todos', { queue: 'reviews', title: 't', max_attempts: 1.5 }],
    ['POST /todos', { queue: 'reviews', title: 't', max_attempts: 0 }],
    ['POST /todos', { queue: 'reviews', title: 't', max_attempts: -1 }],
    ['POST /todos', { queue: 'reviews', title: 't', max_attempts: null }],
    ['POST /todos/:id/claim', { lease_seconds: '60' }],
    ['POST /todos/:id/claim', { lease_seconds: 1.5 }],
    ['POST /todos/:id/claim', { lease_seconds: 0 }],
    ['POST /todos/:id/claim', { lease_seconds: -60 }],
    ['POST /todos/:id/claim', { lease_seconds: null }],
    ['POST /todos/:id/claim', { lease_seconds: 1e300 }],
    ['POST /queues/reviews/claim', { lease_seconds: '60' }],
    ['POST /todos/:id/heartbeat', {}],
    ['POST /todos/:id/heartbeat', { lease_token: 1 }],
    ['POST /todos/:id/heartbeat', { lease_token: 'not-a-uuid' }],
    ['POST /todos/:id/heartbeat', { lease_token: UUID, lease_seconds: '60' }],
    ['POST /todos/:id/complete', { lease_token: null }],
    ['POST /todos/:id/complete', { lease_token: UUID, summary: 1 }],
    ['POST /todos/:id/complete', { lease_token: UUID, summary: ['s'] }],
    ['POST /todos/:id/fail', { lease_token: UUID, reason: {} }],
    ['POST /todos/:id/release', { lease_token: [UUID] }],
    ['POST /todos/:id/cancel', { reason: 1 }],
    ['POST /todos/:id/approve', { note: 1 }],
    ['POST /todos/:id/deny', { note: false }],
    ['POST /todos/:id/reply', {}],
    ['POST /todos/:id/reply', { text: 1 }],
    ['POST /todos/:id/reply', { text: null }],
    ['POST /todos/:id/reply', { text: ' \n ' }],
    ['POST /approvals', { question: 1 }],
    ['POST /approvals', { question: 'q', ttl_seconds: '60' }],
    ['POST /approvals', { question: 'q', request_id: 12345 }],
    ['POST /approvals', { question: 'q', about_todo_id: 'one' }],
    ['POST /approvals', { question: 'q', channel_session: 'not-a-uuid' }],
    ['POST /agents', { name: 1, queues: ['reviews'] }],
    ['POST /agents', { name: 'a1', queues: 'reviews' }],
    ['POST /agents', { name: 'a1', queues: [] }],
    ['POST /agents', { name: 'a1', queues: [1] }],
    ['POST /agents', { name: 'a1', queues: null }],
    ['POST /agents', { name: 'a1', queues: ['reviews'], owner: 1 }],
    ['POST /agents', { name: 'a1', queues: ['reviews'], owner: 'nobody' }],
    ['POST /humans', { name: 1 }],
    ['POST /humans', { name: 'h1', github_login: 1 }],
    ['POST /humans', { name: 'h1', is_admin: 'true' }],
    ['POST /humans', { name: 'h1', is_admin: 1 }],
  ])('%s with %j', async (endpoint, body) => {
    await expectRefused(() => sendJson(admin, 'POST', pathOf(endpoint), body), 400, 'invalid');
  });

  test.each([
    '/todos?limit=abc',
    '/todos?limit=0',
    '/todos?limit=1.5',
    '/todos?state=bogus',
    '/todos?state=',
    '/todos?mine=yes',
    '/todos?before=-1',
    '/todos?before=abc',
    '/todos?queue=reviews&queue=other',
    '/todos?limit=1&limit=2',
    '/todos?queue[x]=1',
  ])('GET %s', async (path) => {
    await expectRefused(() => send('GET', path), 400, 'invalid');
  });

  test("regression: a todo id of '0x10', '1e1' or ' 1' named todo 16, 10 or 1", async () => {
    for (const id of ['0x10', '1e1', '%201', '01']) {
      const error = await expectRefused(() => send('POST', `/todos/${id}/cancel`), 400, 'invalid');
      expect(error).toMatch(/^id:/);
    }
    expect((await getTodo(pending)).todo.state).toBe('pending');
  });

  test.each(['abc', '0', '-1', '1.5', '99999999999999999999', '0x10', ' 1', '1e3'])(
    'a todo id of %j',
    async (id) => {
      await expectRefused(() => send('GET', `/todos/${encodeURIComponent(id)}`), 400, 'invalid');
      await expectRefused(
        () => send('POST', `/todos/${encodeURIComponent(id)}/claim`),
        400,
        'invalid',
      );
    },
  );
});

describe('tokens', () => {
  const noBody = (headers: Record<string, string | null>) => () =>
    send('GET', '/todos', undefined, headers);

  test.each([
    ['missing', { authorization: null }],
    ['empty', { authorization: '' }],
    ['only the scheme', { authorization: 'Bearer' }],
    ['another scheme', { authorization: `Basic ${Buffer.from('admin:admin').toString('base64')}` }],
    ['not sbk_', { authorization: 'Bearer abc' }],
    ['sbk_ one character short', { authorization: `Bearer sbk_${'x'.repeat(42)}` }],
    ['unknown', { authorization: `Bearer sbk_${'x'.repeat(43)}` }],
    ['two tokens', { authorization: `Bearer sbk_${'x'.repeat(43)} sbk_${'y'.repeat(43)}` }],
    ['SQL', { authorization: "Bearer ' or 1=1 --" }],
    ['10,000 characters', { authorization: `Bearer sbk_${'x'.repeat(10_000)}` }],
    ['Latin-1 bytes', { authorization: `Bearer ${'\u00ff'.repeat(47)}` }],
  ])('%s: 401', async (_, headers) => {
    await expectRefused(noBody(headers), 401, 'unauthenticated');
  });

  test('an admin token with one character changed: 401', async () => {
    const last = admin.at(-1) === 'A' ? 'B' : 'A';
    await expectRefused(
      noBody({ authorization: `Bearer ${admin.slice(0, -1)}${last}` }),
      401,
      'unauthenticated',
    );
  });

  test('a revoked agent: 401 on every route, its body never read', async () => {
    await expectRefused(noBody({ authorization: `Bearer ${revoked}` }), 401, 'unauthenticated');
    await expectRefused(
      () => sendJson(revoked, 'POST', `/todos/${pending}/claim`, {}),
      401,
      'unauthenticated',
    );
    await expectRefused(
      () => sendJson(revoked, 'POST', '/queues/reviews/claim', {}),
      401,
      'unauthenticated',
    );
    expect((await getTodo(pending)).todo.state).toBe('pending');
  });

  test("another queue's todo answers exactly like a missing one: 404", async () => {
    const { id, lease_token } = await claimed();
    const missing = 2_000_000_000;
    const routes: [string, string, unknown][] = [
      ['GET', '/todos/:id', undefined],
      ['POST', '/todos/:id/claim', {}],
      ['POST', '/todos/:id/heartbeat', { lease_token }],
      ['POST', '/todos/:id/complete', { lease_token, summary: 'stolen' }],
      ['POST', '/todos/:id/fail', { lease_token }],
      ['POST', '/todos/:id/release', { lease_token }],
      ['POST', '/todos/:id/reply', { text: 'hello' }],
    ];
    for (const [method, path, body] of routes) {
      const theirs = await expectRefused(
        () => sendJson(otherAgent, method, path.replace(':id', String(id)), body),
        404,
        'not_found',
      );
      const none = await expectRefused(
        () => sendJson(otherAgent, method, path.replace(':id', String(missing)), body),
        404,
        'not_found',
      );
      expect(theirs.replace(String(id), 'N'), path).toBe(none.replace(String(missing), 'N'));
    }
    const list = await server.api(otherAgent, 'GET', '/todos?state=all&queue=reviews');
    expect(list).toMatchObject({ status: 200, body: { todos: [] } });
    expect((await getTodo(id)).todo).toMatchObject({ state: 'claimed', claimed_by: 'bot' });
  });

  test("an agent on another queue's claim-next and create: 403", async () => {
    await expectRefused(
      () => sendJson(otherAgent, 'POST', '/queues/reviews/claim', {}),
      403,
      'forbidden',
    );
    await expectRefused(
      () => sendJson(otherAgent, 'POST', '/todos', { queue: 'reviews', title: 't' }),
      403,
      'forbidden',
    );
  });

  test('an agent never approves or denies, even its own request, nor cancels what it did not ask', async () => {
    const id = await approval();
    for (const verb of ['approve', 'deny']) {
      await expectRefused(
        () => sendJson(agent, 'POST', `/todos/${id}/${verb}`, {}),
        403,
        'forbidden',
      );
      await expectRefused(
        () => sendJson(agent, 'POST', `/todos/${id}/${verb}`, { note: 'yes' }),
        403,
        'forbidden',
      );
    }
    // Withdrawing its own question is the asker's (approval request --wait that gives up);
    // a todo of its queue, or another agent's question, it may not cancel.
    await expectRefused(
      () => sendJson(agent, 'POST', `/todos/${pending}/cancel`, {}),
      403,
      'forbidden',
    );
    await expectRefused(
      () => sendJson(otherAgent, 'POST', `/todos/${id}/cancel`, {}),
      404,
      'not_found',
    );
    expect((await getTodo(id)).todo).toMatchObject({ state: 'pending', verdict: null });
    expect((await getTodo(pending)).todo).toMatchObject({ state: 'pending' });
  });

  test('principals: an agent adds nobody; a human who is not an admin adds no human', async () => {
    await expectRefused(
      () => sendJson(agent, 'POST', '/agents', { name: 'minion', queues: ['reviews'] }),
      403,
      'forbidden',
    );
    await expectRefused(
      () => sendJson(agent, 'POST', '/humans', { name: 'eve', is_admin: true }),
      403,
      'forbidden',
    );
    await expectRefused(
      () => sendJson(human, 'POST', '/humans', { name: 'eve', is_admin: true }),
      403,
      'forbidden',
    );
    await expectRefused(() => sendJson(agent, 'POST', '/agents/bot/revoke'), 403, 'forbidden');
    await expectRefused(
      () =>
        sendJson(human, 'POST', '/agents', { name: 'minion', queues: ['reviews'], owner: 'admin' }),
      403,
      'forbidden',
    );
  });
});
