import nock from 'nock';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { FAKE } from '../support/fake-credentials.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { deliver, readFixture } from './deliver.js';
import {
  GITHUB_API,
  isolateFromGitHub,
  nockInstallationToken,
  nockNoRepositoryConfig,
  testAppCredentials,
} from './github-app.js';

const REPO = '/repos/Codertocat/Hello-World';

let server: TestServer;
let coder: string; // the human whose GitHub login is the fixtures' sender, Codertocat
let agent: string;

beforeAll(async () => {
  isolateFromGitHub();
  server = await startTestServer({
    github: testAppCredentials(),
    githubTuning: {
      writeBack: { pollIntervalMs: 25, retryBaseMs: 25, retryMaxMs: 100, maxAttempts: 3 },
    },
  });
  coder = (
    await server.api(server.adminToken, 'POST', '/humans', {
      name: 'coder',
      github_login: 'Codertocat',
    })
  ).body.token;
  await server.api(server.adminToken, 'POST', '/humans', { name: 'eve', github_login: 'eve-gh' });
  agent = (await server.api(coder, 'POST', '/agents', { name: 'bot', queues: ['issues'] })).body
    .token;
});
afterEach(() => {
  nock.cleanAll();
});
afterAll(async () => {
  await server.stop();
  nock.enableNetConnect();
});

function nockGitHub(): void {
  nockInstallationToken();
  nockNoRepositoryConfig();
  // The 👀 reactions every new comment todo asks for.
  nock(GITHUB_API)
    .persist()
    .post(/\/reactions$/)
    .reply(201, { id: 1, content: 'eyes' });
}

/** A real comment delivery (issue_comment.created.command) with its body, and maybe more, changed. */
async function comment(body: string, change: (payload: any) => void = () => {}) {
  const payload = JSON.parse(await readFixture('issue_comment.created.command'));
  payload.comment.body = body;
  change(payload);
  return deliver(server.url, 'issue_comment.created.command', { body: JSON.stringify(payload) });
}

const dispositionOf = async (deliveryId: string) =>
  (await server.sql`select disposition, note from deliveries where delivery_id = ${deliveryId}`)[0];

/** A todo from a comment on Codertocat/Hello-World#1, claimed by the agent, and its approval. */
async function approvalAboutIssueOne(): Promise<number> {
  const asked = await comment('/switchboard please rename the branch');
  expect(asked.status).toBe(200);
  const { body } = await server.api(coder, 'GET', '/todos?queue=issues');
  const work = body.todos.find((t: { title: string }) =>
    t.title.includes('please rename the branch'),
  );
  const approval = await server.api(agent, 'POST', '/approvals', {
    question: 'Force-push the renamed branch?',
    about_todo_id: work.id,
  });
  return approval.body.todo.id as number;
}

