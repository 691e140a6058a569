import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  BAD_BODIES,
  chunked,
  countRows,
  expectNothingLeaked,
  postDeclaringLength,
  readBad,
  STRINGS,
} from '../support/bad-input.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import {
  addSource,
  giteaHeaders,
  gitlabHeaders,
  linearHeaders,
  readSourceFixture,
  setRules,
  standardHeaders,
} from './support/sources.js';

// The bad-input corpus thrown at each source's URL: every refusal is a 4xx `{error, code}` that
// stores nothing — but for GitLab, which disables a hook that keeps getting 4xx: there anything
// it authenticated is answered 200 and recorded unreadable, and makes nothing.

const CAP = 25 * 1024 * 1024;
let server: TestServer;
const secrets: Record<string, string> = {};

type Signer = (body: Buffer) => Promise<Record<string, string>>;
const SIGNERS: Record<string, Signer> = {
  gitea: (body) => Promise.resolve(giteaHeaders('gitea', 'issue_comment', body, secrets.gitea!)),
  forgejo: (body) =>
    Promise.resolve(giteaHeaders('forgejo', 'issue_comment', body, secrets.forgejo!)),
  linear: (body) => Promise.resolve(linearHeaders(body, secrets.linear!, 'Comment')),
  'standard-webhooks': async (body) =>
    standardHeaders(body.toString(), secrets['standard-webhooks']!),
  gitlab: () => Promise.resolve(gitlabHeaders('note', secrets.gitlab!)),
};

beforeAll(async () => {
  server = await startTestServer();
  for (const kind of Object.keys(SIGNERS)) {
    const added = await addSource(server, {
      kind,
      name: kind,
      ...(kind === 'linear' ? { secret: 'lin_wh_bad_input_secret_0123456789' } : {}),
    });
    secrets[kind] = added.secret;
    await setRules(server, kind, 'trust:\n  logins: [unknwon]\n');
  }
});
afterAll(() => server.stop());

async function post(kind: string, body: Buffer, headers: Record<string, string | null>) {
  const response = await fetch(`${server.url}/api/sources/${kind}/webhooks`, {
    method: 'POST',
    headers: Object.fromEntries(
      Object.entries({ 'content-type': 'application/json', ...headers }).filter(
        ([, v]) => v !== null,
      ),
    ) as Record<string, string>,
    body,
  });
  return { status: response.status, text: await response.text() };
}

async function expectRefused(
  send: () => Promise<{ status: number; text: string }>,
  status: number | number[],
  code?: string,
) {
  const before = await countRows(server.sql);
  const [{ n: deliveries }] = await server.sql<
    [{ n: number }]
  >`select count(*)::int as n from deliveries`;
  const answer = await send();
  expect([status].flat(), answer.text).toContain(answer.status);
  const body = JSON.parse(answer.text) as { error: string; code: string };
  expect(body).toEqual({ error: expect.any(String), code: code ?? expect.any(String) });
  expectNothingLeaked(answer.text);
  expect(await countRows(server.sql)).toEqual(before);
  const [{ n: after }] = await server.sql<
    [{ n: number }]
  >`select count(*)::int as n from deliveries`;
  expect(after).toBe(deliveries);
  expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  return body.error;
}

const REFUSING = ['gitea', 'forgejo', 'linear', 'standard-webhooks'];

