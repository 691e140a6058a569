import { createHmac, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { readFixture } from '../github/deliver.js';
import {
  BAD_BODIES,
  chunked,
  postDeclaringLength,
  countRows,
  expectNothingLeaked,
  readBad,
  STRINGS,
} from '../support/bad-input.js';
import { startTestServer, WEBHOOK_SECRET, type TestServer } from '../support/test-server.js';

// The bad-input corpus thrown at POST /api/github/webhooks: every refusal is a 4xx
// `{error, code}` that stores nothing; what is signed and readable is recorded, its text
// neutralised exactly as documented; the server keeps answering throughout.

const CAP = 25 * 1024 * 1024;
let server: TestServer;
let fixture: string;

beforeAll(async () => {
  // No GitHub App: nothing is read from or written to GitHub; deliveries are still verified.
  server = await startTestServer();
  fixture = await readFixture('issues.labeled.switchboard');
});
afterAll(() => server.stop());

/** GitHub's signature of the exact bytes (what `sign` from @octokit/webhooks-methods computes for UTF-8 text). */
const signatureOf = (body: Buffer, secret = WEBHOOK_SECRET) =>
  `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;

interface Answer {
  status: number;
  text: string;
}

interface Sent extends Answer {
  /** Its X-GitHub-Delivery. */
  id: string;
}

/** POSTs raw bytes as GitHub would, signed unless a header says otherwise; `null` leaves a header out. */
async function post(
  body: Buffer | string,
  headers: Record<string, string | null> = {},
): Promise<Sent> {
  const bytes = Buffer.isBuffer(body) ? body : Buffer.from(body);
  const id = randomUUID();
  const all: Record<string, string | null> = {
    'content-type': 'application/json',
    'x-github-event': 'issues',
    'x-github-delivery': id,
    'x-hub-signature-256': signatureOf(bytes),
    ...headers,
  };
  const response = await fetch(`${server.url}/api/github/webhooks`, {
    method: 'POST',
    headers: Object.fromEntries(Object.entries(all).filter(([, v]) => v !== null)) as Record<
      string,
      string
    >,
    body: bytes,
  });
  return { id, status: response.status, text: await response.text() };
}

/** A refusal: the status and code given, `{error, code}` and nothing else, nothing stored or leaked. */
async function expectRefused(
  send: () => Promise<Answer>,
  status: number,
  code: string,
): Promise<string> {
  const before = await countRows(server.sql);
  const answer = await send();
  expect(answer.status, answer.text).toBe(status);
  const body = JSON.parse(answer.text) as { error: string; code: string };
  expect(body).toEqual({ error: expect.any(String), code });
  expectNothingLeaked(answer.text);
  expect(await countRows(server.sql)).toEqual(before);
  expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  return body.error;
}

/** The fixture with its issue's title (and maybe body) replaced. */
function withIssue(fields: { title?: string; body?: string }): string {
  const payload = JSON.parse(fixture);
  Object.assign(payload.issue, fields);
  return JSON.stringify(payload);
}

async function recorded(deliveryId: string) {
  const [row] = await server.sql<
    { disposition: string; note: string | null; title: string | null; body: string | null }[]
  >`
    select d.disposition, d.note, t.title, t.body
    from deliveries d left join todos t on t.id = d.todo_id
    where d.delivery_id = ${deliveryId}`;
  return row;
}

const PREFIX = 'issue #1 labelled switchboard in Codertocat/Hello-World: ';

describe('refused: 4xx {error, code}, nothing stored', () => {
  test.each(BAD_BODIES.map((name) => [name]))(
    'the corpus body %s, correctly signed',
    async (name) => {
      await expectRefused(() => post(readBad(`bodies/${name}`)), 400, 'invalid');
    },
  );

  test.each([
    ['no content type', { 'content-type': null }],
    ['text/plain', { 'content-type': 'text/plain' }],
    ['a form', { 'content-type': 'application/x-www-form-urlencoded' }],
    ['JSON in another charset', { 'content-type': 'application/json; charset=utf-16' }],
  ])('%s: 415', async (_, headers) => {
    await expectRefused(() => post(fixture, headers), 415, 'unsupported_media_type');
  });

  test('a compressed body: 415', async () => {
    await expectRefused(
      () => post(fixture, { 'content-encoding': 'gzip' }),
      415,
      'unsupported_media_type',
    );
  });

  test.each([
    ['no X-GitHub-Event', { 'x-github-event': null }],
    ['an empty X-GitHub-Event', { 'x-github-event': '' }],
    ['an X-GitHub-Event GitHub never sends', { 'x-github-event': "issues'; drop table todos;--" }],
    ['an X-GitHub-Event of 10,000 characters', { 'x-github-event': 'a'.repeat(10_000) }],
    ['no X-GitHub-Delivery', { 'x-github-delivery': null }],
    ['an empty X-GitHub-Delivery', { 'x-github-delivery': '' }],
    ['an X-GitHub-Delivery of 200 characters', { 'x-github-delivery': 'x'.repeat(200) }],
  ])('%s: 400', async (_, given) => {
    await expectRefused(() => post(fixture, given), 400, 'invalid');
  });

  // Not authenticated, as for every provider (the status per fault is one table: src/intake).
  test.each([
    ['no signature', { 'x-hub-signature-256': null }],
    ['an empty signature', { 'x-hub-signature-256': '' }],
    ['only the old SHA-1 signature', { 'x-hub-signature-256': null, 'x-hub-signature': 'sha1=00' }],
    ['a signature that is not hex', { 'x-hub-signature-256': `sha256=${'z'.repeat(64)}` }],
    ['a signature with another secret', { 'x-hub-signature-256': 'other secret' }],
    ['a signature of other bytes', { 'x-hub-signature-256': 'other bytes' }],
  ])('%s: 401', async (_, given) => {
    // The fixture is read in beforeAll, so signatures over it are made here.
    const headers: Record<string, string | null> = { ...given };
    if (headers['x-hub-signature-256'] === 'other secret')
      headers['x-hub-signature-256'] = signatureOf(Buffer.from(fixture), 'other');
    if (headers['x-hub-signature-256'] === 'other bytes')
      headers['x-hub-signature-256'] = signatureOf(Buffer.from(`${fixture} `));
    await expectRefused(() => post(fixture, headers), 401, 'unauthenticated');
  });

  test('a body declared over the 25 MB cap: 413 before it is read', async () => {
    await expectRefused(
      () =>
        postDeclaringLength(new URL('/api/github/webhooks', server.url), {
          'content-type': 'application/json',
          'content-length': String(CAP + 1),
          'x-github-event': 'issues',
          'x-github-delivery': randomUUID(),
          'x-hub-signature-256': signatureOf(Buffer.from('{}')),
        }),
      413,
      'too_large',
    );
  });

  test('regression: a chunked webhook body over the 25 MB cap was read whole', async () => {
    // No Content-Length: the cap must hold as the bytes arrive. Signed, so only its size is wrong.
    const body = Buffer.concat([Buffer.from(fixture), Buffer.alloc(CAP, ' ')]);
    const signature = signatureOf(body);
    await expectRefused(
      async () => {
        const response = await fetch(`${server.url}/api/github/webhooks`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'x-github-event': 'issues',
            'x-github-delivery': randomUUID(),
            'x-hub-signature-256': signature,
          },
          body: chunked(body, 1 << 20),
          duplex: 'half',
        });
        return { status: response.status, text: await response.text() };
      },
      413,
      'too_large',
    );
  });

  test('regression: a webhook with invalid UTF-8 was refused as a bad signature', async () => {
    // GitHub signs bytes; these bytes are signed correctly and are not UTF-8.
    const error = await expectRefused(
      () => post(readBad('bodies/invalid-utf8.bin')),
      400,
      'invalid',
    );
    expect(error).toMatch(/UTF-8/);
    expect(error).not.toMatch(/signature/);
  });

  test('regression: a signed webhook whose JSON is not an object was answered 500, or recorded', async () => {
    for (const name of ['string.json', 'number.json', 'null.json', 'array.json']) {
      const error = await expectRefused(() => post(readBad(`bodies/${name}`)), 400, 'invalid');
      expect(error).toBe('the payload is not a JSON object');
    }
  });

  test('regression: a webhook with an empty X-GitHub-Event was answered 500', async () => {
    const error = await expectRefused(
      () => post(fixture, { 'x-github-event': '' }),
      400,
      'invalid',
    );
    expect(error).toMatch(/X-GitHub-Event/);
  });
});

describe('accepted: recorded, its text neutralised exactly as documented', () => {
  test('nesting 100,000 levels deep inside a real payload', async () => {
    const deep = `${fixture.trimEnd().slice(0, -1)}, "deep": ${'['.repeat(100_000)}${']'.repeat(100_000)}}`;
    const sent = await post(deep);
    expect(sent.status).toBe(200);
    expect(await recorded(sent.id)).toMatchObject({
      disposition: 'created',
      title: `${PREFIX}Spelling error in the README file`,
    });
  });

  test('a 2 MB title and a 20 MB body: one line of 200 characters, a body of 16,384', async () => {
    const sent = await post(
      withIssue({ title: 't'.repeat(2_000_000), body: 'b'.repeat(20_000_000) }),
    );
    expect(sent.status).toBe(200);
    const row = await recorded(sent.id);
    expect(row!.title).toBe(`${PREFIX}${'t'.repeat(200 - PREFIX.length - 1)}…`);
    expect(row!.body).toBe(`${'b'.repeat(16_383)}…`);
  });

  test.each([...STRINGS.stored_as_sent, ...STRINGS.not_storable].map((s) => [s.name, s]))(
    'hostile text (%s) in the issue title and body',
    async (_, s) => {
      const sent = await post(withIssue({ title: s.text, body: s.text }));
      expect(sent.status).toBe(200);
      expect(await recorded(sent.id)).toMatchObject({
        disposition: 'created',
        title: `${PREFIX}${s.title}`,
        body: s.body,
      });
    },
  );
});
