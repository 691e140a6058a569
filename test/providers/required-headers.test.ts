import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { deliver as deliverToGitHub, readFixture } from '../github/deliver.js';
import { isolateFromGitHub } from '../github/github-app.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import {
  addSource,
  freshLinearBody,
  giteaHeaders,
  gitlabHeaders,
  linearHeaders,
  postToSource,
  readSourceFixture,
  setRules,
  type AddedSource,
} from './support/sources.js';

// What every provider's intake owes a delivery that lacks a header its provider always sends,
// or that could not be read: a 400 naming the header (GitLab: a 200 `unreadable`, since GitLab
// disables a hook that keeps failing), and no hold on its delivery id or its body, so that the
// corrected delivery is taken for what it is. Asserted over HTTP only, at each provider's URL.

const LINEAR_SECRET = 'lin_wh_required_headers_0123456789abcdef';
let server: TestServer;
let gitea: AddedSource;
let forgejo: AddedSource;
let gitlab: AddedSource;

beforeAll(async () => {
  isolateFromGitHub();
  server = await startTestServer();
  gitea = await addSource(server, { kind: 'gitea', name: 'code' });
  forgejo = await addSource(server, { kind: 'forgejo', name: 'forge' });
  gitlab = await addSource(server, { kind: 'gitlab', name: 'lab' });
  await addSource(server, { kind: 'linear', name: 'tracker', secret: LINEAR_SECRET });
  const trust = 'trust:\n  logins: [unknwon, gogits, root, sytses, ada@example.com]\n';
  for (const name of ['code', 'forge', 'lab', 'tracker']) await setRules(server, name, trust);
});
afterAll(() => server.stop());

/** Every row a source recorded under this delivery id, oldest first. */
async function recorded(source: string, deliveryId: string) {
  return server.sql<{ disposition: string; note: string | null; todo_id: number | null }[]>`
    select disposition::text, note, todo_id from deliveries
    where source = ${source} and delivery_id = ${deliveryId} order by id`;
}

const without = (headers: Record<string, string>, ...names: string[]) =>
  Object.fromEntries(
    Object.entries(headers).map(([name, value]) => [name, names.includes(name) ? null : value]),
  );

describe('a header the provider always sends, missing: 400 naming it, nothing recorded', () => {
  test('regression: a Gitea delivery without X-Gitea-Event was accepted as unknown.created, and the corrected one then refused as a replay', async () => {
    const body = await readSourceFixture('gitea', 'pull_request.opened');
    const first = 'd-001';
    const headers = giteaHeaders('gitea', 'pull_request', body, gitea.secret, first);
    const bare = await postToSource(server, 'code', body, without(headers, 'X-Gitea-Event'), first);
    expect(bare.status, JSON.stringify(bare.body)).toBe(400);
    expect(bare.body).toEqual({
      error: 'required header missing: X-Gitea-Event (Gitea sends it with every delivery)',
      code: 'invalid',
    });
    expect(await recorded('code', first)).toEqual([]);

    // Resent correctly, as Gitea's Replay does: the same signed body under a new id.
    const second = 'd-002';
    const resent = giteaHeaders('gitea', 'pull_request', body, gitea.secret, second);
    const again = await postToSource(server, 'code', body, resent, second);
    expect(again.status).toBe(200);
    expect(again.body.delivery).toMatchObject({ disposition: 'created', note: null });
    expect(again.body.delivery.todo_id).toEqual(expect.any(Number));
  });

  test.each([
    ['gitea', 'X-Gitea-Delivery', ['X-Gitea-Delivery'], 'X-Gitea-Delivery (Gitea'],
    [
      'forgejo',
      'X-Forgejo-Event or X-Gitea-Event',
      ['X-Forgejo-Event', 'X-Gitea-Event'],
      'X-Forgejo-Event or X-Gitea-Event (Forgejo',
    ],
    [
      'forgejo',
      'X-Forgejo-Delivery or X-Gitea-Delivery',
      ['X-Forgejo-Delivery', 'X-Gitea-Delivery'],
      'X-Forgejo-Delivery or X-Gitea-Delivery (Forgejo',
    ],
  ] as const)('%s without %s', async (kind, _named, drop, said) => {
    const source = kind === 'gitea' ? gitea : forgejo;
    const body = await readSourceFixture('gitea', 'issue_comment.created.command');
    const id = randomUUID();
    const headers = giteaHeaders(kind, 'issue_comment', body, source.secret, id);
    const sent = await postToSource(server, source.name, body, without(headers, ...drop), id);
    expect(sent.status).toBe(400);
    expect(sent.body.error).toContain(`required header missing: ${said}`);
    expect(await recorded(source.name, id)).toEqual([]);
  });

  test('regression: a Linear delivery without Linear-Event was accepted', async () => {
    const body = freshLinearBody(await readSourceFixture('linear', 'Issue.create.labeled'));
    const id = randomUUID();
    const headers = linearHeaders(body, LINEAR_SECRET, 'Issue', id);
    const bare = await postToSource(server, 'tracker', body, without(headers, 'Linear-Event'), id);
    expect(bare.status).toBe(400);
    expect(bare.body.error).toBe(
      'required header missing: Linear-Event (Linear sends it with every delivery)',
    );
    expect(await recorded('tracker', id)).toEqual([]);
    const again = await postToSource(server, 'tracker', body, headers, id);
    expect(again.body.delivery).toMatchObject({ disposition: 'created' });
  });

  test('Linear without Linear-Delivery', async () => {
    const body = freshLinearBody(await readSourceFixture('linear', 'Comment.create.mention'));
    const headers = linearHeaders(body, LINEAR_SECRET, 'Comment');
    const sent = await postToSource(
      server,
      'tracker',
      body,
      without(headers, 'Linear-Delivery'),
      '',
    );
    expect(sent.status).toBe(400);
    expect(sent.body.error).toContain('required header missing: Linear-Delivery');
  });

  test('GitHub without X-GitHub-Event', async () => {
    const body = await readFixture('pull_request.opened');
    const { sign } = await import('@octokit/webhooks-methods');
    const response = await fetch(`${server.url}/api/github/webhooks`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-github-delivery': randomUUID(),
        'x-hub-signature-256': await sign('test-webhook-secret', body),
      },
      body,
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      error: expect.stringContaining('x-github-event'),
    });
  });
});

