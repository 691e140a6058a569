import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { sign } from '@octokit/webhooks-methods';
import { startTestServer, WEBHOOK_SECRET, type TestServer } from '../support/test-server.js';
import { deliver, storedFor } from './deliver.js';
import { isolateFromGitHub } from './github-app.js';

let server: TestServer;
beforeAll(async () => {
  isolateFromGitHub();
  server = await startTestServer();
});
afterAll(() => server.stop());

const stored = (id: string) => storedFor(server.sql, id);

describe('signatures', () => {
  test('a signature made with another secret: 401, nothing stored', async () => {
    const sent = await deliver(server.url, 'issue_comment.created.command', { secret: 'not-it' });
    expect(sent.status).toBe(401);
    expect(JSON.parse(sent.body).error).toMatch(/signature does not match/);
    expect(await stored(sent.id)).toEqual({ deliveries: 0, todos: 0 });
  });

  test('a body changed after signing: 401, nothing stored', async () => {
    const sent = await deliver(server.url, 'issue_comment.created.command', {
      signature: await sign(WEBHOOK_SECRET, '{"action":"created"}'),
    });
    expect(sent.status).toBe(401);
    expect(await stored(sent.id)).toEqual({ deliveries: 0, todos: 0 });
  });

  test('no signature: 401, nothing stored', async () => {
    const sent = await deliver(server.url, 'issue_comment.created.command', { signature: null });
    expect(sent.status).toBe(401);
    expect(JSON.parse(sent.body).error).toMatch(/x-hub-signature-256/);
    expect(await stored(sent.id)).toEqual({ deliveries: 0, todos: 0 });
  });

  test('a delivery id GitHub would never send: 400, nothing stored', async () => {
    const sent = await deliver(server.url, 'ping', { id: 'x'.repeat(200) });
    expect(sent.status).toBe(400);
    expect(JSON.parse(sent.body)).toEqual({
      error: 'X-GitHub-Delivery must be 1 to 128 printable characters',
      code: 'invalid',
    });
    expect(await stored(sent.id)).toEqual({ deliveries: 0, todos: 0 });
  });

  test('without WEBHOOK_SECRET every delivery is refused', async () => {
    const unguarded = await startTestServer({ webhookSecret: null });
    try {
      const sent = await deliver(unguarded.url, 'issue_comment.created.command');
      expect(sent.status).toBe(503);
      expect(JSON.parse(sent.body).code).toBe('webhooks_disabled');
      const [{ n }] = await unguarded.sql<
        [{ n: number }]
      >`select count(*)::int as n from deliveries`;
      expect(n).toBe(0);
    } finally {
      await unguarded.stop();
    }
  });
});

describe('redelivery', () => {
  test('the same delivery id again: 2xx, nothing new, and the redelivery is on record', async () => {
    const first = await deliver(server.url, 'issue_comment.created.command');
    const again = await deliver(server.url, 'issue_comment.created.command', { id: first.id });
    expect([first.status, again.status]).toEqual([200, 200]);
    expect(await stored(first.id)).toEqual({ deliveries: 2, todos: 1 });
    const rows = await server.sql`
      select disposition, todo_id from deliveries where delivery_id = ${first.id} order by id`;
    expect(rows.map((row) => row.disposition)).toEqual(['created', 'duplicate']);
    expect(rows[1]!.todo_id).toBeNull();
  });

  test('concurrent redeliveries make one todo; every one is answered 2xx', async () => {
    const id = crypto.randomUUID();
    const sent = await Promise.all(
      Array.from({ length: 12 }, () =>
        deliver(server.url, 'pull_request.review_requested', { id }),
      ),
    );
    expect(sent.map((delivery) => delivery.status)).toEqual(Array(12).fill(200));
    expect(await stored(id)).toEqual({ deliveries: 12, todos: 1 });
    const [{ recorded }] = await server.sql<[{ recorded: number }]>`
      select count(*)::int as recorded from deliveries
      where delivery_id = ${id} and disposition = 'created'`;
    expect(recorded).toBe(1);
  });

  test('a replay the delivery record no longer catches still makes no second todo', async () => {
    const first = await deliver(server.url, 'issues.labeled.switchboard');
    // As if the delivery rows had been pruned: only the todo's idempotency key is left.
    await server.sql`delete from deliveries where delivery_id = ${first.id}`;
    const replay = await deliver(server.url, 'issues.labeled.switchboard', { id: first.id });
    expect(replay.status).toBe(200);
    expect(await stored(first.id)).toEqual({ deliveries: 1, todos: 1 });
    const [row] = await server.sql`
      select disposition, note from deliveries where delivery_id = ${first.id}`;
    expect(row).toMatchObject({
      disposition: 'created',
      note: expect.stringMatching(/^todo #\d+ already existed for this delivery/),
    });
  });

  test('a redelivery of a delivery that made nothing is a duplicate too', async () => {
    const first = await deliver(server.url, 'ping');
    await deliver(server.url, 'ping', { id: first.id });
    const rows = await server.sql`
      select disposition from deliveries where delivery_id = ${first.id} order by id`;
    expect(rows.map((row) => row.disposition)).toEqual(['no_rule', 'duplicate']);
  });

  test('deliveries are counted by event and disposition', async () => {
    const metrics = await (
      await fetch(`${server.url}/metrics`, {
        headers: { authorization: `Bearer ${server.adminToken}` },
      })
    ).text();
    expect(metrics).toMatch(
      /switchboard_github_deliveries_total\{event="issue_comment",disposition="duplicate"\} 1/,
    );
    expect(metrics).toMatch(
      /switchboard_github_deliveries_total\{event="pull_request",disposition="duplicate"\} 11/,
    );
  });
});
