import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestServer, type TestServer } from '../../support/test-server.js';
import {
  addSource,
  countSourceRows,
  freshLinearBody,
  linearHeaders,
  outcomeOf,
  postToSource,
  readSourceFixture,
  setRules,
} from '../support/sources.js';

// Linear makes the signing secret; the admin pastes it.
const SECRET = 'lin_wh_6d1c9f0b2a7e4c3d8f5a1b0e9c7d6a5f';
let server: TestServer;

beforeAll(async () => {
  server = await startTestServer();
  await addSource(server, { kind: 'linear', name: 'tracker', secret: SECRET });
  await setRules(
    server,
    'tracker',
    [
      'trust:',
      '  logins: [ada@example.com]',
      'rules:',
      '  issue_assigned: { assignees: [switchboard@example.com] }',
    ].join('\n'),
  );
});
afterAll(() => server.stop());

async function deliver(
  fixture: string,
  options: { id?: string; secret?: string; body?: string; signature?: string } = {},
) {
  const body = options.body ?? freshLinearBody(await readSourceFixture('linear', fixture));
  const id = options.id ?? randomUUID();
  const headers = linearHeaders(body, options.secret ?? SECRET, fixture.split('.')[0]!, id);
  if (options.signature) headers['Linear-Signature'] = options.signature;
  return postToSource(server, 'tracker', body, headers, id);
}

describe('every default rule makes the right todo', () => {
  test.each([
    {
      fixture: 'Issue.create.labeled',
      kind: 'linear.issue.create',
      title: 'issue KOR-11 labelled switchboard in KOR: webhook test',
      url: 'https://linear.app/korosuke613/issue/KOR-11/webhook-test',
    },
    {
      fixture: 'Issue.update.assigned',
      kind: 'linear.issue.update',
      title: 'issue KOR-11 assigned to switchboard in KOR: webhook test',
      url: 'https://linear.app/korosuke613/issue/KOR-11/webhook-test',
    },
    {
      fixture: 'Comment.create.mention',
      kind: 'linear.comment.create',
      title:
        'comment by ada@example.com on KOR-11 in Linear: @switchboard can you reproduce this on staging?',
      url: 'https://linear.app/korosuke613/issue/KOR-11/webhook-test#comment-4f6e2d1c',
    },
  ])('$fixture', async ({ fixture, kind, title, url }) => {
    const sent = await deliver(fixture);
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    expect(await outcomeOf(server, 'tracker', sent.id)).toMatchObject({
      disposition: 'created',
      note: null,
      queue: 'issues',
      kind,
      title,
      url,
      source: 'linear',
      attributed_to: 'ada@example.com',
    });
  });

  test('an integration (not a user) is a bot: nothing', async () => {
    const sent = await deliver('Comment.create.integration');
    expect(await outcomeOf(server, 'tracker', sent.id)).toMatchObject({
      disposition: 'bot_sender',
      todo_id: null,
    });
  });
});

describe('verification', () => {
  test('a bad signature: 401, nothing stored', async () => {
    const before = await countSourceRows(server);
    const sent = await deliver('Comment.create.mention', {
      secret: 'lin_wh_not_this_one_at_all_0000',
    });
    expect(sent.status).toBe(401);
    expect(await countSourceRows(server)).toEqual(before);
  });

  test('a stale webhookTimestamp (over 60 s): 401, even signed correctly', async () => {
    const body = freshLinearBody(
      await readSourceFixture('linear', 'Comment.create.mention'),
      Date.now() - 61_000,
    );
    const sent = await deliver('Comment.create.mention', { body });
    expect(sent.status).toBe(401);
    expect(sent.body.error).toBe('webhookTimestamp is more than 60 seconds from now');
  });

  test('a future webhookTimestamp (over 60 s): 401', async () => {
    const body = freshLinearBody(
      await readSourceFixture('linear', 'Comment.create.mention'),
      Date.now() + 120_000,
    );
    expect((await deliver('Comment.create.mention', { body })).status).toBe(401);
  });

  test('a replay under a new Linear-Delivery within the minute: duplicate', async () => {
    const body = freshLinearBody(
      (await readSourceFixture('linear', 'Comment.create.mention')).replace(
        'staging',
        'production',
      ),
    );
    const first = await deliver('Comment.create.mention', { body });
    const replay = await deliver('Comment.create.mention', { body });
    expect(first.body.delivery.disposition).toBe('created');
    expect(replay.body.delivery).toMatchObject({ disposition: 'duplicate', todo_id: null });
  });
});