describe('GitLab: answered 200 unreadable, holding no slot', () => {
  test('regression: a GitLab delivery without X-Gitlab-Event was read from its body, so its corrected resend was a duplicate', async () => {
    const payload = JSON.parse(await readSourceFixture('gitlab', 'merge_request.open'));
    payload.object_attributes.iid = 41;
    const body = JSON.stringify(payload);
    const id = randomUUID();
    const headers = gitlabHeaders('merge_request', gitlab.secret, id);
    const bare = await postToSource(server, 'lab', body, without(headers, 'X-Gitlab-Event'), id);
    expect(bare.status).toBe(200);
    expect(bare.body.delivery).toMatchObject({
      disposition: 'unreadable',
      todo_id: null,
      note: 'required header missing: X-Gitlab-Event (GitLab sends it with every delivery)',
    });

    // GitLab's retry keeps the Idempotency-Key; a resend by hand may carry a new one.
    const retried = await postToSource(server, 'lab', body, headers, id);
    expect(retried.status).toBe(200);
    expect(retried.body.delivery).toMatchObject({ disposition: 'created' });
    expect(retried.body.delivery.todo_id).toEqual(expect.any(Number));
    expect((await recorded('lab', id)).map((row) => row.disposition)).toEqual([
      'unreadable',
      'created',
    ]);
  });

  test('regression: an unreadable GitLab delivery held its body against the same body under a new id', async () => {
    const payload = JSON.parse(await readSourceFixture('gitlab', 'merge_request.open'));
    payload.object_attributes.iid = 42;
    const body = JSON.stringify(payload);
    const first = randomUUID();
    const bare = await postToSource(
      server,
      'lab',
      body,
      without(gitlabHeaders('merge_request', gitlab.secret, first), 'X-Gitlab-Event'),
      first,
    );
    expect(bare.body.delivery).toMatchObject({ disposition: 'unreadable' });
    const second = randomUUID();
    const resent = await postToSource(
      server,
      'lab',
      body,
      gitlabHeaders('merge_request', gitlab.secret, second),
      second,
    );
    expect(resent.body.delivery).toMatchObject({ disposition: 'created', note: null });
  });

  test('regression: a GitLab body that was not JSON held its Idempotency-Key against the corrected body', async () => {
    const id = randomUUID();
    const headers = gitlabHeaders('merge_request', gitlab.secret, id);
    const broken = await postToSource(
      server,
      'lab',
      '{"object_kind": "merge_request", ',
      headers,
      id,
    );
    expect(broken.body.delivery).toMatchObject({
      disposition: 'unreadable',
      note: 'the body is not valid JSON',
    });
    const payload = JSON.parse(await readSourceFixture('gitlab', 'merge_request.open'));
    payload.object_attributes.iid = 43;
    const fixed = await postToSource(server, 'lab', JSON.stringify(payload), headers, id);
    expect(fixed.body.delivery).toMatchObject({ disposition: 'created' });
    // A retry of the recorded delivery is still a duplicate.
    const retry = await postToSource(server, 'lab', JSON.stringify(payload), headers, id);
    expect(retry.body.delivery).toMatchObject({ disposition: 'duplicate', todo_id: null });
  });
});

test('regression: an unreadable GitHub delivery held its X-GitHub-Delivery against the corrected one', async () => {
  const good = await readFixture('pull_request.opened');
  const payload = JSON.parse(good);
  payload.pull_request.title = 42; // not as GitHub documents it
  const id = randomUUID();
  const bad = await deliverToGitHub(server.url, 'pull_request.opened', {
    id,
    body: JSON.stringify(payload),
  });
  expect(bad.status).toBe(200);
  const rows = () =>
    server.sql<{ disposition: string; todo_id: number | null }[]>`
      select disposition::text, todo_id from deliveries where source = 'github' and delivery_id = ${id} order by id`;
  expect(await rows()).toEqual([{ disposition: 'unreadable', todo_id: null }]);
  const fixed = await deliverToGitHub(server.url, 'pull_request.opened', { id, body: good });
  expect(fixed.status).toBe(200);
  expect((await rows()).map((row) => row.disposition)).toEqual(['unreadable', 'created']);
});
