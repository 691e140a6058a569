import { afterAll, beforeAll, expect, test } from 'vitest';
import { deliver, readFixture } from '../github/deliver.js';
import { startClaudeCode, type ClaudeCode } from '../support/claude-code-client.js';
import { startTestServer, type TestServer } from '../support/test-server.js';

let a: TestServer;
let b: TestServer;
let claude: ClaudeCode;
let coder: string;

beforeAll(async () => {
  // Two server processes on one database: GitHub delivers to A, Claude Code's channel is on B.
  a = await startTestServer();
  b = await startTestServer({ schema: a.schema });
  coder = (
    await a.api(a.adminToken, 'POST', '/humans', { name: 'coder', github_login: 'Codertocat' })
  ).body.token;
  const agent = (await a.api(coder, 'POST', '/agents', { name: 'bot', queues: ['issues'] })).body
    .token;
  claude = await startClaudeCode({ SWITCHBOARD_URL: b.url, SWITCHBOARD_TOKEN: agent });
});
afterAll(async () => {
  await claude?.close();
  await b.stop();
  await a.stop();
});

test('a signed GitHub comment wakes Claude Code; its permission prompt is approved by a GitHub comment', async () => {
  await expect
    .poll(
      async () =>
        (await a.sql`select count(*) as n from consumer_sessions where path = 'channel'`)[0]!.n,
    )
    .toBe(1);
  // 1. A maintainer asks for work in an issue comment: GitHub delivers it to process A.
  const asked = await deliver(a.url, 'issue_comment.created.command');
  expect(asked.status).toBe(200);
  await expect.poll(() => claude.events.length).toBe(1);
  const [wake] = claude.events;
  expect(wake!.meta).toMatchObject({
    event: 'claimable',
    queue: 'issues',
    kind: 'github.issue_comment.created',
  });
  expect(wake!.meta.url).toMatch(/^https:\/\/github\.com\/Codertocat\/Hello-World\/issues\/1/);
  expect(wake!.content).toMatch(
    new RegExp(`^switchboard: todo #${wake!.meta.todo_id} on issues — `),
  );
  const todoId = Number(wake!.meta.todo_id);

  // 2. Claude takes it through the channel's tools (served by B, recorded as via channel).
  const claimed = await claude.call('claim_todo', { todo_id: todoId });
  expect(claimed.isError).toBeFalsy();

  // 3. Claude Code needs permission for a tool: the prompt becomes an approval for coder,
  //    about the todo being worked.
  await claude.askPermission({
    request_id: 'hjkmn',
    tool_name: 'Bash',
    description: 'Run the test suite',
    input_preview: '{"command":"npm test"}',
  });
  let approvalId = 0;
  await expect
    .poll(async () => {
      const { body } = await a.api(coder, 'GET', '/todos?mine=true');
      approvalId =
        body.todos.find((t: { request_id: string }) => t.request_id === 'hjkmn')?.id ?? 0;
      return approvalId;
    })
    .toBeGreaterThan(0);
  expect((await a.api(coder, 'GET', `/todos/${approvalId}`)).body.todo).toMatchObject({
    about_todo_id: todoId,
    assignee: 'coder',
  });

  // 4. coder answers on GitHub, in the same issue: `/approve N`, signed, delivered to A.
  const payload = JSON.parse(await readFixture('issue_comment.created.command'));
  payload.comment.body = `/approve ${approvalId}`;
  const verdict = await deliver(a.url, 'issue_comment.created.command', {
    body: JSON.stringify(payload),
  });
  expect(verdict.status).toBe(200);

  // 5. The verdict reaches the Claude Code session on B.
  await expect.poll(() => claude.verdicts).toEqual([{ request_id: 'hjkmn', behavior: 'allow' }]);
  expect(claude.errors).toEqual([]);
});