describe('`/approve N` and `/deny N` comments', () => {
  test('the human who owns the approval decides it from the issue the work came from', async () => {
    nockGitHub();
    const id = await approvalAboutIssueOne();
    const delivered = await comment(`/approve #${id} go ahead`);
    expect(delivered.status).toBe(200);
    expect(await dispositionOf(delivered.id)).toEqual({
      disposition: 'verdict',
      note: `approval #${id} approved by coder`,
    });
    const { body } = await server.api(coder, 'GET', `/todos/${id}`);
    expect(body.todo).toMatchObject({
      state: 'done',
      verdict: 'allow',
      decided_by: 'coder',
      summary: 'go ahead',
    });
    // The verdict is the last change a person made; the doorbell's own record of telling the
    // agent (or that nobody was told) may land after it, written by the delivery system.
    const approved = body.history.findIndex((e: { action: string }) => e.action === 'approved');
    expect(body.history[approved]).toMatchObject({
      actor: 'coder',
      actor_kind: 'human',
      via: 'github',
      action: 'approved',
    });
    const after = body.history.slice(approved + 1) as { actor_kind: string; action: string }[];
    for (const event of after)
      expect([event.actor_kind, event.action]).toEqual([
        'system',
        expect.stringMatching(/^(notified|wake_stored|rung)$/),
      ]);
    // A verdict comment is not work: no todo was made from it.
    expect(
      (await server.sql`select todo_id from deliveries where delivery_id = ${delivered.id}`)[0]!
        .todo_id,
    ).toBeNull();
  });

  test.each([
    [
      'from a GitHub user switchboard does not know',
      (p: any) => (p.sender.login = 'stranger'),
      /no switchboard human has the GitHub login stranger/,
    ],
    [
      'from a known human who may not decide it',
      (p: any) => (p.sender.login = 'eve-gh'),
      /is for coder to decide/,
    ],
    [
      'on another issue',
      (p: any) => (p.issue.number = 2),
      /is not about work from this issue or pull request/,
    ],
  ])('refused %s, and the approval still waits', async (_, change, reason) => {
    nockGitHub();
    const id = await approvalAboutIssueOne();
    const delivered = await comment(`/deny ${id}`, change);
    expect(delivered.status).toBe(200);
    const recorded = await dispositionOf(delivered.id);
    expect(recorded!.disposition).toBe('verdict_refused');
    expect(recorded!.note).toMatch(reason);
    expect((await server.api(coder, 'GET', `/todos/${id}`)).body.todo).toMatchObject({
      state: 'pending',
      verdict: null,
    });
  });

  test('a credential in the verdict’s note is withheld, and kept for whoever may read the approval', async () => {
    nockGitHub();
    const id = await approvalAboutIssueOne();
    const token = FAKE.githubClassic();
    const delivered = await comment(`/deny #${id} no: revoke ${token} first`);
    expect(await dispositionOf(delivered.id)).toMatchObject({ disposition: 'verdict' });
    const { body } = await server.api(coder, 'GET', `/todos/${id}`);
    expect(JSON.stringify(body)).not.toContain(token);
    const [, secretId] = /^no: revoke \[secret:([a-z2-9]{12})\] first$/.exec(body.todo.summary)!;
    const denied = body.history.find((e: { action: string }) => e.action === 'denied');
    expect(denied.data).toMatchObject({ note: body.todo.summary, withheld: 1 });
    const shown = await server.api(agent, 'GET', `/secrets/${secretId}`);
    expect(shown.body.secret).toMatchObject({ todo_id: id, value: token });
  });

  test('the first verdict wins: a second comment is refused with who decided', async () => {
    nockGitHub();
    const id = await approvalAboutIssueOne();
    await server.api(coder, 'POST', `/todos/${id}/deny`, { note: 'decided in the terminal' });
    const delivered = await comment(`/approve ${id}`);
    expect(await dispositionOf(delivered.id)).toMatchObject({
      disposition: 'verdict_refused',
      note: expect.stringMatching(/already decided: deny by coder/),
    });
  });
});

test("an agent's reply on a GitHub todo is posted on the issue, saying who wrote it", async () => {
  nockGitHub();
  const posted: { body: string }[] = [];
  nock(GITHUB_API)
    .post(`${REPO}/issues/1/comments`, (body: { body: string }) => {
      posted.push(body);
      return true;
    })
    .reply(201, { id: 99 });
  await comment('/switchboard what does the README say?');
  const { body } = await server.api(coder, 'GET', '/todos?queue=issues');
  const work = body.todos.find((t: { title: string }) =>
    t.title.includes('what does the README say'),
  );
  const replied = await server.api(agent, 'POST', `/todos/${work.id}/reply`, {
    text: 'It says "Helo". Fixing it.',
  });
  expect(replied.status).toBe(200);
  await expect.poll(() => posted.length).toBe(1);
  expect(posted[0]!.body).toBe(
    `It says "Helo". Fixing it.\n\n<sub>reply from bot (agent) on switchboard todo #${work.id}</sub>`,
  );
  const history = (await server.api(coder, 'GET', `/todos/${work.id}`)).body.history;
  expect(history.find((e: { action: string }) => e.action === 'replied')).toMatchObject({
    actor: 'bot',
    data: { text: 'It says "Helo". Fixing it.' },
  });
});
