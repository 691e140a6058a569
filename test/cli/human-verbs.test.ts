import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { deliver, readFixture } from '../github/deliver.js';
import { startTestServer, type TestServer } from '../support/test-server.js';
import { createCliHome, parseJson, runCli, type CliHome } from './support/run-cli.js';

let server: TestServer;
let home: CliHome;
/** The admin human, through the environment. */
let admin: Record<string, string>;
/** An agent working queue `issues`, owned by the admin. */
let agent: Record<string, string>;

beforeAll(async () => {
  [server, home] = await Promise.all([startTestServer(), createCliHome()]);
  admin = { ...home.env, SWITCHBOARD_URL: server.url, SWITCHBOARD_TOKEN: server.adminToken };
  const added = await server.api(server.adminToken, 'POST', '/agents', {
    name: 'verbs-agent',
    queues: ['issues', 'verbs-q'],
  });
  agent = { ...home.env, SWITCHBOARD_URL: server.url, SWITCHBOARD_TOKEN: added.body.token };
});
afterAll(async () => {
  await server?.stop();
  await home?.remove();
});

let comments = 0;
/**
 * A comment by a stranger (author association NONE), as GitHub delivers it: quarantined. Each
 * call is a different comment, so that no two deliveries carry the same body.
 */
async function quarantinedTodo(): Promise<number> {
  const payload = JSON.parse(await readFixture('issue_comment.created.untrusted'));
  payload.comment.id += ++comments;
  payload.comment.body = `${payload.comment.body} (${comments})`;
  const sent = await deliver(server.url, 'issue_comment.created.untrusted', {
    body: JSON.stringify(payload),
  });
  expect(sent.status).toBe(200);
  const [row] = await server.sql`
    select todo_id from deliveries where delivery_id = ${sent.id} and disposition = 'quarantined'`;
  expect(row?.todo_id).toBeTruthy();
  return Number(row!.todo_id);
}

const create = async (title: string) =>
  parseJson(
    await runCli(['todo', 'create', '--queue', 'verbs-q', '--title', title, '--json'], admin),
  ).todo as { id: number };

