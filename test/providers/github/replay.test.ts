import { randomUUID } from 'node:crypto';
import { sign } from '@octokit/webhooks-methods';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { deliver, readFixture } from '../../github/deliver.js';
import { isolateFromGitHub } from '../../github/github-app.js';
import { startTestServer, WEBHOOK_SECRET, type TestServer } from '../../support/test-server.js';

// The production window: a day.
let server: TestServer;
beforeAll(async () => {
  isolateFromGitHub();
  server = await startTestServer({ githubTuning: { replayWindowMs: 24 * 3_600_000 } });
});
afterAll(() => server.stop());

const rowsOf = (ids: string[]) =>
  server.sql<{ delivery_id: string; disposition: string; todo_id: number | null; note: string }[]>`
    select delivery_id, disposition, todo_id, note from deliveries
    where delivery_id = any(${ids}) order by id`;

const todoCount = async () =>
  (await server.sql<[{ n: number }]>`select count(*)::int as n from todos`)[0].n;

test('regression: a captured delivery replayed under a new X-GitHub-Delivery made a new todo', async () => {
  const first = await deliver(server.url, 'issue_comment.created.command');
  const before = await todoCount();
  // The signature covers the body only: the same bytes and signature pass under any id.
  const replay = await deliver(server.url, 'issue_comment.created.command', { id: randomUUID() });
  expect([first.status, replay.status]).toEqual([200, 200]);
  expect(await todoCount()).toBe(before);
  expect(await rowsOf([first.id, replay.id])).toEqual([
    expect.objectContaining({ delivery_id: first.id, disposition: 'created' }),
    {
      delivery_id: replay.id,
      disposition: 'duplicate',
      todo_id: null,
      note: `a replay of delivery ${first.id} (the same signed body under another delivery id)`,
    },
  ]);
});

test('a replay under another event name is caught too: the event header is not signed either', async () => {
  const body = await readFixture('issues.labeled.switchboard');
  const first = await deliver(server.url, 'issues.labeled.switchboard');
  const before = await todoCount();
  const response = await fetch(`${server.url}/api/github/webhooks`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-github-event': 'pull_request',
      'x-github-delivery': randomUUID(),
      'x-hub-signature-256': await sign(WEBHOOK_SECRET, body),
    },
    body,
  });
  expect(response.status).toBe(200);
  expect(await todoCount()).toBe(before);
  const [row] = await server.sql`
    select disposition from deliveries where delivery_id <> ${first.id} order by id desc limit 1`;
  expect(row).toEqual({ disposition: 'duplicate' });
});

test('concurrent copies of one body under different ids make one todo', async () => {
  const payload = JSON.parse(await readFixture('issue_comment.created.command'));
  payload.comment.id = 77_000_001;
  const body = JSON.stringify(payload);
  const before = await todoCount();
  const sent = await Promise.all(
    Array.from({ length: 8 }, () => deliver(server.url, 'issue_comment.created.command', { body })),
  );
  expect(sent.map((s) => s.status)).toEqual(Array(8).fill(200));
  expect(await todoCount()).toBe(before + 1);
  const rows = await rowsOf(sent.map((s) => s.id));
  expect(rows.filter((row) => row.disposition === 'created')).toHaveLength(1);
  expect(rows.filter((row) => row.disposition === 'duplicate')).toHaveLength(7);
});

test('a different body under a new id is a new delivery', async () => {
  const payload = JSON.parse(await readFixture('issue_comment.created.command'));
  payload.comment.id = 77_000_002;
  const sent = await deliver(server.url, 'issue_comment.created.command', {
    body: JSON.stringify(payload),
  });
  expect((await rowsOf([sent.id]))[0]).toMatchObject({ disposition: 'created' });
});

test('a body older than the window is not a replay', async () => {
  const payload = JSON.parse(await readFixture('issue_comment.created.command'));
  payload.comment.id = 77_000_003;
  const body = JSON.stringify(payload);
  const first = await deliver(server.url, 'issue_comment.created.command', { body });
  await server.sql`
    update deliveries set received_at = now() - interval '25 hours' where delivery_id = ${first.id}`;
  // The todo of the first was finished meanwhile: its idempotency key is free again.
  await server.sql`update todos set state = 'canceled', available_at = null
    where idempotency_key like ${`github:${first.id}:%`}`;
  const later = await deliver(server.url, 'issue_comment.created.command', { body });
  expect((await rowsOf([later.id]))[0]).toMatchObject({ disposition: 'created' });
});

test('the delivery records what the rules read, and the body’s hash, never the payload', async () => {
  const sent = await deliver(server.url, 'pull_request.review_requested');
  const [row] = await server.sql<{ facts: any; hash: string }[]>`
    select facts, encode(body_sha256, 'hex') as hash from deliveries where delivery_id = ${sent.id}`;
  expect(row!.hash).toMatch(/^[0-9a-f]{64}$/);
  expect(row!.facts).toMatchObject({
    event: 'pull_request',
    action: 'review_requested',
    repository: { fullName: 'Codertocat/Hello-World' },
    sender: { login: 'Codertocat', type: 'User' },
    fields: {
      action: 'review_requested',
      pull_request: { number: 2, title: 'Update the README with new information.' },
      requested_reviewer: { login: 'octocat' },
    },
  });
  // Only the fields a rule reads: no avatars, no node ids, no repository settings.
  expect(JSON.stringify(row!.facts)).not.toMatch(/avatar_url|node_id|ssh_url/);
});
