import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestServer, type TestServer } from '../../support/test-server.js';
import {
  addSource,
  countSourceRows,
  gitlabHeaders,
  outcomeOf,
  postToSource,
  readSourceFixture,
  setRules,
  standardHeaders,
  type AddedSource,
} from '../support/sources.js';

let server: TestServer;
let gitlab: AddedSource;
let signed: AddedSource;

beforeAll(async () => {
  server = await startTestServer();
  gitlab = await addSource(server, { kind: 'gitlab', name: 'lab' });
  // A hook with a signing token signs per Standard Webhooks.
  signed = await addSource(server, {
    kind: 'gitlab',
    name: 'lab-signed',
    secret: `whsec_${Buffer.from('gitlab signing token of 32 bytes').toString('base64')}`,
  });
  for (const name of ['lab', 'lab-signed']) {
    await setRules(server, name, ['trust:', '  logins: [sytses, root]'].join('\n'));
  }
});
afterAll(() => server.stop());

async function deliver(
  fixture: string,
  options: { id?: string; token?: string; body?: string } = {},
) {
  const body = options.body ?? (await readSourceFixture('gitlab', fixture));
  const id = options.id ?? randomUUID();
  const headers = gitlabHeaders(fixture.split('.')[0]!, options.token ?? gitlab.secret, id);
  return postToSource(server, 'lab', body, headers, id);
}

describe('every default rule makes the right todo', () => {
  test.each([
    {
      fixture: 'note.create.command',
      queue: 'issues',
      kind: 'gitlab.note.create',
      title: 'comment by @sytses on #1 in gitlab-org/hello-world: /switchboard fix the website',
      url: 'https://gitlab.com/gitlab-org/hello-world/issues/1#note_50771783',
    },
    {
      fixture: 'merge_request.open',
      queue: 'reviews',
      kind: 'gitlab.merge_request.open',
      title: 'MR !1 opened in gitlab-org/hello-world: update readme',
      url: 'https://gitlab.com/gitlab-org/hello-world/merge_requests/1',
    },
    {
      fixture: 'merge_request.update.reviewer',
      queue: 'reviews',
      kind: 'gitlab.merge_request.update',
      title: 'review requested from @ada on MR !1 in gitlab-org/hello-world: update readme',
      url: 'https://gitlab.com/gitlab-org/hello-world/merge_requests/1',
    },
    {
      fixture: 'pipeline.failed',
      queue: 'ci',
      kind: 'gitlab.pipeline.failed',
      title: 'pipeline #31 failed on master in gitlab-org/gitlab-test',
      url: 'http://example.com/gitlab-org/gitlab-test/-/pipelines/31',
    },
    {
      fixture: 'issue.update.labeled',
      queue: 'issues',
      kind: 'gitlab.issue.update',
      title: 'issue #1 labelled switchboard in gitlab-org/hello-world: found a bug',
      url: 'https://gitlab.com/gitlab-org/hello-world/issues/1',
    },
  ])('$fixture → $queue', async ({ fixture, queue, kind, title, url }) => {
    const sent = await deliver(fixture);
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    expect(await outcomeOf(server, 'lab', sent.id)).toMatchObject({
      disposition: 'created',
      note: null,
      queue,
      kind,
      title,
      url,
      state: 'pending',
      source: 'gitlab',
    });
  });

  test.each(['note.create', 'pipeline.success'])('%s makes nothing', async (fixture) => {
    const sent = await deliver(fixture);
    expect(await outcomeOf(server, 'lab', sent.id)).toMatchObject({ disposition: 'no_rule' });
  });

  test("a project access token's bot makes nothing", async () => {
    const sent = await deliver('note.create.bot');
    expect(await outcomeOf(server, 'lab', sent.id)).toMatchObject({ disposition: 'bot_sender' });
  });
});

describe('authentication', () => {
  test('a wrong X-Gitlab-Token: 401, nothing stored', async () => {
    const before = await countSourceRows(server);
    const sent = await deliver('note.create.command', { token: 'not the token at all, no' });
    expect(sent.status).toBe(401);
    expect(sent.body.code).toBe('unauthenticated');
    expect(await countSourceRows(server)).toEqual(before);
  });

  test('a signing token: Standard Webhooks signatures, with their time window', async () => {
    const body = await readSourceFixture('gitlab', 'merge_request.open');
    const id = randomUUID();
    const headers = {
      ...gitlabHeaders('merge_request', '', id),
      'X-Gitlab-Token': null,
      ...(await standardHeaders(body, signed.secret, id)),
    };
    const sent = await postToSource(server, 'lab-signed', body, headers, id);
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    const stale = await postToSource(
      server,
      'lab-signed',
      body,
      {
        ...headers,
        ...(await standardHeaders(body, signed.secret, id, new Date(Date.now() - 6 * 60_000))),
      },
      id,
    );
    expect(stale.status).toBe(401);
    expect(stale.body.error).toBe('webhook-timestamp is more than 5 minutes old');
  });
});

describe('GitLab disables hooks that answer 4xx: only authentication gets one', () => {
  test('a body that is not JSON, with the right token: 200, recorded unreadable', async () => {
    const sent = await deliver('note.create', { body: '{"object_kind": "note", ' });
    expect(sent.status).toBe(200);
    expect(await outcomeOf(server, 'lab', sent.id)).toMatchObject({
      disposition: 'unreadable',
      note: 'the body is not valid JSON',
      event: 'Note Hook',
      todo_id: null,
    });
  });

  test('no Idempotency-Key: X-Gitlab-Event-UUID stands for it', async () => {
    const payload = JSON.parse(await readSourceFixture('gitlab', 'pipeline.failed'));
    payload.object_attributes.id = 32;
    const headers: Record<string, string | null> = gitlabHeaders('pipeline', gitlab.secret);
    headers['Idempotency-Key'] = null;
    const uuid = headers['X-Gitlab-Event-UUID']!;
    const sent = await postToSource(server, 'lab', JSON.stringify(payload), headers, uuid);
    expect(sent.status).toBe(200);
    expect(await outcomeOf(server, 'lab', uuid)).toMatchObject({
      disposition: 'created',
      title: 'pipeline #32 failed on master in gitlab-org/gitlab-test',
    });
  });

  test('a retry carries the same Idempotency-Key: a duplicate', async () => {
    const payload = JSON.parse(await readSourceFixture('gitlab', 'merge_request.open'));
    payload.object_attributes.iid = 2;
    const body = JSON.stringify(payload);
    const first = await deliver('merge_request.open', { body });
    const retry = await deliver('merge_request.open', { body, id: first.id });
    expect(first.body.delivery.disposition).toBe('created');
    expect(retry.body.delivery).toMatchObject({ disposition: 'duplicate', note: null });
  });
});