describe.concurrent('todo cancel', () => {
  test('cancels a pending todo with a reason; human line and --json', async () => {
    const { id } = await create('to cancel');
    const human = await runCli(['todo', 'cancel', String(id), '--reason', 'fixed upstream'], admin);
    expect(human).toMatchObject({ code: 0, stderr: '' });
    expect(human.stdout).toBe(`#${id} canceled on verbs-q — to cancel\n`);
    const { history } = parseJson(await runCli(['todo', 'show', String(id), '--json'], admin));
    expect(history.at(-1)).toMatchObject({
      action: 'canceled',
      data: { reason: 'fixed upstream' },
    });

    const other = await create('to cancel as json');
    const json = parseJson(await runCli(['todo', 'cancel', `#${other.id}`, '--json'], admin));
    expect(json).toEqual({ todo: expect.objectContaining({ id: other.id, state: 'canceled' }) });
  });

  test('refused (exit 3): by an agent, and for a todo already finished', async () => {
    const { id } = await create('not the agent’s to cancel');
    const byAgent = await runCli(['todo', 'cancel', String(id)], agent);
    expect(byAgent).toMatchObject({ code: 3, stdout: '' });
    expect(byAgent.stderr).toBe(
      'only a human may cancel a todo (an agent may withdraw an approval it asked for)\n',
    );
    await runCli(['todo', 'cancel', String(id)], admin);
    const again = await runCli(['todo', 'cancel', String(id)], admin);
    expect(again.code).toBe(3);
    expect(again.stderr).toMatch(/^todo #\d+ cannot be canceled: it /);
  });
});

describe.concurrent('quarantine', () => {
  test('list shows each quarantined todo with why; release lets agents work it', async () => {
    const id = await quarantinedTodo();
    const table = await runCli(['quarantine', 'list'], admin);
    expect(table.code).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID\s+QUEUE\s+FROM\s+SINCE\s+WHY\s+TITLE$/);
    expect(lines.find((line) => line.startsWith(`#${id} `))).toMatch(
      /^#\d+\s+issues\s+octo-stranger\s+\S+Z\s+octo-stranger \(author association NONE\) is not trusted\s+comment by/,
    );
    const json = parseJson(
      await runCli(['quarantine', 'list', '--queue', 'issues', '--json'], admin),
    );
    expect(json.todos.find((todo: { id: number }) => todo.id === id)).toMatchObject({
      state: 'quarantined',
      quarantine_reason: 'octo-stranger (author association NONE) is not trusted',
    });

    // The agent cannot see it, let alone release it.
    const byAgent = await runCli(['quarantine', 'release', String(id)], agent);
    expect(byAgent.code).toBe(3);
    const released = await runCli(['quarantine', 'release', String(id)], admin);
    expect(released).toMatchObject({ code: 0, stderr: '' });
    expect(released.stdout).toMatch(new RegExp(`^released #${id} pending on issues — comment by`));
    const claimed = parseJson(await runCli(['todo', 'claim', String(id), '--json'], agent));
    expect(claimed.todo).toMatchObject({ id, state: 'claimed', claimed_by: 'verbs-agent' });
    // Released, it is listed no more.
    const after = parseJson(await runCli(['quarantine', 'list', '--json'], admin));
    expect(after.todos.map((todo: { id: number }) => todo.id)).not.toContain(id);
  });

  test('cancel drops a quarantined todo, and refuses one that is not quarantined', async () => {
    const id = await quarantinedTodo();
    const canceled = parseJson(
      await runCli(['quarantine', 'cancel', String(id), '--reason', 'spam', '--json'], admin),
    );
    expect(canceled.todo).toMatchObject({ id, state: 'canceled', summary: 'spam' });

    const { id: pending } = await create('waits for an agent');
    const refused = await runCli(['quarantine', 'cancel', String(pending)], admin);
    expect(refused).toMatchObject({ code: 3, stdout: '' });
    expect(refused.stderr).toBe(
      `todo #${pending} is pending, not quarantined — 'switchboard todo cancel ${pending}' cancels it\n`,
    );
    const still = parseJson(await runCli(['todo', 'show', String(pending), '--json'], admin));
    expect(still.todo.state).toBe('pending');
  });

  test('regression: todo show says nothing about why a todo is quarantined', async () => {
    const id = await quarantinedTodo();
    const shown = await runCli(['todo', 'show', String(id)], admin);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(
      new RegExp(
        `\\n  quarantined: {3}octo-stranger \\(author association NONE\\) is not trusted — 'switchboard quarantine release ${id}' lets agents work it\\n`,
      ),
    );
  });

  test('an empty quarantine says so', async () => {
    const own = await startTestServer();
    try {
      const env = { ...home.env, SWITCHBOARD_URL: own.url, SWITCHBOARD_TOKEN: own.adminToken };
      expect(await runCli(['quarantine', 'list'], env)).toMatchObject({
        code: 0,
        stdout: 'nothing in quarantine\n',
      });
      expect(parseJson(await runCli(['quarantine', 'list', '--json'], env))).toEqual({ todos: [] });
    } finally {
      await own.stop();
    }
  });
});

