import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestServer, type TestServer } from '../../support/test-server.js';
import {
  addSource,
  countSourceRows,
  giteaHeaders,
  outcomeOf,
  postToSource,
  readSourceFixture,
  setRules,
  type AddedSource,
} from '../support/sources.js';

let server: TestServer;
let gitea: AddedSource;
let forgejo: AddedSource;

beforeAll(async () => {
  server = await startTestServer();
  gitea = await addSource(server, { kind: 'gitea', name: 'code' });
  forgejo = await addSource(server, { kind: 'forgejo', name: 'forge' });
  const trust = ['trust:', '  logins: [unknwon, gogits]'].join('\n');
  await setRules(server, 'code', trust);
  await setRules(server, 'forge', trust);
});
afterAll(() => server.stop());

async function deliver(
  source: AddedSource,
  fixture: string,
  options: { id?: string; secret?: string; body?: string } = {},
) {
  const body = options.body ?? (await readSourceFixture('gitea', fixture));
  const id = options.id ?? randomUUID();
  const headers = giteaHeaders(
    source.kind as 'gitea' | 'forgejo',
    fixture.split('.')[0]!,
    body,
    options.secret ?? source.secret,
    id,
  );
  return postToSource(server, source.name, body, headers, id);
}

describe('every default rule makes the right todo', () => {
  test.each([
    {
      fixture: 'issues.label_updated',
      queue: 'issues',
      kind: 'gitea.issues.label_updated',
      title: 'issue #1 labelled switchboard in gogits/hello-world: Problem',
      url: 'http://try.gitea.io/gogits/hello-world/issues/1',
    },
    {
      fixture: 'issue_comment.created.command',
      queue: 'issues',
      kind: 'gitea.issue_comment.created',
      title:
        'comment by @unknwon on #1 in gogits/hello-world: /switchboard please look at this problem',
      url: 'http://try.gitea.io/gogits/hello-world/issues/1#issuecomment-43',
    },
    {
      fixture: 'pull_request.opened',
      queue: 'reviews',
      kind: 'gitea.pull_request.opened',
      title: 'PR #2 opened in gogits/hello-world: huge improvements',
      url: 'http://try.gitea.io/gogits/hello-world/pulls/2',
    },
    {
      fixture: 'pull_request.review_requested',
      queue: 'reviews',
      kind: 'gitea.pull_request.review_requested',
      title: 'review requested from @a_nice_user on PR #2 in gogits/hello-world: huge improvements',
      url: 'http://try.gitea.io/gogits/hello-world/pulls/2',
    },
  ])('$fixture → $queue', async ({ fixture, queue, kind, title, url }) => {
    const sent = await deliver(gitea, fixture);
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    expect(await outcomeOf(server, 'code', sent.id)).toMatchObject({
      disposition: 'created',
      note: null,
      subject: 'gogits/hello-world',
      actor: 'unknwon',
      queue,
      kind,
      title,
      url,
      state: 'pending',
      source: 'gitea',
      attributed_to: 'unknwon',
    });
  });

  test('a comment that does not address switchboard makes nothing', async () => {
    const sent = await deliver(gitea, 'issue_comment.created');
    expect(await outcomeOf(server, 'code', sent.id)).toMatchObject({
      disposition: 'no_rule',
      todo_id: null,
    });
  });

  test('an assignment to a login the rules do not name makes nothing; to one they name, a todo', async () => {
    const first = await deliver(gitea, 'issues.assigned');
    expect((await outcomeOf(server, 'code', first.id))!.disposition).toBe('no_rule');
    await setRules(
      server,
      'code',
      ['trust:', '  logins: [unknwon]', 'rules:', '  issue_assigned: { logins: [unknwon] }'].join(
        '\n',
      ),
    );
    const second = await deliver(gitea, 'issues.assigned', {
      body: (await readSourceFixture('gitea', 'issues.assigned')).replace('"Got it"', '"Got it."'),
    });
    expect(await outcomeOf(server, 'code', second.id)).toMatchObject({
      disposition: 'created',
      title: 'issue #1 assigned to @unknwon in gogits/hello-world: Problem',
    });
  });
});

describe('trust', () => {
  test('a sender not on trust.logins makes a quarantined todo, saying why', async () => {
    const sent = await deliver(gitea, 'issue_comment.created.untrusted');
    expect(await outcomeOf(server, 'code', sent.id)).toMatchObject({
      disposition: 'quarantined',
      state: 'quarantined',
      note: "stranger is not on this source's trust.logins",
      // Neutralised at ingest like every todo.
      body: expect.stringContaining('＜/channel>'),
    });
  });

  test('a bot (Gitea Actions) makes nothing', async () => {
    const sent = await deliver(gitea, 'issue_comment.created.bot');
    expect(await outcomeOf(server, 'code', sent.id)).toMatchObject({
      disposition: 'bot_sender',
      todo_id: null,
      note: "gitea-actions is a bot not on this source's trust.bots",
    });
  });
});

