import { spawn } from 'node:child_process';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { freePort } from '../../src/platform/db/start-embedded-postgres.js';
import { createCliHome, parseJson, runCli, type CliHome } from '../cli/support/run-cli.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import {
  BOT_TOKEN,
  FAKE_SLACK_USER,
  SIGNING_SECRET,
  startFakeSlack,
  TEAM,
} from './support/fake-slack.js';

// The README's "Trying it offline": the fake Slack as a person uses it (`npm run fake-slack`),
// its page standing in for Slack's client — a code sent to the bot, a button pressed.
let server: TestServer;
let slack: Awaited<ReturnType<typeof startFakeSlack>>;
let home: CliHome;
let admin: Record<string, string>;
let page: string;

beforeAll(async () => {
  const port = await freePort();
  page = `http://127.0.0.1:${port}`;
  [server, home] = await Promise.all([
    startTestServer({ slack: { apiUrl: `${page}/api/`, sweepMs: 200 } }),
    createCliHome(),
  ]);
  slack = await startFakeSlack({ port, switchboardUrl: server.url });
  admin = { ...home.env, SWITCHBOARD_URL: server.url, SWITCHBOARD_TOKEN: server.adminToken };
});
afterAll(async () => {
  await server?.stop();
  await slack?.close();
  await home?.remove();
});

const form = (path: string, fields: Record<string, string>) =>
  fetch(`${page}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields),
    redirect: 'manual',
  });
const shown = async () => (await fetch(page)).text();

test('npm run fake-slack says what to set and run, and serves its page', async () => {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'test/slack/support/run-fake-slack.ts'],
    {
      env: { ...process.env, PORT: '0', SWITCHBOARD_URL: server.url },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  try {
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    await expect.poll(() => out, { timeout: 30_000 }).toContain('--wait 900');
    const at = /^A fake Slack is listening on (http:\S+) /m.exec(out)![1]!;
    expect(out).toContain(`SWITCHBOARD_SLACK_API_URL=${at}/api/ npm start`);
    expect(out).toContain(
      `switchboard slack add --bot-token ${BOT_TOKEN} --signing-secret ${SIGNING_SECRET}`,
    );
    expect(await (await fetch(at)).text()).toContain(`you are ${FAKE_SLACK_USER} in ${TEAM}`);
  } finally {
    child.kill('SIGTERM');
  }
});

test('offline, from slack add to Allow pressed on the fake Slack’s page', async () => {
  const added = await runCli(
    ['slack', 'add', '--bot-token', BOT_TOKEN, '--signing-secret', SIGNING_SECRET],
    admin,
  );
  expect(added.code, added.stderr).toBe(0);

  // The code `slack link` prints, sent to the bot from the page.
  const { code } = parseJson(await runCli(['slack', 'link', '--json'], admin)) as { code: string };
  expect((await form('/dm', { text: code })).status).toBe(303);
  await expect
    .poll(async () => parseJson(await runCli(['slack', 'show', '--json'], admin)).link)
    .toMatchObject({ slack_user_id: FAKE_SLACK_USER, team_id: TEAM });

  // The approval's message shows there, with its buttons; Allow decides it.
  const asked = await server.api(server.adminToken, 'POST', '/approvals', {
    question: 'Deploy build 4711 to production?',
  });
  expect(asked.status).toBe(201);
  const id = String(asked.body.todo.id);
  await expect.poll(shown).toContain('Deploy build 4711 to production?');
  const html = await shown();
  expect(html).toContain(`name="todo_id" value="${id}"`);
  expect(html).toMatch(/<button type="submit">Allow<\/button>/);
  const channel = /name="channel" value="([^"]+)"/.exec(html)![1]!;
  expect((await form('/press', { action_id: 'approval_allow', todo_id: id, channel })).status).toBe(
    303,
  );
  await expect
    .poll(async () => (await server.api(server.adminToken, 'GET', `/todos/${id}`)).body.todo)
    .toMatchObject({ verdict: 'allow' });
  // Its message is updated where it was: who decided, no buttons.
  await expect.poll(shown).not.toContain(`name="todo_id" value="${id}"`);
});