describe.concurrent('human add and list', () => {
  test('an admin adds a human, whose token works once printed', async () => {
    const added = await runCli(['human', 'add', 'grace', '--github-login', 'grace-h'], admin);
    expect(added).toMatchObject({ code: 0, stderr: '' });
    const token = /token \(shown once — hand it over\): (\S+)/.exec(added.stdout)?.[1];
    expect(added.stdout).toMatch(/^added grace \(human\)\n/);
    expect(added.stdout).toContain(`switchboard login --url ${server.url} --token ${token}`);
    const grace = { ...home.env, SWITCHBOARD_URL: server.url, SWITCHBOARD_TOKEN: token! };
    expect((await runCli(['whoami'], grace)).stdout).toMatch(/^grace \(human\) on /);

    const json = parseJson(await runCli(['human', 'add', 'linus', '--admin', '--json'], admin));
    expect(json).toEqual({
      human: expect.objectContaining({ name: 'linus', kind: 'human', is_admin: true }),
      token: expect.stringMatching(/^sbk_/),
    });

    const table = await runCli(['human', 'list'], admin);
    expect(table.stdout).toMatch(/^NAME\s+ADMIN\s+GITHUB\s+CREATED\s+STATUS\n/);
    expect(table.stdout).toMatch(/\ngrace\s+no\s+grace-h\s+\S+Z\s+active\n/);
    expect(table.stdout).toMatch(/\nlinus\s+yes\s+\S+Z\s+active\n/);
    const listed = parseJson(await runCli(['human', 'list', '--json'], admin));
    expect(listed.humans.map((human: { name: string }) => human.name)).toEqual(
      expect.arrayContaining(['grace', 'linus']),
    );
    // Someone who is not an admin sees only themself, and may not add anyone (exit 3).
    const own = parseJson(await runCli(['human', 'list', '--json'], grace));
    expect(own.humans.map((human: { name: string }) => human.name)).toEqual(['grace']);
    const refused = await runCli(['human', 'add', 'mallory'], grace);
    expect(refused).toMatchObject({
      code: 3,
      stdout: '',
      stderr: 'only an admin may add humans\n',
    });
  });

  test('refused: a name taken, a login that is not one', async () => {
    const taken = await runCli(['human', 'add', 'verbs-agent'], admin);
    expect(taken.code).toBe(3);
    const bad = await runCli(['human', 'add', 'newbie', '--github-login', 'not a login'], admin);
    expect(bad.code).toBe(3);
    expect(bad.stderr).toMatch(/^not a GitHub login/);
  });
});

describe.concurrent('webhook set and remove', () => {
  test('set prints the secret once; set again replaces it; remove, then nothing to remove', async () => {
    const set = await runCli(['webhook', 'set', 'https://hooks.example.com/sb'], agent);
    expect(set).toMatchObject({ code: 0, stderr: '' });
    expect(set.stdout).toMatch(
      /^webhook set: https:\/\/hooks\.example\.com\/sb\n\nsigning secret \(shown once — keep it\): whsec_\S+\n$/,
    );
    const again = parseJson(
      await runCli(['webhook', 'set', 'https://hooks.example.net/sb2', '--json'], agent),
    );
    expect(again).toEqual({
      url: 'https://hooks.example.net/sb2',
      secret: expect.stringMatching(/^whsec_/),
    });
    const [row] =
      await server.sql`select url from consumer_webhooks where principal = 'verbs-agent'`;
    expect(row).toEqual({ url: 'https://hooks.example.net/sb2' });

    expect(await runCli(['webhook', 'remove'], agent)).toMatchObject({
      code: 0,
      stdout: 'webhook removed\n',
    });
    expect(parseJson(await runCli(['webhook', 'remove', '--json'], agent))).toEqual({
      removed: false,
    });
  });

  test('a URL that is not https, or names an address inside, is refused, exit 3', async () => {
    const refused = await runCli(['webhook', 'set', 'http://example.com/hook'], admin);
    expect(refused).toMatchObject({ code: 3, stdout: '' });
    expect(refused.stderr).toMatch(/^webhook url must be https/);
    const inside = await runCli(['webhook', 'set', 'https://169.254.169.254/'], admin);
    expect(inside).toMatchObject({ code: 3, stdout: '' });
    expect(inside.stderr).toBe(
      'webhook url is 169.254.169.254, a link-local address: switchboard sends only to public addresses unless SWITCHBOARD_OUTBOUND_ALLOW allows it\n',
    );
  });
});