describe('Forgejo', () => {
  test('its own headers, the same payloads', async () => {
    const sent = await deliver(forgejo, 'pull_request.opened');
    expect(sent.status).toBe(200);
    expect(await outcomeOf(server, 'forge', sent.id)).toMatchObject({
      disposition: 'created',
      kind: 'forgejo.pull_request.opened',
      source: 'forgejo',
    });
  });

  test('only X-Hub-Signature-256 is enough', async () => {
    const body = await readSourceFixture('gitea', 'issue_comment.created.command');
    const id = randomUUID();
    const headers: Record<string, string | null> = giteaHeaders(
      'forgejo',
      'issue_comment',
      body,
      forgejo.secret,
      id,
    );
    headers['X-Forgejo-Signature'] = null;
    headers['X-Gitea-Signature'] = null;
    const sent = await postToSource(server, 'forge', body, headers, id);
    expect(sent.status).toBe(200);
  });
});

describe('verification and duplicates', () => {
  test('a bad signature: 401, nothing stored', async () => {
    const before = await countSourceRows(server);
    const sent = await deliver(gitea, 'issue_comment.created.command', {
      secret: 'another-secret-entirely',
    });
    expect(sent.status).toBe(401);
    expect(sent.body).toEqual({
      error: "the signature does not match the body under this source's secret",
      code: 'unauthenticated',
    });
    expect(await countSourceRows(server)).toEqual(before);
  });

  test('no signature at all: 401', async () => {
    const body = await readSourceFixture('gitea', 'pull_request.opened');
    const sent = await postToSource(
      server,
      'code',
      body,
      { 'X-Gitea-Delivery': randomUUID(), 'X-Gitea-Event': 'pull_request' },
      'x',
    );
    expect(sent.status).toBe(401);
  });

  test('a redelivery (same id) is a duplicate that makes nothing', async () => {
    const payload = JSON.parse(await readSourceFixture('gitea', 'pull_request.opened'));
    payload.number = payload.pull_request.number = 3;
    const body = JSON.stringify(payload);
    const first = await deliver(gitea, 'pull_request.opened', { body });
    const again = await deliver(gitea, 'pull_request.opened', { body, id: first.id });
    expect([first.status, again.status]).toEqual([200, 200]);
    expect(again.body.delivery).toMatchObject({ disposition: 'duplicate', todo_id: null });
  });

  test("regression: Gitea's Replay (a new delivery id, the same body) made a second todo", async () => {
    const payload = JSON.parse(await readSourceFixture('gitea', 'pull_request.opened'));
    payload.number = payload.pull_request.number = 4;
    const body = JSON.stringify(payload);
    const first = await deliver(gitea, 'pull_request.opened', { body });
    const replay = await deliver(gitea, 'pull_request.opened', { body });
    expect(first.body.delivery).toMatchObject({ disposition: 'created' });
    expect(replay.body.delivery).toEqual({
      id: expect.any(Number),
      disposition: 'duplicate',
      todo_id: null,
      note: `a replay of delivery ${first.id} (the same signed body under another delivery id)`,
    });
  });

  test('an unknown source: 404', async () => {
    const sent = await postToSource(server, 'nope', '{}', {}, 'x');
    expect(sent.status).toBe(404);
  });
});

test('deliveries are listed with their source, and counted by provider', async () => {
  const { body } = await server.api(server.adminToken, 'GET', '/deliveries?source=code&limit=3');
  expect(body.deliveries.length).toBe(3);
  for (const delivery of body.deliveries) {
    expect(delivery).toMatchObject({
      source: 'code',
      kind: 'gitea',
      subject: 'gogits/hello-world',
    });
    expect(Object.keys(delivery)).not.toContain('facts');
  }
  const metrics = await (
    await fetch(`${server.url}/metrics`, {
      headers: { authorization: `Bearer ${server.adminToken}` },
    })
  ).text();
  expect(metrics).toMatch(
    /switchboard_deliveries_total\{provider="gitea",source="code",disposition="created"\} \d+/,
  );
  expect(metrics).toMatch(
    /switchboard_deliveries_total\{provider="forgejo",source="forge",disposition="created"\} \d+/,
  );
});