describe.each(REFUSING)('%s: refused with a 4xx, nothing stored', (kind) => {
  test.each(BAD_BODIES.map((name) => [name]))(
    'the corpus body %s, correctly signed',
    async (name) => {
      const body = readBad(`bodies/${name}`);
      // Linear's signature check reads webhookTimestamp inside the signed body, so a body without
      // one (all of these) is refused as not authenticated; the others say it is not JSON.
      await expectRefused(
        async () => post(kind, body, await SIGNERS[kind]!(body)),
        kind === 'linear' ? [400, 401] : 400,
      );
    },
  );

  test.each([
    ['no content type', { 'content-type': null }],
    ['text/plain', { 'content-type': 'text/plain' }],
    [
      'a form (Gitea can be set to send one)',
      { 'content-type': 'application/x-www-form-urlencoded' },
    ],
    ['JSON in another charset', { 'content-type': 'application/json; charset=utf-16' }],
  ])('%s: 415', async (_, headers) => {
    const body = Buffer.from(await readSourceFixture('gitea', 'issue_comment.created.command'));
    await expectRefused(
      async () => post(kind, body, { ...(await SIGNERS[kind]!(body)), ...headers }),
      415,
      'unsupported_media_type',
    );
  });

  test('a body declared over the 25 MB cap: 413 before it is read', async () => {
    await expectRefused(
      () =>
        postDeclaringLength(new URL(`/api/sources/${kind}/webhooks`, server.url), {
          'content-type': 'application/json',
          'content-length': String(CAP + 1),
        }),
      413,
      'too_large',
    );
  });

  test('a chunked body over the cap: 413 as the bytes arrive', async () => {
    const body = Buffer.concat([Buffer.from('{"a":"'), Buffer.alloc(CAP, 'a'), Buffer.from('"}')]);
    const headers = await SIGNERS[kind]!(Buffer.from('{}'));
    await expectRefused(
      async () => {
        const response = await fetch(`${server.url}/api/sources/${kind}/webhooks`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body: chunked(body, 1 << 20),
          duplex: 'half',
        });
        return { status: response.status, text: await response.text() };
      },
      413,
      'too_large',
    );
  });

  test('no signature, an empty one, one of other bytes: 401', async () => {
    const body = Buffer.from(await readSourceFixture('gitea', 'issue_comment.created.command'));
    const headers = await SIGNERS[kind]!(body);
    const signatureHeaders = Object.keys(headers).filter((name) => /signature/i.test(name));
    const none = Object.fromEntries(signatureHeaders.map((name) => [name, null]));
    await expectRefused(() => post(kind, body, { ...headers, ...none }), 401, 'unauthenticated');
    const empty = Object.fromEntries(signatureHeaders.map((name) => [name, '']));
    await expectRefused(() => post(kind, body, { ...headers, ...empty }), [400, 401]);
    const other = await SIGNERS[kind]!(Buffer.concat([body, Buffer.from(' ')]));
    await expectRefused(() => post(kind, body, other), 401, 'unauthenticated');
  });
});

describe('gitlab: authentication alone is refused', () => {
  test.each(BAD_BODIES.map((name) => [name]))(
    'the corpus body %s, with the token: 200, unreadable, no todo',
    async (name) => {
      const [{ n: todos }] = await server.sql<
        [{ n: number }]
      >`select count(*)::int as n from todos`;
      const headers = await SIGNERS.gitlab!(Buffer.alloc(0));
      const answer = await post('gitlab', readBad(`bodies/${name}`), headers);
      expect(answer.status, answer.text).toBe(200);
      expect(JSON.parse(answer.text).delivery).toMatchObject({
        disposition: 'unreadable',
        todo_id: null,
      });
      const [{ n: after }] = await server.sql<
        [{ n: number }]
      >`select count(*)::int as n from todos`;
      expect(after).toBe(todos);
    },
  );

  test('a wrong token: 401, nothing stored', async () => {
    const body = Buffer.from(await readSourceFixture('gitlab', 'note.create.command'));
    await expectRefused(
      () => post('gitlab', body, gitlabHeaders('note', 'wrong token, wrong')),
      401,
      'unauthenticated',
    );
  });
});

describe('accepted: hostile text is neutralised exactly as documented', () => {
  const PREFIX = 'comment by @unknwon on #1 in gogits/hello-world: ';
  test.each([...STRINGS.stored_as_sent, ...STRINGS.not_storable].map((s) => [s.name, s]))(
    'hostile text (%s) in a Gitea comment',
    async (_, s) => {
      const payload = JSON.parse(await readSourceFixture('gitea', 'issue_comment.created.command'));
      payload.comment.body = `/switchboard ${s.text}`;
      payload.comment.id = Math.floor(Math.random() * 1e9);
      const body = Buffer.from(JSON.stringify(payload));
      const id = randomUUID();
      const answer = await post(
        'gitea',
        body,
        giteaHeaders('gitea', 'issue_comment', body, secrets.gitea!, id),
      );
      expect(answer.status, answer.text).toBe(200);
      const [todo] = await server.sql<{ title: string; body: string }[]>`
        select t.title, t.body from deliveries d join todos t on t.id = d.todo_id
        where d.delivery_id = ${id}`;
      // A comment's title is its first line: the rest of a multi-line text is in the body.
      if (!/[\n\r\u2028\u2029]/.test(s.text)) {
        expect(todo!.title).toBe(`${PREFIX}/switchboard ${s.title}`.slice(0, 200));
      } else expect(todo!.title).not.toMatch(/[\n\r]/);
      expect(todo!.body.startsWith(`/switchboard ${s.body}`)).toBe(true);
    },
  );
});
